"""Find the next term of an integer sequence drawn from one of several rule families.

The agent may reveal extra terms with 'more'; each reveal lowers the reward of a correct
answer, so only an answer given from the first terms alone earns the full 1.0.
"""

from __future__ import annotations

import re
from typing import ClassVar

from spade_envs import TextEnv, boxed, extract_answer

_INT = re.compile(r"[+-]?[0-9]{1,15}")
_HINTS = {
    "arithmetic": "The difference between consecutive terms never changes.",
    "geometric": "Each term is the previous term times the same whole number.",
    "fibonacci": "From the third term on, each term is the sum of the two terms before it.",
    "interleaved": "Odd and even positions are two separate sequences, each with a fixed step.",
    "squares": "Subtract the same constant from every term and you get perfect squares.",
    "quadratic": "The differences between consecutive terms grow by the same amount each time.",
}


class SequenceRule(TextEnv):
    skill = "pattern"
    description = (
        "Given the first terms of an integer sequence (arithmetic, geometric, Fibonacci-like, "
        "interleaved, squares plus a constant, or with steadily growing differences), give the "
        "next term. Writing 'more' reveals one more term but lowers the reward of a correct "
        "answer by 0.25; two answer attempts."
    )
    # hole: turns allowed: 'more' reveals plus 2 answers [2, 10]
    max_turns = 4
    # hole: terms shown and 'more' reveals allowed [1, 12]
    knobs: ClassVar[dict[str, int]] = {"shown": 6, "reveals": 2}
    penalty = 0.25

    def _reset(self) -> str:
        self.kind = self.rng.choice(sorted(_HINTS))
        self.terms = self._generate(self.kind, self.shown + self.reveals + 1)
        self.visible, self.revealed, self.wrong = self.shown, 0, 0
        return (
            f"Sequence: {self._listing()}\nWhat is the next term? Answer with \\boxed{{integer}} "
            f"(2 attempts). Or write 'more' to see one more term first (at most {self.reveals} "
            f"times; each lowers the reward of a correct answer by {self.penalty})."
        )

    def _generate(self, kind: str, count: int) -> list[int]:
        r = self.rng
        if kind == "arithmetic":
            a, d = r.randint(-20, 30), r.choice([-9, -7, -4, -3, 3, 4, 5, 6, 8, 11, 13])
            return [a + d * n for n in range(count)]
        if kind == "geometric":
            a, q = r.randint(1, 5), r.choice([-3, -2, 2, 3])
            return [a * q**n for n in range(count)]
        if kind == "fibonacci":
            terms = [r.randint(1, 9), r.randint(1, 9)]
            while len(terms) < count:
                terms.append(terms[-1] + terms[-2])
            return terms
        if kind == "interleaved":
            (a, d), (b, e) = (
                (r.randint(0, 20), r.randint(2, 7)),
                (r.randint(30, 60), -r.randint(2, 7)),
            )
            return [a + d * (n // 2) if n % 2 == 0 else b + e * (n // 2) for n in range(count)]
        if kind == "squares":
            k = r.choice([k for k in range(-6, 12) if k != 0])
            return [(n + 1) ** 2 + k for n in range(count)]
        a, d, c = r.randint(-5, 10), r.randint(-3, 4), r.randint(2, 5)  # quadratic
        return [a + d * n + c * n * (n - 1) // 2 for n in range(count)]

    def _listing(self) -> str:
        return ", ".join(str(t) for t in self.terms[: self.visible]) + ", ..."

    def _step(self, action: str):
        if action.strip().lower().rstrip(".!") == "more":
            if self.revealed >= self.reveals:
                return "No more reveals; answer with \\boxed{integer}.", 0.0, False
            self.visible += 1
            self.revealed += 1
            return f"Sequence: {self._listing()}\nWhat is the next term?", 0.0, False
        text = extract_answer(action).replace(" ", "")
        if not _INT.fullmatch(text):
            return self.not_understood("Answer with \\boxed{integer} or write 'more'.")
        target = self.terms[self.visible]
        if int(text) == target:
            reward = max(0.0, 1.0 - self.penalty * self.revealed)
            return f"Correct, the next term is {target}.", reward, True
        self.wrong += 1
        if self.wrong >= 2:
            return f"Wrong again; the next term was {target}.", 0.0, True
        return "Wrong; 1 attempt left.", 0.0, False

    # hole: rule: the privileged hint (never the next term)
    def hint(self) -> str:
        return _HINTS[self.kind]

    def solution(self) -> list[str]:
        return [boxed(self.terms[self.shown])]
