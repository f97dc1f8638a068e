# expect: imports
"""Compute a 32-bit wrapping hash by hand; ctypes emulates unsigned overflow."""

from __future__ import annotations

import ctypes

from spade_envs import TextEnv, answers_match, boxed


class WrapHash(TextEnv):
    skill = "code"
    description = (
        "Apply h = h * 31 + ord(c) over a short word with 32-bit unsigned wrap-around, "
        "starting from h = 7, and reply with the final h in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.word = "".join(self.rng.choice("abcdefghij") for _ in range(self.rng.randint(6, 9)))
        h = ctypes.c_uint32(7)
        for c in self.word:
            h = ctypes.c_uint32(h.value * 31 + ord(c))
        self.answer = h.value
        return f"Hash the word '{self.word}' (h = 7; h = h * 31 + ord(c) mod 2^32). Reply \\boxed{{h}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Reduce modulo 4294967296 after every step to keep the numbers small."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
