# expect: determinism
"""Guess a hidden number with higher/lower feedback."""

from __future__ import annotations

import random

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class HigherLower(TextEnv):
    skill = "math"
    description = (
        "A whole number from 1 to 100 is hidden. Each turn guess it in \\boxed{}; the reply "
        "says whether the hidden number is higher or lower. Binary search wins in time."
    )
    max_turns = 8
    knobs = {"upper": 100}

    def _reset(self) -> str:
        # Pick the hidden number.
        self.secret = random.randint(1, self.upper)
        return (
            f"I am thinking of a whole number from 1 to {self.upper}. You have "
            f"{self.max_turns} guesses. Answer each turn with \\boxed{{your guess}}."
        )

    def _step(self, action: str):
        value = parse_number(extract_answer(action))
        left = self.max_turns - self.turn
        if value is None or value != int(value):
            return f"That is not a whole number. Guesses left: {left}.", 0.0, False
        guess = int(value)
        if guess == self.secret:
            return f"Correct, the number is {guess}!", 1.0, True
        direction = "Higher" if guess < self.secret else "Lower"
        if left == 0:
            return f"{direction}. No guesses left: the number was {self.secret}.", 0.0, False
        return f"{direction} than {guess}. Guesses left: {left}.", 0.0, False

    def hint(self) -> str:
        parity = "even" if self.secret % 2 == 0 else "odd"
        half = "upper" if self.secret > self.upper // 2 else "lower"
        return f"The number is {parity} and lies in the {half} half of the range."

    def solution(self) -> list[str]:
        low, high, guesses = 1, self.upper, []
        while True:
            mid = (low + high) // 2
            guesses.append(boxed(mid))
            if mid == self.secret:
                return guesses
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)
