# expect: fuzz
"""Guess a hidden number; guesses outside the range get a negative reward from _step."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class FrugalGuess(TextEnv):
    skill = "math"
    description = (
        "A whole number from 1 to 50 is hidden. Guess it in \\boxed{}; the reply says "
        "higher or lower. Guesses outside 1-50 are penalised."
    )
    max_turns = 7
    out_of_range_penalty = 0.5

    def _reset(self) -> str:
        self.secret = self.rng.randint(1, 50)
        return "Guess my number from 1 to 50 with \\boxed{n}. You have 7 guesses."

    def _step(self, action: str):
        value = parse_number(extract_answer(action))
        if value is None:
            return "That is not a number.", 0.0, False
        if not 1 <= value <= 50:
            return "Out of range: the number is from 1 to 50.", -self.out_of_range_penalty, False
        if value == self.secret:
            return f"Correct, it is {self.secret}.", 1.0, True
        return ("Higher." if value < self.secret else "Lower."), 0.0, False

    def hint(self) -> str:
        return f"The number is {'even' if self.secret % 2 == 0 else 'odd'}."

    def solution(self) -> list[str]:
        low, high, guesses = 1, 50, []
        while True:
            mid = (low + high) // 2
            guesses.append(boxed(mid))
            if mid == self.secret:
                return guesses
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)
