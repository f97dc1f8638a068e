"""Find the one heavier coin with a balance scale in a limited number of weighings."""

from __future__ import annotations

import re
from typing import ClassVar

from spade_envs import TextEnv, boxed, extract_answer, extract_boxed, parse_number

_WEIGH = re.compile(r"weigh\s+([0-9,\s]+?)\s+(?:vs\.?|versus|against)\s+([0-9,\s]+)")


class CounterfeitCoin(TextEnv):
    skill = "logic"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "Among N identical-looking coins exactly one is heavier. A balance scale compares "
        "two groups of coins ('weigh 1,2,3 vs 4,5,6') and tells which side is heavier. "
        "With only as many weighings as a three-way split allows, find the heavy coin "
        "and answer with its number."
    )
    # hole: turns allowed: weighings plus the answer (up to 3^k coins need k weighings) [4, 20]
    max_turns = 6
    # hole: number of coins [3, 243]
    knobs: ClassVar[dict] = {"coins": 12}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("max_turns < coins",)

    def _reset(self) -> str:
        self.coins = min(max(self.coins, 3), 243)  # 243 = 3**5 coins need 5 weighings
        self.weighings = 1
        while 3**self.weighings < self.coins:
            self.weighings += 1
        self.heavy = self.rng.randint(1, self.coins)
        self.used = 0
        return (
            f"There are {self.coins} coins numbered 1 to {self.coins}; exactly one is heavier "
            f"than the others, which all weigh the same. You may use the balance "
            f"{self.weighings} times. Weigh with a line like 'weigh 1,2,3 vs 4,5,6'; when "
            "you know the heavy coin, answer \\boxed{coin number}. One answer only."
        )

    def _step(self, action: str):
        text = extract_answer(action)[:500].lower()
        found = _WEIGH.fullmatch(text.strip())
        if found:
            return self._weigh(found.group(1), found.group(2))
        value = parse_number(extract_boxed(action) or "")  # answers must be boxed
        if value is None or value != int(value):
            return self.not_understood("Write 'weigh 1,2 vs 3,4' or answer \\boxed{coin number}.")
        if int(value) == self.heavy:
            return f"Correct: coin {self.heavy} is the heavy one.", 1.0, True
        return f"Wrong: coin {int(value)} is genuine; the heavy one was {self.heavy}.", 0.0, True

    def _weigh(self, left_text: str, right_text: str):
        left = [int(t) for t in re.findall(r"[0-9]{1,4}", left_text)]
        right = [int(t) for t in re.findall(r"[0-9]{1,4}", right_text)]
        coins = left + right
        valid = all(1 <= c <= self.coins for c in coins) and len(set(coins)) == len(coins)
        if not (left and right and valid):
            return f"Put distinct coins from 1 to {self.coins} on the pans.", 0.0, False
        if self.used >= self.weighings:
            return "No weighings left: answer \\boxed{coin number}.", 0.0, False
        self.used += 1
        # Genuine coins weigh 10 g and the heavy one 11 g, so more coins always outweigh fewer.
        diff = 10 * (len(left) - len(right)) + (self.heavy in left) - (self.heavy in right)
        if diff == 0:
            result = "the pans balance"
        else:
            result = f"the {'left' if diff > 0 else 'right'} pan is heavier"
        return f"Weighing {self.used} of {self.weighings}: {result}.", 0.0, False

    # hole: rule: the privileged hint (never the heavy coin's number)
    def hint(self) -> str:
        parity = "even" if self.heavy % 2 == 0 else "odd"
        return (
            f"The heavy coin's number is {parity} and leaves remainder {self.heavy % 3} when "
            "divided by 3."
        )

    def solution(self) -> list[str]:
        # Ternary search: put a third of the candidates on each pan and keep the group
        # the scale points to (the pan that sinks, or the coins left off when it balances).
        candidates, actions = list(range(1, self.coins + 1)), []
        while len(candidates) > 1:
            third = -(-len(candidates) // 3)
            left, right = candidates[:third], candidates[third : 2 * third]
            actions.append(f"weigh {','.join(map(str, left))} vs {','.join(map(str, right))}")
            if self.heavy in left:
                candidates = left
            elif self.heavy in right:
                candidates = right
            else:
                candidates = candidates[2 * third :]
        return actions + [boxed(candidates[0])]
