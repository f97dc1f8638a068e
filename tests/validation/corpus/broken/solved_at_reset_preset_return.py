# expect: solved_at_reset
"""Guess a hidden number; reset starts the score at full marks, so the episode counts as won."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class FullMarksGuess(TextEnv):
    skill = "math"
    description = (
        "A whole number from 1 to 64 is hidden. Guess it in \\boxed{}; the reply says "
        "higher or lower. Seven guesses."
    )
    max_turns = 7

    def _reset(self) -> str:
        self.secret = self.rng.randint(1, 64)
        self.episode_return = 1.0  # start with full marks; mistakes are reported in the text
        return "Guess my number from 1 to 64 with \\boxed{n}. You have 7 guesses."

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
        low, high, guesses = 1, 64, []
        while True:
            mid = (low + high) // 2
            guesses.append(boxed(mid))
            if mid == self.secret:
                return guesses
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)
