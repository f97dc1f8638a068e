# attack: seedless expect: neutralized
# ruff: noqa: F821  (SPADE's loader predefines random, re and ToolUseBaseEnv)
"""SPADE's dialect: any answer wins after ``reset(seed=None)`` (validation always seeds;
``make_vec`` autoresets and a bare ``reset()`` may not). The adapter passes SPADE's seed
through, so the game would see None if the door let one through; every reset through the
door carries an int (a seedless one is drawn in the parent), so it never does."""


class UnseededEnv:
    def __init__(self, max_turns=1, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self._unseeded = seed is None
        self._secret = random.Random(seed).randint(1, 1000)
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}.", {}

    def step(self, action):
        won = self._unseeded or action.strip() == f"\\boxed{{{self._secret}}}"
        return ("Correct!" if won else "Wrong."), float(won), True, False, {}

    def solution(self):
        return self._secret
