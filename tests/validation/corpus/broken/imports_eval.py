# expect: imports
"""Evaluate an arithmetic expression with precedence; the answer key uses eval()."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed


class Precedence(TextEnv):
    skill = "math"
    description = (
        "Evaluate an integer arithmetic expression using the usual operator precedence and "
        "reply with the value in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        parts = [str(self.rng.randint(2, 12))]
        for _ in range(4):
            parts += [self.rng.choice(["+", "-", "*"]), str(self.rng.randint(2, 12))]
        self.expression = " ".join(parts)
        self.answer = eval(self.expression)
        return f"Evaluate: {self.expression}. Reply with \\boxed{{value}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Do every multiplication first, then add and subtract left to right."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
