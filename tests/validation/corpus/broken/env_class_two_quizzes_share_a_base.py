# expect: env_class
"""A shared quiz base class with two concrete quizzes in one module: two environment classes."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed


class QuizBase(TextEnv):
    """Shared plumbing for one-question quizzes."""

    max_turns = 2

    def _question(self) -> tuple[str, str]:
        raise NotImplementedError

    def _reset(self) -> str:
        self.question, self.answer = self._question()
        return f"{self.question} Reply with \\boxed{{answer}}. Two attempts."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Work it out step by step."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]


class RemainderQuiz(QuizBase):
    skill = "math"
    description = (
        "Reply with the remainder of a large number divided by a small one, in \\boxed{}. "
        "Two attempts."
    )

    def _question(self) -> tuple[str, str]:
        n, d = self.rng.randint(10**6, 10**7), self.rng.randint(7, 19)
        return f"What is the remainder of {n} divided by {d}?", str(n % d)


class DivisibilityQuiz(QuizBase):
    skill = "math"
    description = (
        "Reply with how many of the numbers 1 to N are divisible by a given small number, "
        "in \\boxed{}. Two attempts."
    )

    def _question(self) -> tuple[str, str]:
        n, d = self.rng.randint(100, 999), self.rng.randint(3, 13)
        return f"How many of the numbers 1 to {n} are divisible by {d}?", str(n // d)
