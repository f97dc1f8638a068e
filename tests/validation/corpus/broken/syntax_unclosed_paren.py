# expect: syntax
"""Guess a hidden number; a parenthesis is never closed."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class BrokenGuess(TextEnv):
    skill = "math"
    description = (
        "A whole number from 1 to 100 is hidden. Guess it in \\boxed{}; the reply says "
        "higher or lower. Eight guesses."
    max_turns = 8

    def _reset(self) -> str:
        self.secret = self.rng.randint(1, 100)
        return "Guess my number from 1 to 100 with \\boxed{n}."

    def _step(self, action: str):
        value = parse_number(extract_answer(action))
        if value is not None and value == self.secret:
            return "Correct.", 1.0, True
        return ("Higher." if value is not None and value < self.secret else "Lower."), 0.0, False

    def hint(self) -> str:
        return f"The number is {'even' if self.secret % 2 == 0 else 'odd'}."

    def solution(self) -> list[str]:
        low, high, guesses = 1, 100, []
        while True:
            mid = (low + high) // 2
            guesses.append(boxed(mid))
            if mid == self.secret:
                return guesses
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)
