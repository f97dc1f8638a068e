# expect: solution
"""Count lattice points on a segment; the reference solution forgets one endpoint."""

from __future__ import annotations

from math import gcd

from spade_envs import TextEnv, answers_match, boxed


class LatticePoints(TextEnv):
    skill = "math"
    description = (
        "Count the points with integer coordinates on the line segment between two given "
        "integer points, endpoints included. Reply in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.a = (self.rng.randint(-20, 20), self.rng.randint(-20, 20))
        while True:
            self.b = (self.rng.randint(-20, 20), self.rng.randint(-20, 20))
            if self.b != self.a:
                break
        dx, dy = abs(self.b[0] - self.a[0]), abs(self.b[1] - self.a[1])
        self.answer = gcd(dx, dy) + 1
        return (
            f"How many integer points lie on the segment from {self.a} to {self.b}, "
            "endpoints included? Reply with \\boxed{count}."
        )

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "The count is gcd(|dx|, |dy|) plus something for the endpoints."

    def solution(self) -> list[str]:
        dx, dy = abs(self.b[0] - self.a[0]), abs(self.b[1] - self.a[1])
        return [boxed(gcd(dx, dy))]
