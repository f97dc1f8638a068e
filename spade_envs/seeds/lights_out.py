"""Lights Out: press cells (each toggles itself and its neighbours) until every light is off."""

from __future__ import annotations

import re
from typing import ClassVar

from spade_envs import TextEnv, extract_answer

_PRESS = re.compile(r"(?:press\s*)?\(?\s*([0-9]{1,2})\s*[,\s]\s*([0-9]{1,2})\s*\)?")


class LightsOut(TextEnv):
    skill = "pattern"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A square grid of lights, some on. Pressing a cell toggles it and its orthogonal "
        "neighbours. The board was made by pressing a few cells of a dark board, so each "
        "press leaves a plus-shaped footprint; recognise the footprints in the pattern and "
        "press those cells to turn every light off within the turn limit."
    )
    # hole: presses allowed [2, 30]
    max_turns = 10
    # hole: grid side (3-9) and presses that made the board (2 up to max_turns) [2, 9]
    knobs: ClassVar[dict] = {"size": 5, "presses": 4}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("3 <= size <= 9", "2 <= presses <= max_turns", "presses <= size * size - 1")

    def _reset(self) -> str:
        self.size = min(max(self.size, 3), 9)
        self.presses = min(max(self.presses, 2), self.max_turns, self.size * self.size - 1)
        cells = [(r, c) for r in range(self.size) for c in range(self.size)]
        for _ in range(100):  # redraw the rare boards that one press (or none) would clear
            self.pressed = sorted(self.rng.sample(cells, self.presses))
            self.lights = [[0] * self.size for _ in range(self.size)]
            for cell in self.pressed:
                self._toggle(*cell)
            if not any(self.lights == self._footprint(cell) for cell in cells + [None]):
                break
        n = self.size
        return (
            f"Lights Out on a {n}x{n} grid (# = on, . = off). Pressing a cell toggles it and "
            "the cells directly above, below, left and right of it. Turn every light off in "
            f"at most {self.max_turns} presses. Press one cell per turn with 'press ROW COL' "
            f"(rows 1-{n} from the top, columns 1-{n} from the left), e.g. 'press 2 3'.\n"
            f"{self._board()}"
        )

    def _toggle(self, r: int, c: int) -> None:
        for dr, dc in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
            if 0 <= r + dr < self.size and 0 <= c + dc < self.size:
                self.lights[r + dr][c + dc] ^= 1

    def _footprint(self, cell: tuple[int, int] | None) -> list[list[int]]:
        """The board that pressing only ``cell`` (or nothing, for None) would give."""
        board = [[0] * self.size for _ in range(self.size)]
        if cell is not None:
            r, c = cell
            for rr, cc in ((r, c), (r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                if 0 <= rr < self.size and 0 <= cc < self.size:
                    board[rr][cc] = 1
        return board

    def _board(self) -> str:
        header = "    " + " ".join(str(c + 1) for c in range(self.size))
        rows = [
            f"{r + 1:>2}  " + " ".join(".#"[v] for v in line) for r, line in enumerate(self.lights)
        ]
        lit = sum(map(sum, self.lights))
        return "\n".join([header, *rows, f"{lit} light(s) on."])

    def _step(self, action: str):
        found = _PRESS.fullmatch(extract_answer(action)[:50].strip().lower())
        if not found:
            return self.not_understood(f"Write 'press ROW COL', e.g. 'press 2 3'.\n{self._board()}")
        r, c = int(found.group(1)) - 1, int(found.group(2)) - 1
        if not (0 <= r < self.size and 0 <= c < self.size):
            return f"Rows and columns run from 1 to {self.size}.\n{self._board()}", 0.0, False
        self._toggle(r, c)
        if not any(map(any, self.lights)):
            return f"You press {r + 1} {c + 1}: every light is off. Solved!", 1.0, True
        return f"You press {r + 1} {c + 1}.\n{self._board()}", 0.0, False

    # hole: rule: the privileged hint (never every cell to press)
    def hint(self) -> str:
        r, c = self.pressed[0]
        return (
            f"Pressing the cell in row {r + 1}, column {c + 1} is part of a solution that "
            f"needs {len(self.pressed)} presses in all (the order does not matter)."
        )

    def solution(self) -> list[str]:
        return [f"press {r + 1} {c + 1}" for r, c in self.pressed]
