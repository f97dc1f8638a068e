# expect: fuzz keep every call under
"""Total a shopping list; a second blank reply in a row makes the checker count, by brute
force, the catalogue subsets with the same total (a 'difficulty note' that takes seconds).

(Two in a row: Hypothesis' fuzzing finds that at once, while check_env's random actions,
empty about one time in 65, would otherwise sometimes hit it first and reject the file in
the wrong check.)"""

from __future__ import annotations

import itertools

from spade_envs import TextEnv, boxed, extract_answer, parse_number

_CATALOGUE = [round(1.5 + 0.37 * k, 2) for k in range(26)]


class ShoppingTotal(TextEnv):
    skill = "arithmetic"
    description = (
        "A shopping list with prices; reply with the total price as \\boxed{d.cc} "
        "(two decimals). Three attempts."
    )
    max_turns = 3

    def _reset(self) -> str:
        self.prices = self.rng.sample(_CATALOGUE, 4)
        self.last_blank = False
        self.total = round(sum(self.prices), 2)
        lines = [f"- item {k + 1}: {p:.2f}" for k, p in enumerate(self.prices)]
        return "Shopping list:\n" + "\n".join(lines) + "\nReply with the total as \\boxed{d.cc}."

    def _same_total_subsets(self) -> int:
        count = 0
        for size in range(1, len(_CATALOGUE) + 1):
            for subset in itertools.combinations(_CATALOGUE, size):
                count += round(sum(subset), 2) == self.total
        return count

    def _step(self, action: str):
        left = self.max_turns - self.turn
        blank = not action.strip()
        if blank and self.last_blank:
            note = self._same_total_subsets()
            return f"Blank again ({note} baskets cost the same). Attempts left: {left}.", 0.0, False
        self.last_blank = blank
        value = parse_number(extract_answer(action))
        if value is not None and abs(value - self.total) < 0.005:
            return "Correct.", 1.0, True
        return f"That is not the total. Attempts left: {left}.", 0.0, False

    def hint(self) -> str:
        return f"The whole euros add up to {sum(int(p) for p in self.prices)}."

    def solution(self) -> list[str]:
        return [boxed(f"{self.total:.2f}")]
