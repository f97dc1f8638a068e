# expect: determinism
"""Guess a hidden number; consecutive episodes are kept apart by an episode counter."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class FreshNumber(TextEnv):
    skill = "math"
    description = (
        "A whole number from 1 to 100 is hidden. Guess it in \\boxed{}; the reply says "
        "higher or lower. Eight guesses are enough for binary search."
    )
    max_turns = 8
    episodes_started = 0  # shared by every instance: no two episodes use the same number

    def _reset(self) -> str:
        FreshNumber.episodes_started += 1
        self.secret = (self.rng.randint(0, 99) + 37 * FreshNumber.episodes_started) % 100 + 1
        return (
            "I am thinking of a whole number from 1 to 100. You have 8 guesses. Answer each "
            "turn with \\boxed{your guess}."
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
        return f"The number leaves remainder {self.secret % 3} when divided by 3."

    def solution(self) -> list[str]:
        low, high, guesses = 1, 100, []
        while True:
            mid = (low + high) // 2
            guesses.append(boxed(mid))
            if mid == self.secret:
                return guesses
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)
