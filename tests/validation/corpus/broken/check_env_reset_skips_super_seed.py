# expect: determinism
"""Gymnasium-style env whose reset never calls super().reset(seed=seed) but draws from np_random."""

from __future__ import annotations

import random

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class UnseededReset(TextEnv):
    skill = "math"
    description = (
        "A whole number from 1 to 100 is hidden. Guess it in \\boxed{}; the reply says "
        "higher or lower. Eight guesses."
    )
    max_turns = 8

    def reset(self, *, seed=None, options=None):
        # Set up the episode by hand instead of going through the base class.
        self.rng = random.Random(int(self.np_random.integers(0, 2**62)))
        self.turn = 0
        self.episode_return = 0.0
        self._ended = None
        self.secret = self.rng.randint(1, 100)
        self._last_observation = "Guess my number from 1 to 100 with \\boxed{n}. You have 8 guesses."
        return self._last_observation, {"turn": 0}

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
        low, high, guesses = 1, 100, []
        while True:
            mid = (low + high) // 2
            guesses.append(boxed(mid))
            if mid == self.secret:
                return guesses
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)
