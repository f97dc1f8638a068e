# expect: check_env
"""Old Gym API: the overridden reset returns only the observation, not (obs, info)."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed


class OldResetQuiz(TextEnv):
    skill = "math"
    description = (
        "Reply with the least common multiple of two whole numbers in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        from math import lcm

        self.a, self.b = self.rng.randint(4, 30), self.rng.randint(4, 30)
        self.answer = lcm(self.a, self.b)
        return f"What is lcm({self.a}, {self.b})? Reply with \\boxed{{m}}."

    def reset(self, *, seed=None, options=None):
        observation, _info = super().reset(seed=seed, options=options)
        return observation

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "lcm(a, b) = a * b / gcd(a, b)."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
