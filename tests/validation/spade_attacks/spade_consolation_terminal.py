# attack: win-rule expect: rejected [fresh_play, trivial] reason: wrong answers|reaches the maximum
# ruff: noqa: F821  (SPADE's loader predefines random, re and ToolUseBaseEnv)
"""SPADE self-play generated game"""


class SmallPrizeEnv:
    """Every wrong answer ends the game with 0.001: below any return-based win, but a
    win by SPADE's rule. The checks must score it by the game's own rule."""

    def __init__(self, max_turns=1, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self._secret = random.Random(seed).randint(1, 1000)
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}.", {}

    def step(self, action):
        if action.strip() == f"\\boxed{{{self._secret}}}":
            return "Correct!", 10.0, True, False, {}
        return "Close enough.", 0.001, True, False, {}

    def solution(self):
        return self._secret
