# expect: valid
"""Exact probabilities for rolls of unusual dice.

Built from the standard library's data tools: dice are frozen dataclasses, question
kinds an Enum, outcomes are enumerated with itertools.product, tallied with a
Counter, and probabilities are exact Fractions.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction

from spade_envs import TextEnv, boxed, extract_answer, parse_number


@dataclass(frozen=True)
class Die:
    name: str
    faces: tuple[int, ...]

    def describe(self) -> str:
        return f"{self.name} (faces {', '.join(map(str, self.faces))})"


CATALOGUE = (
    Die("a standard d6", (1, 2, 3, 4, 5, 6)),
    Die("a d4", (1, 2, 3, 4)),
    Die("a Fibonacci die", (1, 1, 2, 3, 5, 8)),
    Die("a doubled d3", (1, 1, 2, 2, 3, 3)),
    Die("a Sicherman die", (1, 3, 4, 5, 6, 8)),
    Die("a blank-heavy die", (0, 0, 0, 1, 2, 4)),
    Die("a d8", (1, 2, 3, 4, 5, 6, 7, 8)),
    Die("an even die", (2, 2, 4, 4, 6, 6)),
)


class Kind(Enum):
    SUM_EQUALS = "the total is exactly {t}"
    SUM_AT_LEAST = "the total is at least {t}"
    MAX_EQUALS = "the highest single die shows exactly {t}"
    ALL_DIFFERENT = "all dice show different numbers"
    PRODUCT_EVEN = "the product of the dice is even"

    def holds(self, roll: tuple[int, ...], target: int) -> bool:
        if self is Kind.SUM_EQUALS:
            return sum(roll) == target
        if self is Kind.SUM_AT_LEAST:
            return sum(roll) >= target
        if self is Kind.MAX_EQUALS:
            return max(roll) == target
        if self is Kind.ALL_DIFFERENT:
            return len(set(roll)) == len(roll)
        product = 1
        for value in roll:
            product *= value
        return product % 2 == 0


class OddDiceOdds(TextEnv):
    skill = "math"
    description = (
        "Some unusual dice (repeated or missing faces) are rolled together. Give the exact "
        "probability of the stated event as a reduced fraction in \\boxed{p/q}. A first "
        "correct answer wins; a second try earns partial credit."
    )
    max_turns = 2

    def _reset(self) -> str:
        while True:
            self.dice = [self.rng.choice(CATALOGUE) for _ in range(self.rng.randint(2, 3))]
            self.kind = self.rng.choice(list(Kind))
            rolls = list(itertools.product(*(d.faces for d in self.dice)))
            totals = Counter(sum(r) for r in rolls)
            highs = sorted({max(r) for r in rolls})
            sums = sorted(totals)
            self.target = (
                self.rng.choice(highs) if self.kind is Kind.MAX_EQUALS
                else self.rng.choice(sums[1:-1] or sums)
            )
            hits = sum(1 for r in rolls if self.kind.holds(r, self.target))
            self.outcomes = len(rolls)
            self.answer = Fraction(hits, len(rolls))
            if 0 < self.answer < 1:
                break
        self.tries = 0
        names = "; ".join(d.describe() for d in self.dice)
        event = self.kind.value.format(t=self.target)
        return (
            f"You roll {len(self.dice)} fair dice together: {names}. Every face of each die "
            f"is equally likely. What is the probability that {event}? Answer with an exact "
            "reduced fraction, e.g. \\boxed{7/36}. You have two tries."
        )

    def _step(self, action: str):
        self.tries += 1
        value = parse_number(extract_answer(action)[:64])
        if value is not None and value == self.answer:
            reward = 1.0 if self.tries == 1 else 0.6
            return f"Correct: {self.answer}.", reward, True
        if self.tries >= 2:
            return f"Not right. The probability was {self.answer}.", 0.0, True
        return "Not right; one try left.", 0.0, False

    def hint(self) -> str:
        return (
            f"There are {self.outcomes} equally likely ordered outcomes (count repeated faces "
            "separately). Count the favourable ones and reduce the fraction."
        )

    def solution(self) -> list[str]:
        return [boxed(f"{self.answer.numerator}/{self.answer.denominator}")]
