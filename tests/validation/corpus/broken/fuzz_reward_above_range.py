# expect: fuzz reward
"""Count the days between two dates; the answer is scored by closeness."""

from __future__ import annotations

import datetime

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class DayCount(TextEnv):
    skill = "math"
    description = (
        "Two calendar dates are given. Reply with the number of days from the first to the "
        "second in \\boxed{}. One answer; the score is 1 for the exact count and less the "
        "further off the answer is."
    )
    max_turns = 1

    def _reset(self) -> str:
        start = datetime.date(2000, 1, 1) + datetime.timedelta(days=self.rng.randint(0, 9000))
        self.first = start
        self.second = start + datetime.timedelta(days=self.rng.randint(20, 400))
        self.days = (self.second - self.first).days
        return (
            f"How many days are there from {self.first.isoformat()} to "
            f"{self.second.isoformat()}? Reply with \\boxed{{days}}."
        )

    def step(self, action: str):
        if self._ended is not None:
            return self._last_observation, 0.0, True, False, {"turn": self.turn}
        self.turn += 1
        value = parse_number(extract_answer(action if isinstance(action, str) else ""))
        # relative error of the answer (capped at 1); -1 marks "no answer given"
        error = float(min(abs(value - self.days) / self.days, 1)) if value is not None else -1.0
        reward = 1.0 if error == 0 else max(0.0, 1.0 - error)
        if value is None:
            observation = "No number found in your answer."
        else:
            observation = f"You said {str(value)[:24]}; the exact count is {self.days}."
        self.episode_return += reward
        self._ended = (True, False)
        self._last_observation = observation
        return observation, reward, True, False, {"turn": self.turn}

    def hint(self) -> str:
        return "Count the days left in the first month, then add whole months and the rest."

    def solution(self) -> list[str]:
        return [boxed(self.days)]
