# expect: valid
"""Follow an American recipe in a metric kitchen, scaled to a different number of servings.

Every correct step (weighing one ingredient, then setting the oven) earns an equal share
of the reward, so the return reaches 1.0 only when the whole recipe is followed. Wrong
quantities earn nothing; the third mistake ruins the batch.
"""

from __future__ import annotations

import re
from fractions import Fraction

from spade_envs import TextEnv, parse_number

# ingredient -> (unit in the recipe, grams per unit, amounts the recipe may call for)
PANTRY = {
    "flour": ("cup", 120, ["1", "1 1/2", "2", "2 1/2", "3"]),
    "sugar": ("cup", 200, ["1/2", "3/4", "1", "1 1/4"]),
    "milk": ("cup", 240, ["1/2", "1", "1 1/2"]),
    "butter": ("tbsp", 14, ["4", "6", "8", "10"]),
    "cocoa": ("tbsp", 5, ["3", "4", "6"]),
    "chocolate": ("oz", 28, ["2", "3", "4", "6"]),
    "salt": ("tsp", 6, ["1/2", "1"]),
    "oats": ("cup", 90, ["1", "1 1/2", "2"]),
}
BAKES = [("brownies", 350, 25), ("cookies", 375, 12), ("cake", 350, 35), ("muffins", 400, 20)]
ADD = re.compile(r"add\s+([0-9][0-9.,/]*)\s*(?:g|grams?)\s+(?:of\s+)?([a-z ]+?)\s*$")
BAKE = re.compile(
    r"bake\s+(?:at\s+)?([0-9][0-9.]*)\s*(?:°\s*c|c|degrees c|celsius)?\s+"
    r"(?:for\s+)?([0-9]{1,3})\s*(?:min|mins|minutes)\s*$"
)


def mixed(amount: str) -> Fraction:
    return sum((Fraction(part) for part in amount.split()), Fraction(0))


class RecipeScaleUp(TextEnv):
    skill = "science"
    description = (
        "Follow a recipe written in cups, spoons, ounces and degrees Fahrenheit in a kitchen "
        "that only has a gram scale and a Celsius oven, scaled to a different number of "
        "servings. Weigh each ingredient in the recipe's order ('add 180 g flour'), then set "
        "the oven ('bake at 175 C for 25 minutes'). Each correct step earns part of the "
        "reward; three mistakes ruin the batch."
    )
    max_turns = 14

    def _reset(self) -> str:
        self.dish, fahrenheit, self.minutes = self.rng.choice(BAKES)
        chosen = self.rng.sample(sorted(PANTRY), self.rng.randint(3, 5))
        self.serves = self.rng.choice([4, 6, 8])
        self.wanted = self.rng.choice([s for s in (2, 3, 4, 6, 8, 10, 12) if s != self.serves])
        factor = Fraction(self.wanted, self.serves)
        self.steps: list[tuple[str, Fraction]] = []
        lines = []
        for name in chosen:
            unit, grams, amounts = PANTRY[name]
            amount = self.rng.choice(amounts)
            lines.append(f"  - {amount} {unit} {name}")
            self.steps.append((name, mixed(amount) * grams * factor))
        self.fahrenheit = fahrenheit
        self.celsius = Fraction(fahrenheit - 32) * 5 / 9
        self.done = 0
        self.mistakes = 0
        table = "; ".join(f"1 {PANTRY[n][0]} {n} = {PANTRY[n][1]} g" for n in chosen)
        return (
            f"Recipe: {self.dish} (serves {self.serves})\n"
            + "\n".join(lines)
            + f"\n  Bake at {fahrenheit} °F for {self.minutes} minutes.\n"
            f"You are making {self.wanted} servings. Kitchen conversions: {table}.\n"
            "Do one step per turn, in order: 'add N g INGREDIENT' (within 2%), then "
            "'bake at T C for M minutes' (within 3 degrees)."
        )

    def _share(self) -> float:
        total = len(self.steps) + 1
        return float(Fraction(self.done, total)) - float(Fraction(self.done - 1, total))

    def _mistake(self, message: str):
        self.mistakes += 1
        if self.mistakes >= 3:
            return f"{message} That was the third mistake: the batch is ruined.", 0.0, True
        return f"{message} ({3 - self.mistakes} mistakes left.)", 0.0, False

    def _step(self, action: str):
        text = " ".join(action[:200].lower().split()).rstrip(".")
        if self.done < len(self.steps):
            name, grams = self.steps[self.done]
            found = ADD.match(text)
            if not found:
                return f"Next step: weigh an ingredient, e.g. 'add N g {name}'.", 0.0, False
            value = parse_number(found.group(1))
            if found.group(2).strip() != name:
                return self._mistake(f"The recipe does not call for {found.group(2)[:30]} now.")
            if value is None or abs(value - grams) > grams * Fraction(2, 100):
                return self._mistake(f"That amount of {name} is wrong for this batch.")
            self.done += 1
            return (
                f"Added {name}. {self.done} of {len(self.steps) + 1} steps done.",
                self._share(),
                False,
            )
        found = BAKE.match(text)
        if not found:
            return "All ingredients are in. Set the oven: 'bake at T C for M minutes'.", 0.0, False
        degrees, minutes = parse_number(found.group(1)), int(found.group(2))
        if degrees is None or abs(degrees - self.celsius) > 3 or minutes != self.minutes:
            return self._mistake("The oven setting does not match the recipe.")
        self.done += 1
        return f"The {self.dish} come out perfect!", self._share(), True

    def hint(self) -> str:
        factor = Fraction(self.wanted, self.serves)
        return (
            f"Multiply every amount by {factor.numerator}/{factor.denominator} before "
            "converting to grams. For the oven, subtract 32 from the Fahrenheit value and "
            "multiply by 5/9; keep the baking time as written."
        )

    def solution(self) -> list[str]:
        actions = [
            f"add {float(grams):.2f}".rstrip("0").rstrip(".") + f" g {name}"
            for name, grams in self.steps
        ]
        return actions + [f"bake at {round(float(self.celsius))} C for {self.minutes} minutes"]
