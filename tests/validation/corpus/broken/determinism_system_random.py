# expect: determinism
"""Crack a safe: find the dial position from 'too high' / 'too low' clicks."""

from __future__ import annotations

import random

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class SafeDial(TextEnv):
    skill = "math"
    description = (
        "A safe opens at one dial position from 0 to 63. Each turn set the dial with "
        "\\boxed{n}; the safe clicks 'too high' or 'too low'. Open it within seven tries."
    )
    max_turns = 7

    def _reset(self) -> str:
        # Mix in the operating system's entropy so that two safes never share a
        # combination. (The clock was used here once; a worker's clock is virtual now, so
        # it repeats with the episode.)
        jitter = random.SystemRandom().randrange(1_000_000)
        self.secret = (self.rng.randint(0, 63) + jitter) % 64
        return (
            "The dial runs from 0 to 63. Set it with \\boxed{n}; you have 7 tries. "
            "The safe tells you whether your setting is too high or too low."
        )

    def _step(self, action: str):
        value = parse_number(extract_answer(action))
        left = self.max_turns - self.turn
        if value is None or value != int(value) or not 0 <= value <= 63:
            return f"Set the dial to a whole number from 0 to 63. Tries left: {left}.", 0.0, False
        guess = int(value)
        if guess == self.secret:
            return f"Click. The safe opens at {guess}.", 1.0, True
        verdict = "too low" if guess < self.secret else "too high"
        if left == 0:
            return f"{guess} is {verdict}. The alarm rings: it was {self.secret}.", 0.0, False
        return f"{guess} is {verdict}. Tries left: {left}.", 0.0, False

    def hint(self) -> str:
        half = "upper" if self.secret >= 32 else "lower"
        return f"The combination is in the {half} half of the dial and is {'even' if self.secret % 2 == 0 else 'odd'}."

    def solution(self) -> list[str]:
        low, high, moves = 0, 63, []
        while True:
            mid = (low + high) // 2
            moves.append(boxed(mid))
            if mid == self.secret:
                return moves
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)
