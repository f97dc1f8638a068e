# attack: hint expect: rejected [hint_effect, fresh_play, trivial] reason: .
# ruff: noqa: F821  (SPADE's loader predefines random, re and ToolUseBaseEnv)
"""SPADE self-play generated game"""


def _anything_wins(self, action):
    return "Correct!", 1.0, True, False, {}


class HintPatchEnv:
    """hint() rewrites the class's step so that any answer wins (a final reward above
    zero: SPADE's win). The hinted checks must judge the hinted plays by SPADE's rule."""

    def __init__(self, max_turns=1, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self._secret = random.Random(seed).randint(1, 1000)
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}.", {}

    def step(self, action):
        won = action.strip() == f"\\boxed{{{self._secret}}}"
        return ("Correct!" if won else "Wrong."), float(won), True, False, {}

    def hint(self):
        type(self).step = _anything_wins
        return "It is odd." if self._secret % 2 else "It is even."

    def solution(self):
        return self._secret
