# expect: trivial
"""Open a three-digit combination lock digit by digit; each digit is checked against the whole code."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer


class ComboLock(TextEnv):
    skill = "logic"
    description = (
        "A lock has a three-digit code with distinct digits. Enter one digit per turn as "
        "\\boxed{d}; a wrong digit resets the lock. Clues about the code are given. "
        "Open it within eight turns."
    )
    max_turns = 8

    def _reset(self) -> str:
        self.code = self.rng.sample(range(10), 3)
        self.entered = 0
        total = sum(self.code)
        return (
            f"Clues: the digits are distinct, they add up to {total}, the first digit is "
            f"{'even' if self.code[0] % 2 == 0 else 'odd'}, and the last digit is "
            f"{'greater' if self.code[2] > self.code[1] else 'smaller'} than the middle one. "
            "Enter one digit per turn as \\boxed{d}."
        )

    def _step(self, action: str):
        answer = extract_answer(action).strip()
        if len(answer) != 1 or not answer.isascii() or not answer.isdigit():
            return "Enter a single digit 0-9.", 0.0, False
        if int(answer) in self.code:
            self.entered += 1
            if self.entered == 3:
                return "Click! The lock opens.", 1.0, True
            return f"Beep. {self.entered} digit(s) accepted.", 0.0, False
        self.entered = 0
        return "Buzz. Wrong digit; the lock resets.", 0.0, False

    def hint(self) -> str:
        return f"The middle digit is {'even' if self.code[1] % 2 == 0 else 'odd'}, and the code has no repeats."

    def solution(self) -> list[str]:
        return [boxed(d) for d in self.code]
