# expect: valid
"""Balance a chemical-style equation of coin stacks. SPADE-format: a duck-typed ``*Env``
with ``reset``/``step`` and ``solution()`` but no ``hint()``, as SPADE's designers write
them (the hint is written by a model later, or there is none)."""

import random


class CoinStackEnv:
    max_turns = 4

    def __init__(self):
        self.done = True

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.left = [rng.randint(2, 9) for _ in range(3)]
        self.target = sum(self.left) + rng.randint(1, 9)
        self.done = False
        self.turn = 0
        return (
            f"Stacks of {self.left[0]}, {self.left[1]} and {self.left[2]} coins. How many coins "
            f"must be added to reach exactly {self.target}? Answer as \\boxed{{n}}."
        ), {}

    def step(self, action):
        if self.done:
            return "Over.", 0.0, True, False, {}
        self.turn += 1
        answer = str(action).strip()
        missing = self.target - sum(self.left)
        if answer == "\\boxed{" + str(missing) + "}":
            self.done = True
            return "Exactly right.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            self.done = True
            return "Out of turns.", 0.0, False, True, {}
        return "Not quite; count again.", 0.0, False, False, {}

    def solution(self):
        return ["\\boxed{" + str(self.target - sum(self.left)) + "}"]
