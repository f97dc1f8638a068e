# expect: valid
"""Split a restaurant bill to the cent, computed with ``decimal`` and half-up rounding.

One structured answer lists every diner's share; each correct share earns part of the
reward (the parts add up to exactly 1.0), so the maximum needs every share right. An
answer that cannot be read at all does not use up the single scored submission.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from spade_envs import TextEnv, extract_answer, parse_number

DINERS = ["Ana", "Bilal", "Chen", "Dagny", "Emeka", "Freya"]
DISHES = [
    ("risotto", "18.50"), ("burger", "14.25"), ("ramen", "15.75"), ("salad", "11.40"),
    ("steak", "27.90"), ("tacos", "12.60"), ("curry", "16.35"), ("pasta", "13.80"),
]
SHARED = [("nachos", "9.95"), ("wine bottle", "34.00"), ("dessert platter", "17.45"), ("fries", "6.30")]
CENT = Decimal("0.01")
PAIR = re.compile(r"([a-z]+)\s*[:=-]\s*\$?\s*([0-9]+(?:\.[0-9]+)?)")


class DinnerBillDecimal(TextEnv):
    skill = "math"
    description = (
        "Split a restaurant bill: each diner pays for their own dish, an equal part of each "
        "shared dish they ate from, sales tax on that food and a tip on the pre-tax amount; "
        "each share is rounded half-up to the cent. Give every share in one answer, e.g. "
        "\\boxed{Ana: 21.40, Chen: 18.05}; each correct share earns part of the reward."
    )
    max_turns = 4

    def _reset(self) -> str:
        people = self.rng.sample(DINERS, self.rng.randint(3, 4))
        self.tax = Decimal(self.rng.choice(["0.07", "0.0825", "0.0875", "0.06"]))
        self.tip = Decimal(self.rng.choice(["0.15", "0.18", "0.20"]))
        food = {p: Decimal(0) for p in people}
        lines = []
        for person, (dish, price) in zip(people, self.rng.sample(DISHES, len(people))):
            food[person] += Decimal(price)
            lines.append(f"  {person}: {dish} ${price}")
        for dish, price in self.rng.sample(SHARED, 2):
            eaters = sorted(self.rng.sample(people, self.rng.randint(2, len(people))))
            for person in eaters:
                food[person] += Decimal(price) / len(eaters)
            lines.append(f"  shared {dish} ${price}, split equally by {', '.join(eaters)}")
        self.shares = {
            p: (food[p] * (1 + self.tax) + food[p] * self.tip).quantize(CENT, rounding=ROUND_HALF_UP)
            for p in people
        }
        self.scored = False
        return (
            "Dinner bill:\n" + "\n".join(lines) + f"\nSales tax {float(self.tax * 100):g}% on food; "
            f"tip {float(self.tip * 100):g}% of the pre-tax food amount. Each diner's share is food + "
            "tax + tip, rounded half-up to the cent (do not round before the end). Answer "
            "with every diner's share in one \\boxed{Name: amount, ...}."
        )

    def _step(self, action: str):
        pairs = PAIR.findall(extract_answer(action)[:500].lower())
        given: dict[str, Fraction] = {}
        for name, amount in pairs:
            value = parse_number(amount)
            if value is not None:
                given[name] = value
        known = {p.lower(): p for p in self.shares}
        if not any(name in known for name in given):
            names = ", ".join(self.shares)
            return f"I could not read any shares. Write e.g. \\boxed{{{names.split(', ')[0]}: 12.34, ...}}.", 0.0, False
        right = [p for key, p in known.items()
                 if key in given and given[key] == Fraction(str(self.shares[p]))]
        n = len(self.shares)
        reward = 1.0 if len(right) == n else round(len(right) / n, 6) * 0.999
        verdict = ", ".join(f"{p} {'ok' if p in right else 'wrong'}" for p in self.shares)
        return f"Checked: {verdict}. {len(right)} of {n} shares correct.", reward, True

    def hint(self) -> str:
        rate = (1 + self.tax + self.tip)
        return (
            f"Each share is the diner's food amount times {float(rate):g} (1 + tax + tip), rounded "
            "only at the end. Shared dishes are divided by the number of diners who shared "
            "them, not by the whole table."
        )

    def solution(self) -> list[str]:
        listed = ", ".join(f"{p}: {amount}" for p, amount in self.shares.items())
        return [f"\\boxed{{{listed}}}"]
