# expect: fuzz
"""Guess a hidden number; when the guesses run out, step returns the number itself as the observation."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class RevealGuess(TextEnv):
    skill = "math"
    description = (
        "A whole number from 1 to 30 is hidden. Guess it in \\boxed{}; the reply says "
        "higher or lower. Five guesses; when they run out the number is revealed."
    )
    max_turns = 5

    def _reset(self) -> str:
        self.secret = self.rng.randint(1, 30)
        return "Guess my number from 1 to 30 with \\boxed{n}. You have 5 guesses."

    def _step(self, action: str):
        value = parse_number(extract_answer(action))
        if value is not None and value == self.secret:
            return f"Correct, it is {self.secret}.", 1.0, True
        if value is None:
            return "That is not a number.", 0.0, False
        return ("Higher." if value < self.secret else "Lower."), 0.0, False

    def step(self, action: str):
        observation, reward, terminated, truncated, info = super().step(action)
        if truncated:
            observation = self.secret  # reveal the answer
        return observation, reward, terminated, truncated, info

    def hint(self) -> str:
        return f"The number is {'even' if self.secret % 2 == 0 else 'odd'}."

    def solution(self) -> list[str]:
        low, high, guesses = 1, 30, []
        while True:
            mid = (low + high) // 2
            guesses.append(boxed(mid))
            if mid == self.secret:
                return guesses
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)
