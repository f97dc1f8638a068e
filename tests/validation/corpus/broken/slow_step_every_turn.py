# expect: fresh_play keep every call under
"""Check a proposed prime; the checker 'warms up' with a long busy loop on every step."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class NextPrime(TextEnv):
    skill = "math"
    description = (
        "Given a number N, reply with the smallest prime strictly greater than N in "
        "\\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.n = self.rng.randint(100, 5000)
        candidate = self.n + 1
        while not self._is_prime(candidate):
            candidate += 1
        self.answer = candidate
        return f"What is the smallest prime greater than {self.n}? Reply with \\boxed{{p}}."

    @staticmethod
    def _is_prime(k: int) -> bool:
        return k > 1 and all(k % d for d in range(2, int(k**0.5) + 1))

    def _step(self, action: str):
        # Stress the checker the same way on every turn (sum of squares as a checksum).
        checksum = sum(i * i for i in range(40_000_000)) % 97
        value = parse_number(extract_answer(action))
        left = self.max_turns - self.turn
        if value is not None and value == self.answer:
            return f"Correct (check {checksum}).", 1.0, True
        return f"Not the right prime. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return f"The gap after {self.n} to the next prime is at most {self.answer - self.n + 3}."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
