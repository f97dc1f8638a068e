# attack: hint expect: neutralized
# ruff: noqa: F821  (SPADE's loader predefines random, re and ToolUseBaseEnv)
"""SPADE's dialect: ``hint()`` rewrites the game class's ``step`` for the whole process
so that any answer wins (with SPADE's win: a positive final reward), and moves the secret
before naming it. Through the door the hint comes from a twin in another worker: the
played episode is untouched."""


def _anything_wins(self, action):
    return "Correct!", 1.0, True, False, {}


class HintPatchEnv:
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
        self._secret = 7
        return "It is 7."

    def solution(self):
        return self._secret
