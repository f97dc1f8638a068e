# expect: solved_at_reset
"""Find all hidden treasures; `won` is overridden and is vacuously true before the first step."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer


class TreasureHunt(TextEnv):
    skill = "planning"
    description = (
        "Three treasures are hidden in cells A1-D4 of a 4x4 grid. Dig one cell per turn as "
        "\\boxed{B3}; each dig reports the distance to the nearest unfound treasure. Find all "
        "three within ten digs."
    )
    max_turns = 10

    def _reset(self) -> str:
        cells = [f"{c}{r}" for c in "ABCD" for r in "1234"]
        self.treasures = self.rng.sample(cells, 3)
        self.remaining: list[str] = []  # filled in on the first dig
        self.started = False
        return "Three treasures are buried in a 4x4 grid (A1-D4). Dig with \\boxed{cell}."

    @property
    def won(self) -> bool:
        return not self.remaining

    def _distance(self, a: str, b: str) -> int:
        return abs(ord(a[0]) - ord(b[0])) + abs(int(a[1]) - int(b[1]))

    def _step(self, action: str):
        if not self.started:
            self.remaining = list(self.treasures)
            self.started = True
        cell = extract_answer(action).strip().upper()
        if len(cell) != 2 or cell[0] not in "ABCD" or cell[1] not in "1234":
            return "Dig a cell from A1 to D4, like \\boxed{B3}.", 0.0, False
        if cell in self.remaining:
            self.remaining.remove(cell)
            if not self.remaining:
                return "You found the last treasure!", 1.0, True
            return f"Treasure! {len(self.remaining)} left.", 0.0, False
        nearest = min(self._distance(cell, t) for t in self.remaining)
        return f"Nothing here. The nearest treasure is {nearest} steps away.", 0.0, False

    def hint(self) -> str:
        columns = sorted({t[0] for t in self.treasures})
        return f"The treasures are in columns {', '.join(columns)}."

    def solution(self) -> list[str]:
        return [boxed(t) for t in self.treasures]
