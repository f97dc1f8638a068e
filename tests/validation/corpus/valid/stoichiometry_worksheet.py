# expect: valid
"""A five-part stoichiometry worksheet scored out of 10 (2 points per part).

Each turn answers the current part, right or wrong, and the worksheet moves on; the
episode return reaches the top of ``reward_range`` (10) only when every part is right.
"""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed

# (reactant A, coefficient, reactant B, coefficient, product, coefficient); masses in g/mol.
REACTIONS = [
    (("H2", "hydrogen", 2.016, 2), ("O2", "oxygen", 32.00, 1), ("H2O", "water", 18.015, 2)),
    (("N2", "nitrogen", 28.014, 1), ("H2", "hydrogen", 2.016, 3), ("NH3", "ammonia", 17.031, 2)),
    (
        ("Fe", "iron", 55.845, 4),
        ("O2", "oxygen", 32.00, 3),
        ("Fe2O3", "iron(III) oxide", 159.69, 2),
    ),
    (
        ("Na", "sodium", 22.990, 2),
        ("Cl2", "chlorine", 70.90, 1),
        ("NaCl", "sodium chloride", 58.44, 2),
    ),
    (
        ("Mg", "magnesium", 24.305, 2),
        ("O2", "oxygen", 32.00, 1),
        ("MgO", "magnesium oxide", 40.304, 2),
    ),
    (("C", "carbon", 12.011, 1), ("O2", "oxygen", 32.00, 1), ("CO2", "carbon dioxide", 44.009, 1)),
]

SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def pretty(formula: str) -> str:
    return formula.translate(SUB)


class StoichiometryWorksheet(TextEnv):
    skill = "science"
    description = (
        "Work through a five-part stoichiometry worksheet about one reaction: moles of each "
        "reactant, the limiting reagent, the mass of product and the mass of excess reagent "
        "left over. Answer one part per turn in \\boxed{}; each correct part is worth 2 of "
        "10 points, and the worksheet moves on after every answer."
    )
    max_turns = 5
    reward_range = (0.0, 10.0)

    def _reset(self) -> str:
        (a, b, p) = self.rng.choice(REACTIONS)
        self.a, self.b, self.p = a, b, p
        while True:
            moles_a = self.rng.randint(2, 16) / 2
            moles_b = self.rng.randint(2, 16) / 2
            # Equivalents of reaction each reactant supports; avoid an exact tie.
            if moles_a / a[3] != moles_b / b[3]:
                break
        self.mass_a = round(moles_a * a[2], 2)
        self.mass_b = round(moles_b * b[2], 2)
        n_a, n_b = self.mass_a / a[2], self.mass_b / b[2]
        extent = min(n_a / a[3], n_b / b[3])
        limiting, excess, n_excess = (a, b, n_b) if n_a / a[3] < n_b / b[3] else (b, a, n_a)
        left = n_excess - extent * excess[3]
        self.answers = [
            ("How many moles of {A} are there?", [round(n_a, 4)]),
            ("How many moles of {B} are there?", [round(n_b, 4)]),
            (
                "Which reactant is the limiting reagent? (formula or name)",
                [limiting[0], limiting[1]],
            ),
            ("What mass of {P} forms, in grams?", [round(extent * p[3] * p[2], 3)]),
            (
                "What mass of the excess reagent is left over, in grams?",
                [round(left * excess[2], 3)],
            ),
        ]
        self.part = 0
        self.score = 0
        equation = (
            f"{a[3]} {pretty(a[0])} + {b[3]} {pretty(b[0])} → {p[3]} {pretty(p[0])}"
        ).replace("1 ", "")
        masses = ", ".join(f"{pretty(x[0])} {x[2]} g/mol" for x in (a, b, p))
        return (
            f"Reaction: {equation}\nMolar masses: {masses}.\nYou mix {self.mass_a} g of "
            f"{pretty(a[0])} with {self.mass_b} g of {pretty(b[0])} and the reaction runs to "
            "completion. Five parts follow, 2 points each; answer each with \\boxed{...} "
            "(numbers within 1% count).\n" + self._question()
        )

    def _question(self) -> str:
        text = self.answers[self.part][0].format(
            A=pretty(self.a[0]), B=pretty(self.b[0]), P=pretty(self.p[0])
        )
        return f"Part {self.part + 1} of 5: {text}"

    def _step(self, action: str):
        accepted = self.answers[self.part][1]
        right = any(answers_match(action[:2000], want, rel_tol=0.01) for want in accepted)
        reward = 2.0 if right else 0.0
        self.score += int(right) * 2
        verdict = "Correct, +2." if right else "Not right, 0 points."
        self.part += 1
        if self.part == len(self.answers):
            return f"{verdict} Worksheet finished: {self.score}/10.", reward, True
        return f"{verdict} Score {self.score}/10.\n{self._question()}", reward, False

    def hint(self) -> str:
        return (
            "Convert grams to moles first (mass / molar mass), then divide each by its "
            f"coefficient: the smaller quotient marks the limiting reagent. The product "
            f"{pretty(self.p[0])} is formed in a {self.p[3]}:{self.a[3]} ratio to "
            f"{pretty(self.a[0])}."
        )

    def solution(self) -> list[str]:
        return [boxed(accepted[0]) for _, accepted in self.answers]
