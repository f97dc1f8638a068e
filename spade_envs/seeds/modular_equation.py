"""Solve a linear congruence, or a congruence paired with a second modulus (CRT).

Each wrong guess is answered with what the guess actually gives on the left-hand sides,
so the agent can correct course; the answer is the unique solution in 0..M-1.
"""

from __future__ import annotations

import re
from typing import ClassVar

from spade_envs import TextEnv, boxed, extract_answer

_INT = re.compile(r"[+-]?[0-9]{1,12}")
# hole: moduli to draw from: primes above 10 only [11, 997]
_PRIMES = [11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47]


class ModularEquation(TextEnv):
    skill = "math"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "Solve a congruence a*x + c ≡ b (mod m), or a system of two congruences with coprime "
        "moduli, for the unique x in 0..M-1. A wrong guess is told what its left-hand sides "
        "evaluate to; a few attempts."
    )
    # hole: answer attempts [1, 10]
    max_turns = 4
    # hole: chance in percent of a system of two congruences [0, 100]
    knobs: ClassVar[dict[str, int]] = {"system_chance_percent": 40}

    def _reset(self) -> str:
        rng = self.rng
        self.m = rng.choice(_PRIMES)
        self.a = rng.randint(2, self.m - 1)
        self.c = rng.choice([0, 0, rng.randint(1, self.m - 1)])
        self.system = rng.randrange(100) < self.system_chance_percent
        self.n = rng.randint(3, 10)  # coprime to the prime m, so the system has one solution
        self.r = rng.randrange(self.n)
        self.modulus = self.m * self.n if self.system else self.m
        x = rng.randrange(self.modulus)  # the hidden solution fixes b
        self.b = (self.a * x + self.c) % self.m
        self.answer = next(y for y in range(self.modulus) if self._satisfies(y))
        return (
            "Solve for the integer x:\n  "
            + "\n  ".join(self._equations())
            + f"\nGive the unique solution with 0 <= x < {self.modulus} as \\boxed{{x}}. "
            f"You have {self.max_turns} attempts; a wrong guess shows what it gives."
        )

    def _lhs(self) -> str:
        return f"{self.a}*x + {self.c}" if self.c else f"{self.a}*x"

    def _equations(self) -> list[str]:
        first = f"{self._lhs()} ≡ {self.b} (mod {self.m})"
        return [first, f"x ≡ {self.r} (mod {self.n})"] if self.system else [first]

    def _satisfies(self, x: int) -> bool:
        ok = (self.a * x + self.c) % self.m == self.b
        return ok and (not self.system or x % self.n == self.r)

    def _step(self, action: str):
        text = extract_answer(action).replace(" ", "")
        left = self.max_turns - self.turn
        if not _INT.fullmatch(text):
            message = f"Answer with \\boxed{{x}}, a whole number. Attempts left: {left}."
            return self.not_understood(message, terminated=left == 0)
        x = int(text)
        if x == self.answer:
            return f"Correct: x = {x} satisfies every congruence.", 1.0, True
        if self._satisfies(x):
            feedback = f"{x} satisfies the congruences but is not in 0..{self.modulus - 1}."
        else:
            value = (self.a * x + self.c) % self.m
            feedback = f"With x = {x}: {self._lhs()} ≡ {value} (mod {self.m})"
            if self.system:
                feedback += f" and x ≡ {x % self.n} (mod {self.n})"
            feedback += "."
        if left == 0:
            return f"{feedback} No attempts left; x was {self.answer}.", 0.0, True
        return f"{feedback} Attempts left: {left}.", 0.0, False

    def hint(self) -> str:
        inverse = pow(self.a, -1, self.m)
        text = f"The inverse of {self.a} modulo {self.m} is {inverse}: multiply both sides by it."
        if self.system:
            text += f" Then step through candidates congruent to {self.r} modulo {self.n}."
        if str(self.answer) in text:  # never give the answer away
            text = (
                "Multiply both sides by the inverse of the coefficient of x; as the modulus is "
                "prime, that inverse is the coefficient to the power (modulus minus two)."
            )
        return text

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
