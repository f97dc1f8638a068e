# expect: env_class
"""Roman numeral conversion; the class never defines solution()."""

from __future__ import annotations

from spade_envs import TextEnv, extract_answer

_VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
           (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def to_roman(n: int) -> str:
    out = []
    for value, letters in _VALUES:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)


class RomanNumeral(TextEnv):
    skill = "pattern"
    description = (
        "Convert a number from 1 to 3999 into Roman numerals and reply in \\boxed{}. Two "
        "attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.n = self.rng.randint(1, 3999)
        self.answer = to_roman(self.n)
        return f"Write {self.n} in Roman numerals as \\boxed{{numeral}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if extract_answer(action).strip().upper() == self.answer:
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return f"The numeral has {len(self.answer)} letters; subtractive pairs like IV count."
