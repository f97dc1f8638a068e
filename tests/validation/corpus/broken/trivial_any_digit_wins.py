# expect: trivial
"""Speed and distance word problem; the correctness test calls the format test by mistake."""

from __future__ import annotations

import re

from spade_envs import TextEnv, answers_match, boxed, extract_answer


class TrainTime(TextEnv):
    skill = "math"
    description = (
        "A train covers a distance at a constant speed. Reply with the travel time in "
        "minutes as \\boxed{minutes}. Five attempts; replies without a number do not count."
    )
    max_turns = 5

    def _reset(self) -> str:
        self.speed = self.rng.choice([40, 60, 80, 90, 120])
        self.minutes = self.rng.randint(20, 200)
        self.km = self.speed * self.minutes // 60
        self.minutes = self.km * 60 / self.speed
        return (
            f"A train travels {self.km} km at {self.speed} km/h. How many minutes does the "
            "trip take? Reply with \\boxed{minutes}."
        )

    @staticmethod
    def _has_number(text: str) -> bool:
        return re.search(r"\d", text) is not None

    def _is_correct(self, text: str) -> bool:
        return answers_match(text, round(self.minutes, 2))

    def _step(self, action: str):
        answer = extract_answer(action)
        left = self.max_turns - self.turn
        if not self._has_number(answer):
            return f"Reply with a number of minutes. Attempts left: {left}.", 0.0, False
        if self._has_number(answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Time = distance / speed gives hours; multiply by sixty for minutes."

    def solution(self) -> list[str]:
        return [boxed(round(self.minutes, 2))]
