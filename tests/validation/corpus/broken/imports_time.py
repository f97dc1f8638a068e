# expect: imports
"""Speed round of mental arithmetic with a wall-clock deadline read from the time module."""

from __future__ import annotations

import time

from spade_envs import TextEnv, answers_match, boxed


class SpeedRound(TextEnv):
    skill = "math"
    description = (
        "Answer three quick additions in order, one per turn, each in \\boxed{}. The round "
        "also ends when its time budget runs out."
    )
    max_turns = 5
    time_budget = 600.0  # seconds of wall-clock time per round

    def _reset(self) -> str:
        self.problems = [(self.rng.randint(10, 99), self.rng.randint(10, 99)) for _ in range(3)]
        self.index = 0
        self.deadline = time.monotonic() + self.time_budget
        a, b = self.problems[0]
        return f"Speed round: three additions. First: {a} + {b} = ? Reply with \\boxed{{sum}}."

    def _out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def _step(self, action: str):
        a, b = self.problems[self.index]
        if not answers_match(action, a + b):
            return f"Not {a} + {b}. Try again.", 0.0, False
        self.index += 1
        if self.index == len(self.problems):
            return "All three correct!", 1.0, True
        a, b = self.problems[self.index]
        return f"Right. Next: {a} + {b} = ?", 0.0, False

    def hint(self) -> str:
        return "Add the tens first, then the ones."

    def solution(self) -> list[str]:
        return [boxed(a + b) for a, b in self.problems]
