# expect: imports
"""Evaluate a statistics question; the statistics module is imported lazily via importlib."""

from __future__ import annotations

from importlib import import_module

from spade_envs import TextEnv, answers_match, boxed


class MedianQuiz(TextEnv):
    skill = "math"
    description = (
        "Reply with the median of a list of whole numbers in \\boxed{} (a decimal such as "
        "12.5 when the count is even). Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        statistics = import_module("statistics")
        self.values = [self.rng.randint(1, 99) for _ in range(self.rng.randint(5, 10))]
        self.answer = statistics.median(self.values)
        return f"Values: {', '.join(map(str, self.values))}. Reply with the median as \\boxed{{m}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Sort the values first; with an even count, average the middle two."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
