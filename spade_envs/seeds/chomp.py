"""Chomp: bite a chocolate bar from the bottom-right; whoever is left with the poison loses.

The bar is a seeded rectangle of at most 4x5 squares with the poisoned square at row 1,
column 1. Strategy stealing proves the first player (player_0) can always force a win on
a rectangle, but says nothing about *how*: ``best_move`` searches every position (a 4x5
bar has only 126 of them) with memoisation.
"""

from __future__ import annotations

import re
from functools import cache
from typing import ClassVar

from spade_envs import IllegalMove, TextGame

MOVE = re.compile(r"row ?([0-9]{1,2}),? ?col(?:umn)? ?([0-9]{1,2})")

Bar = tuple[int, ...]  # squares left in each row, top to bottom (never increasing)


def _bite(bar: Bar, row: int, col: int) -> Bar:
    """Eat the square (row, col) (1-based) and every square below and to the right of it."""
    rows = [n if r < row - 1 else min(n, col - 1) for r, n in enumerate(bar)]
    return tuple(n for n in rows if n)


def _bites(bar: Bar) -> list[tuple[int, int]]:
    """Every legal bite, row by row: any remaining square except the poisoned one."""
    return [(r + 1, c + 1) for r, n in enumerate(bar) for c in range(n) if (r, c) != (0, 0)]


@cache
def _to_move_wins(bar: Bar) -> bool:
    """Whether the player to move can force a win; facing the poison alone is a loss."""
    return any(not _to_move_wins(_bite(bar, r, c)) for r, c in _bites(bar))


class Chomp(TextGame):
    skill = "logic"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "Chomp: a rectangular chocolate bar whose top-left square (row 1, column 1) is "
        "poisoned. Players alternate choosing a remaining square, written 'row R col C'; "
        "that square and every square below and to the right of it are eaten. The poisoned "
        "square cannot be chosen while others remain: the player left with only the poison "
        "loses. The first player can always force a win."
    )
    num_players = 2
    # hole: moves allowed in one game, both players together [30, 100]
    max_turns = 50
    # hole: largest bar: rows (2-5) and columns (2-6), drawn at random up to these [2, 6]
    knobs: ClassVar[dict[str, int]] = {"max_rows": 4, "max_cols": 5}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("2 <= max_rows <= 5", "2 <= max_cols <= 6")

    def _reset(self) -> None:
        rows = self.rng.randint(2, min(max(self.max_rows, 2), 5))
        cols = self.rng.randint(2, min(max(self.max_cols, 2), 6))
        self.shape = (rows, cols)
        self.bar: Bar = (cols,) * rows

    def _render_bar(self) -> str:
        height, width = self.shape
        lines = ["       " + " ".join(str(c + 1) for c in range(width)) + "  (columns)"]
        for r in range(height):
            n = self.bar[r] if r < len(self.bar) else 0
            squares = ["P" if (r, c) == (0, 0) else "#" if c < n else "." for c in range(width)]
            lines.append(f"row {r + 1}  " + " ".join(squares))
        return "\n".join(lines)

    def _observe(self, agent: str) -> str:
        turn = "your move" if agent == self.agent_selection else "waiting"
        return (
            "Chomp. Remaining bar ('#' a square, 'P' the poisoned square, '.' eaten):\n"
            f"{self._render_bar()}\n"
            f"You are {agent} ({turn}). Choosing a square eats it and everything below and "
            "to its right; whoever is left with only the poison loses. "
            "Move as \\boxed{row R col C}."
        )

    def _move(self, agent: str, action: str):
        found = MOVE.fullmatch(self.parse_move(action).strip(" ."))
        if not found:
            raise IllegalMove("write the square as 'row R col C' with two whole numbers")
        row, col = int(found.group(1)), int(found.group(2))
        if not (1 <= row <= len(self.bar) and 1 <= col <= self.bar[row - 1]):
            raise IllegalMove(f"there is no square at row {row} col {col} any more")
        if (row, col) == (1, 1):
            raise IllegalMove("the poisoned square cannot be chosen while other squares remain")
        self.bar = _bite(self.bar, row, col)
        if self.bar == (1,):  # only the poison is left for the next player
            return {a: (1.0 if a == agent else 0.0) for a in self.agents}
        return None

    def legal_moves(self, agent: str) -> list[str]:
        return [f"row {r} col {c}" for r, c in _bites(self.bar)]

    def best_move(self, agent: str) -> str:
        bites = _bites(self.bar)
        if not bites:
            return "row 1 col 1"
        for r, c in bites:
            if not _to_move_wins(_bite(self.bar, r, c)):
                return f"row {r} col {c}"
        r = len(self.bar)  # lost anyway: take the smallest bite and hope for a mistake
        return f"row {r} col {self.bar[-1]}"

    def hint(self, agent: str) -> str:
        bites = _bites(self.bar)
        good = sum(1 for r, c in bites if not _to_move_wins(_bite(self.bar, r, c)))
        if not good:
            return "Every bite loses against perfect play: take small bites and wait for a mistake."
        return (
            f"Bites that leave the opponent a lost position: {good} of your {len(bites)}. "
            "Lost positions to aim for: just the top row and left column with arms of equal "
            "length, or two rows where the top row is exactly one square longer."
        )
