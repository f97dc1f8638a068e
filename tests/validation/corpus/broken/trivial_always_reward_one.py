# expect: trivial
"""Sum the digits of a number; the grader rewards every reply."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed


class DigitSum(TextEnv):
    skill = "math"
    description = (
        "Reply with the sum of the decimal digits of a large number, in \\boxed{}. One "
        "answer ends the episode."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.number = self.rng.randint(10**11, 10**12 - 1)
        self.answer = sum(int(d) for d in str(self.number))
        return f"What is the sum of the digits of {self.number}? Reply with \\boxed{{sum}}."

    def _step(self, action: str):
        correct = answers_match(action, self.answer)
        reward = 1.0 if correct is not None else 0.0
        verdict = "Correct." if correct else f"The digit sum is {self.answer}."
        return verdict, reward, True

    def hint(self) -> str:
        return f"The digits are {', '.join(str(self.number))}; add them one by one."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
