# expect: valid
"""Haggle with a scripted used-car dealer and buy at the dealer's secret lowest price.

The dealer opens with an asking price and, after each offer below the secret floor,
concedes a constant fraction of the remaining gap: counter_k = floor + gap * r**k. Two
counter-offers reveal r and hence the floor; offering exactly the floor wins. Any deal
above the floor ends the episode with partial credit (less than 1).
"""

from __future__ import annotations

from fractions import Fraction

from spade_envs import TextEnv, extract_answer, parse_number

RATIOS = (Fraction(1, 2), Fraction(1, 3), Fraction(2, 3))
CARS = ["1998 hatchback", "station wagon", "rusty pickup", "two-seat roadster", "camper van"]
LINES = (
    "Ha! I can't do that. For you, my friend: ${price}.",
    "You're killing me. Best I can do is ${price}.",
    "No, no. Look, ${price} and it's yours.",
)


class HagglingDealer(TextEnv):
    skill = "math"
    description = (
        "Buy a used car from a dealer who will not go below a secret floor price. Each offer "
        "below the floor is refused with a counter-offer; the dealer always gives up the same "
        "fraction of the remaining gap above the floor. Reading the counter-offers, work out "
        "the floor and buy at exactly that price. After four refusals the dealer walks off."
    )
    max_turns = 12

    def _reset(self) -> str:
        self.car = self.rng.choice(CARS)
        self.ratio = self.rng.choice(RATIOS)
        self.floor = self.rng.randint(20, 90) * 100 + self.rng.choice([0, 25, 50, 75])
        self.gap = 1296 * self.rng.randint(1, 3)  # divisible by 2**4 and 3**4
        self.asking = self.floor + self.gap
        self.refusals = 0
        self.counter = self.asking
        return (
            f"Dealer: 'This {self.car}? A steal at ${self.asking}.'\n"
            "Make offers with 'offer N' (or \\boxed{N}), accept the dealer's current price "
            "with 'accept', or 'walk away'. You win by buying at the dealer's lowest "
            "acceptable price; paying more earns only partial credit."
        )

    def _deal(self, price: int) -> tuple[str, float, bool]:
        if price == self.floor:
            return (
                f"Dealer: 'Fine. ${price}. You drive a hard bargain.' Deal at the floor!",
                1.0,
                True,
            )
        saved = (self.asking - price) / (self.asking - self.floor)
        reward = round(0.5 * max(0.0, saved), 4)
        return f"Dealer: 'Deal at ${price}!' (You could have paid less.)", reward, True

    def _step(self, action: str):
        text = action[:300].lower()
        if "walk away" in text:
            return "You walk away. No car today.", 0.0, True
        if text.strip().strip(".!") == "accept":
            return self._deal(int(self.counter))
        value = parse_number(extract_answer(action).lower().replace("offer", "").replace("$", ""))
        if value is None or value != int(value) or value <= 0:
            return "Dealer: 'Talk numbers, friend. What's your offer?'", 0.0, False
        price = int(value)
        if price >= self.counter:
            return self._deal(int(self.counter))
        if price >= self.floor:
            return self._deal(price)
        self.refusals += 1
        if self.refusals >= 4:
            return "Dealer: 'You're wasting my time.' He walks off.", 0.0, True
        self.counter = self.floor + self.gap * self.ratio**self.refusals
        line = LINES[self.refusals % len(LINES)].format(price=int(self.counter))
        return f"Dealer: '{line}'", 0.0, False, {"refusals": self.refusals}

    def hint(self) -> str:
        fraction = {Fraction(1, 2): "half", Fraction(1, 3): "a third", Fraction(2, 3): "two thirds"}
        kept = fraction[self.ratio]
        return (
            f"After each refusal the dealer keeps {kept} of the gap between the last price and "
            "the floor. Lowball twice to see two counter-offers, then solve for the floor."
        )

    def solution(self) -> list[str]:
        return ["offer 100", "offer 200", f"offer {self.floor}"]
