# expect: check_env
"""Guess a hidden number; step follows the old Gym API and returns a 4-tuple."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class OldApiGuess(TextEnv):
    skill = "math"
    description = (
        "A whole number from 1 to 40 is hidden. Guess it in \\boxed{}; the reply says "
        "higher or lower. Six guesses."
    )
    max_turns = 6

    def _reset(self) -> str:
        self.secret = self.rng.randint(1, 40)
        return "Guess my number from 1 to 40 with \\boxed{n}. You have 6 guesses."

    def _step(self, action: str):
        value = parse_number(extract_answer(action))
        if value is not None and value == self.secret:
            return f"Correct, it is {self.secret}.", 1.0, True
        if value is None:
            return "That is not a number.", 0.0, False
        return ("Higher." if value < self.secret else "Lower."), 0.0, False

    def step(self, action: str):
        observation, reward, terminated, truncated, info = super().step(action)
        done = terminated or truncated
        return observation, reward, done, info

    def hint(self) -> str:
        return f"The number is {'even' if self.secret % 2 == 0 else 'odd'}."

    def solution(self) -> list[str]:
        low, high, guesses = 1, 40, []
        while True:
            mid = (low + high) // 2
            guesses.append(boxed(mid))
            if mid == self.secret:
                return guesses
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)
