"""Predict the next row of an elementary cellular automaton whose rule is hidden.

Rows wrap around at the edges. Episodes are drawn so that every candidate rule that fits
the shown generations predicts the same next row: the evidence always suffices.
"""

from __future__ import annotations

from itertools import pairwise
from typing import ClassVar

from spade_envs import TextEnv, boxed, extract_answer

# hole: candidate rules, as Wolfram rule numbers (at least 2 distinct) [1, 254]
_RULES = [18, 30, 45, 60, 90, 105, 110, 150, 184]
_NEIGHBOURHOODS = ["###", "##.", "#.#", "#..", ".##", ".#.", "..#", "..."]
_LIVE, _DEAD = "#1xX*■", ".0_-□"


def _next_row(row: str, rule: int) -> str:
    """Wolfram numbering: neighbourhood (left, centre, right) read as 3 bits indexes the rule."""
    cells = []
    for i in range(len(row)):
        left, centre, right = row[i - 1], row[i], row[(i + 1) % len(row)]
        index = 4 * (left == "#") + 2 * (centre == "#") + (right == "#")
        cells.append("#" if rule >> index & 1 else ".")
    return "".join(cells)


class CellularAutomaton(TextEnv):
    skill = "pattern"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A row of cells evolves under a hidden elementary cellular automaton rule, one of a few "
        "listed candidates. From the generations shown, predict the next row (# alive, . dead). "
        "'more' reveals one more generation, a limited number of times; two answer attempts."
    )
    # hole: turns allowed (answers plus 'more' reveals) [2, 12]
    max_turns = 5
    # hole: ring width (5-60), rows shown, candidate rules (2-9), 'more' reveals [1, 30]
    knobs: ClassVar[dict[str, int]] = {"width": 15, "shown": 3, "candidates": 4, "extra": 2}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("5 <= width <= 60", "2 <= candidates <= len(_RULES)", "shown >= 1")

    def _reset(self) -> str:
        rng, width = self.rng, max(5, min(self.width, 60))
        for _ in range(200):
            self.choices = sorted(rng.sample(_RULES, max(2, min(self.candidates, len(_RULES)))))
            self.rule = rng.choice(self.choices)
            self.rows = ["".join(rng.choice("#.") for _ in range(width))]
            while len(self.rows) < self.shown + self.extra + 1:
                self.rows.append(_next_row(self.rows[-1], self.rule))
            target, last = self.rows[self.shown], self.rows[self.shown - 1]
            if self._fair() and len(set(target)) == 2 and target != last:
                break
        else:
            self.choices = [self.rule]  # no fair draw found: tell the agent the rule itself
        self.visible, self.wrong = self.shown, 0
        return (
            f"An elementary cellular automaton on a ring of {width} cells (the ends are "
            "neighbours). A cell's next state depends on (left, itself, right): write the three "
            "as bits (# = 1, . = 0); the new state is that bit of the rule number. The rule is "
            f"one of: {', '.join(map(str, self.choices))}.\n\n{self._listing()}\n\nPredict the "
            "next row as \\boxed{#..#...} (2 attempts), or write 'more' to see one more "
            f"generation first (at most {self.extra} times)."
        )

    def _fair(self) -> bool:
        """Whether all candidates that fit the shown rows agree on the next one."""
        shown = self.rows[: self.shown]
        fitting = [r for r in self.choices if all(_next_row(a, r) == b for a, b in pairwise(shown))]
        return {_next_row(shown[-1], r) for r in fitting} == {self.rows[self.shown]}

    def _listing(self) -> str:
        return "\n".join(f"gen {i}: {row}" for i, row in enumerate(self.rows[: self.visible]))

    def _step(self, action: str):
        if action.strip().lower().rstrip(".!") == "more":
            if self.visible >= self.shown + self.extra:
                return "No more generations; predict the next row.", 0.0, False
            self.visible += 1
            return f"{self._listing()}\n\nPredict the next row.", 0.0, False
        text = "".join(extract_answer(action)[:500].split())
        guess = "".join("#" if ch in _LIVE else "." if ch in _DEAD else "?" for ch in text)
        target = self.rows[self.visible]
        if len(guess) != len(target) or "?" in guess:
            message = f"Write exactly {len(target)} cells using # and . inside \\boxed{{}}."
            return self.not_understood(message)
        if guess == target:
            return f"Correct: gen {self.visible} is {target}.", 1.0, True
        self.wrong += 1
        misses = sum(a != b for a, b in zip(guess, target))
        if self.wrong >= 2:
            return f"Wrong again ({misses} cells off); the row was {target}.", 0.0, True
        return f"{misses} of {len(target)} cells are wrong; 1 attempt left.", 0.0, False

    # hole: rule: the privileged hint (never the next row itself)
    def hint(self) -> str:
        table = ", ".join(
            f"{n}->{'#' if self.rule >> (7 - k) & 1 else '.'}"
            for k, n in enumerate(_NEIGHBOURHOODS)
        )
        return f"The rule is {self.rule}. Its table: {table}."

    def solution(self) -> list[str]:
        return [boxed(self.rows[self.shown])]
