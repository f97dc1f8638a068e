# expect: load
"""Prime-table quiz; the module-level prime sieve forgets to advance its counter."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed


def _is_prime(k: int) -> bool:
    return k > 1 and all(k % d for d in range(2, int(k**0.5) + 1))


_PRIMES: list[int] = []
_candidate = 1
while len(_PRIMES) < 50:
    if _is_prime(_candidate):
        _PRIMES.append(_candidate)
        _candidate += 1


class NthPrime(TextEnv):
    skill = "math"
    description = "Reply with the n-th prime number (2 is the first) in \\boxed{}. Two attempts."
    max_turns = 2

    def _reset(self) -> str:
        self.n = self.rng.randint(10, 50)
        self.answer = _PRIMES[self.n - 1]
        return f"What is prime number {self.n} (2 is number 1)? Reply with \\boxed{{p}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return f"Prime number {self.n - 1} is {_PRIMES[self.n - 2]}; find the next one."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
