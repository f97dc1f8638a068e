# expect: solution
"""Hidden number search whose reference solution counts up from 1 (longer than max_turns)."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class SlowCount(TextEnv):
    skill = "math"
    description = (
        "A whole number from 1 to 100 is hidden. Guess it in \\boxed{}; the reply says "
        "higher or lower. Seven guesses: binary search needs them all."
    )
    max_turns = 7

    def _reset(self) -> str:
        self.secret = self.rng.randint(1, 100)
        return "Guess my number from 1 to 100 with \\boxed{n}. You have 7 guesses."

    def _step(self, action: str):
        value = parse_number(extract_answer(action))
        if value is not None and value == self.secret:
            return f"Correct, it is {self.secret}.", 1.0, True
        if value is None:
            return "That is not a number.", 0.0, False
        return ("Higher." if value < self.secret else "Lower."), 0.0, False

    def hint(self) -> str:
        return f"The number is {'even' if self.secret % 2 == 0 else 'odd'}."

    def solution(self) -> list[str]:
        # Try every number in turn until the right one.
        return [boxed(n) for n in range(1, self.secret + 1)]
