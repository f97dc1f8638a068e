# expect: hint_leak
"""Multiply two two-digit numbers; the hint's worked example ends with the product."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed


class LongMultiply(TextEnv):
    skill = "math"
    description = (
        "Multiply two two-digit numbers without a calculator and reply with the product in "
        "\\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.a, self.b = self.rng.randint(12, 99), self.rng.randint(12, 99)
        self.product = self.a * self.b
        return f"What is {self.a} x {self.b}? Reply with \\boxed{{product}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.product):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        tens, ones = divmod(self.b, 10)
        return (
            f"Split {self.b} into {tens * 10} + {ones}: {self.a} x {tens * 10} = "
            f"{self.a * tens * 10}, {self.a} x {ones} = {self.a * ones}, total {self.product}."
        )

    def solution(self) -> list[str]:
        return [boxed(self.product)]
