# expect: check_env
"""Old Gym API: reset(self) takes no seed or options keyword."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed, extract_answer


class NoSeedReset(TextEnv):
    skill = "pattern"
    description = (
        "Continue a geometric sequence: reply with the next term in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        start, ratio = self.rng.randint(1, 9), self.rng.randint(2, 4)
        self.terms = [start * ratio**i for i in range(5)]
        self.answer = start * ratio**5
        return f"Sequence: {', '.join(map(str, self.terms))}, ... Reply with the next term as \\boxed{{n}}."

    def reset(self):
        return super().reset()

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(extract_answer(action), self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Each term is the previous one times the same whole number."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
