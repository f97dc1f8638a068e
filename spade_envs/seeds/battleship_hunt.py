"""Hunt down and sink a hidden ship on a small grid with a limited number of shots."""

from __future__ import annotations

import re
from typing import ClassVar

from spade_envs import TextEnv, extract_answer

_SHOT = re.compile(r"(?:fire|shoot)?\s*(?:at\s+)?([a-z])\s*-?\s*([0-9]{1,2})")


class BattleshipHunt(TextEnv):
    skill = "planning"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "One straight ship (horizontal or vertical) hides on a square grid. Fire at cells "
        "such as 'fire C4' and learn hit or miss; the ship sinks when every cell of it is "
        "hit. Shots are limited: search on a sparse lattice (every cell whose row plus "
        "column is a multiple of the ship's length), then finish the ship along its line."
    )
    # hole: shots allowed [9, 30]
    max_turns = 16
    # hole: grid side (3-9) and ship length (2 up to the side) [2, 9]
    knobs: ClassVar[dict] = {"size": 6, "ship": 3}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("3 <= size <= 9", "2 <= ship <= size", "max_turns < size * size")

    def _reset(self) -> str:
        self.size = min(max(self.size, 3), 9)
        self.ship = min(max(self.ship, 2), self.size)
        self.horizontal = self.rng.random() < 0.5
        fixed = self.rng.randrange(self.size)  # the ship's row (horizontal) or column
        first = self.rng.randrange(self.size - self.ship + 1)
        line = range(first, first + self.ship)
        self.cells = [(fixed, i) if self.horizontal else (i, fixed) for i in line]
        self.shots: dict[tuple[int, int], bool] = {}
        last = "ABCDEFGHI"[self.size - 1]
        return (
            f"Battleship hunt on a {self.size}x{self.size} grid: columns A-{last}, rows "
            f"1-{self.size}. One ship of length {self.ship} lies horizontally or vertically. "
            f"You have {self.max_turns} shots; sink the ship by hitting all its cells. "
            f"Fire one shot per turn, e.g. 'fire C4'.\n{self._board()}"
        )

    def _board(self) -> str:
        """The grid as the agent knows it: X hit, o miss, . not fired at."""
        rows = ["   " + " ".join("ABCDEFGHI"[: self.size])]
        for r in range(self.size):
            marks = []
            for c in range(self.size):
                shot = self.shots.get((r, c))
                marks.append("." if shot is None else "X" if shot else "o")
            rows.append(f"{r + 1:>2} " + " ".join(marks))
        return "\n".join(rows)

    def _step(self, action: str):
        text = extract_answer(action)[:50].strip().lower()
        found = _SHOT.fullmatch(text)
        left = self.max_turns - self.turn
        if not found:
            return self.not_understood(
                f"Fire with a cell name such as 'fire C4'. Shots left: {left}."
            )
        col, row = ord(found.group(1)) - ord("a"), int(found.group(2)) - 1
        if not (0 <= col < self.size and 0 <= row < self.size):
            return f"That cell is off the grid. Shots left: {left}.", 0.0, False
        name = f"{found.group(1).upper()}{row + 1}"
        if (row, col) in self.shots:
            return f"You already fired at {name}. Shots left: {left}.\n{self._board()}", 0.0, False
        hit = (row, col) in self.cells
        self.shots[(row, col)] = hit
        if all(self.shots.get(cell) for cell in self.cells):
            return f"{name}: hit. The ship is sunk!\n{self._board()}", 1.0, True
        result = "hit" if hit else "miss"
        return f"{name}: {result}. Shots left: {left}.\n{self._board()}", 0.0, False

    # hole: rule: the privileged hint (never every cell of the ship)
    def hint(self) -> str:
        if self.horizontal:
            return f"The ship lies horizontally in row {self.cells[0][0] + 1}."
        return f"The ship lies vertically in column {'ABCDEFGHI'[self.cells[0][1]]}."

    def solution(self) -> list[str]:
        return [f"fire {'ABCDEFGHI'[c]}{r + 1}" for r, c in self.cells]
