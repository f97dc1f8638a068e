# expect: fuzz
"""Factor-count quiz; an ASCII digit check lets a 5,000-digit answer reach int()."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer


class DivisorCount(TextEnv):
    skill = "math"
    description = (
        "Count the positive divisors of a number below 1000 and reply with the count in "
        "\\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.n = self.rng.randint(100, 999)
        self.count = sum(1 for d in range(1, self.n + 1) if self.n % d == 0)
        return f"How many positive divisors does {self.n} have? Reply with \\boxed{{count}}."

    def _step(self, action: str):
        answer = extract_answer(action)
        left = self.max_turns - self.turn
        if not (answer.isascii() and answer.isdigit()):
            return f"Reply with a whole number. Attempts left: {left}.", 0.0, left == 0
        if int(answer) == self.count:
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Factor the number into primes and multiply (exponent + 1) over the primes."

    def solution(self) -> list[str]:
        return [boxed(self.count)]
