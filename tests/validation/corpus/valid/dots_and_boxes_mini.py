# expect: valid
"""Dots and Boxes on a 3x3 grid of dots (four boxes), from a seeded opening.

Completing a box scores it and earns another move, so the turn order is not a plain
round robin: ``_next_agent`` is overridden. Rewards are +1 (more boxes), -1 (fewer)
and 0 (a 2-2 tie). The start is chosen so that player_0, to move, wins by force
against every legal reply. (A pass would be a real weapon in this game, and an illegal
move does forfeit the turn, so the guarantee is against opponents that move legally, as
the seat wrappers' opponents do.)
"""

from __future__ import annotations

import re
from functools import lru_cache

from spade_envs import IllegalMove, TextGame

# Edges are pairs of dots; a dot is (column, row) with columns a-c and rows 1-3.
EDGES: list[tuple[tuple[int, int], tuple[int, int]]] = []
for _row in range(3):
    for _col in range(2):
        EDGES.append(((_col, _row), (_col + 1, _row)))  # horizontal
for _row in range(2):
    for _col in range(3):
        EDGES.append(((_col, _row), (_col, _row + 1)))  # vertical
INDEX = {edge: i for i, edge in enumerate(EDGES)}
# The four edges of each box (box at column i, row j).
BOXES = [
    (
        INDEX[((i, j), (i + 1, j))],
        INDEX[((i, j + 1), (i + 1, j + 1))],
        INDEX[((i, j), (i, j + 1))],
        INDEX[((i + 1, j), (i + 1, j + 1))],
    )
    for j in range(2)
    for i in range(2)
]
FULL = (1 << len(EDGES)) - 1
BOX_MASKS = [sum(1 << e for e in box) for box in BOXES]
# For each edge, the bit masks of the (one or two) boxes it borders.
EDGE_BOXES = [[m for box, m in zip(BOXES, BOX_MASKS) if e in box] for e in range(len(EDGES))]
MOVE = re.compile(r"([a-c])\s*([1-3])\s*(?:-|to|–|—)?\s*([a-c])\s*([1-3])")


def _dot(d: tuple[int, int]) -> str:
    return "abc"[d[0]] + str(d[1] + 1)


def _name(i: int) -> str:
    a, b = EDGES[i]
    return f"{_dot(a)}-{_dot(b)}"


def _closed(mask: int, edge: int) -> int:
    """How many boxes the edge completes when added to ``mask``."""
    after = mask | (1 << edge)
    return sum(1 for m in EDGE_BOXES[edge] if after & m == m)


@lru_cache(maxsize=None)
def _value(mask: int, p0_to_move: bool) -> int:
    """player_0's net future boxes with best play by both sides."""
    if mask == FULL:
        return 0
    options = []
    for e in range(len(EDGES)):
        if mask >> e & 1:
            continue
        k = _closed(mask, e)
        if p0_to_move:
            options.append(k + _value(mask | 1 << e, True if k else False))
        else:
            options.append(-k + _value(mask | 1 << e, False if k else True))
    if p0_to_move:
        return max(options)
    return min(options)


_value(0, True)  # fill the table once at import (4096 positions), so every call is fast


class DotsAndBoxesMini(TextGame):
    skill = "planning"
    description = (
        "Dots and Boxes on a 3x3 grid of dots. Players take turns drawing a line between two "
        "neighbouring dots (e.g. 'a1-b1' or 'b2-b3'). Whoever draws the fourth side of a box "
        "owns it and must move again. When all 12 lines are drawn, more boxes wins. The game "
        "starts from a position where player_0, to move, can force a win."
    )
    num_players = 2
    max_turns = 40
    reward_range = (-1.0, 1.0)

    def _reset(self) -> None:
        while True:
            drawn = self.rng.sample(range(len(EDGES)), self.rng.randint(3, 6))
            mask = sum(1 << e for e in drawn)
            sides = [sum(mask >> e & 1 for e in box) for box in BOXES]
            if max(sides) >= 3:
                continue  # no free boxes at the start
            scores = [
                _value(mask | 1 << e, bool(_closed(mask, e))) + _closed(mask, e)
                for e in range(len(EDGES)) if not mask >> e & 1
            ]
            winning = sum(1 for s in scores if s > 0)
            if winning and 2 * winning <= len(scores):  # winnable, and most moves lose it
                break
        self.mask = mask
        self.owner: list[str | None] = [None] * 4
        self.again = False

    # ----- turn order: completing a box earns another move ------------------------------
    def _next_agent(self, agent: str) -> str:
        if self.again:
            return agent
        return super()._next_agent(agent)

    def _move(self, agent: str, action: str):
        self.again = False
        found = MOVE.search(self.parse_move(action)[:100])
        if not found:
            raise IllegalMove("name a line by its two dots, like a1-b1")
        a = ("abc".index(found.group(1)), int(found.group(2)) - 1)
        b = ("abc".index(found.group(3)), int(found.group(4)) - 1)
        edge = INDEX.get((a, b), INDEX.get((b, a)))
        if edge is None:
            raise IllegalMove(f"{_dot(a)} and {_dot(b)} are not neighbouring dots")
        if self.mask >> edge & 1:
            raise IllegalMove(f"{_name(edge)} is already drawn")
        self.mask |= 1 << edge
        for i, box in enumerate(BOXES):
            if self.owner[i] is None and all(self.mask >> e & 1 for e in box):
                self.owner[i] = agent
                self.again = True
        if self.mask == FULL:
            mine = self.owner.count("player_0")
            theirs = self.owner.count("player_1")
            sign = (mine > theirs) - (mine < theirs)
            return {"player_0": float(sign), "player_1": float(-sign)}
        return None

    # ----- views ------------------------------------------------------------------------
    def _board(self) -> str:
        lines = ["    a   b   c"]
        for row in range(3):
            text = f"{row + 1}   ."
            for col in range(2):
                e = INDEX[((col, row), (col + 1, row))]
                text += ("---" if self.mask >> e & 1 else "   ") + "."
            lines.append(text)
            if row < 2:
                text = "    "
                for col in range(3):
                    e = INDEX[((col, row), (col, row + 1))]
                    text += "|" if self.mask >> e & 1 else " "
                    if col < 2:
                        who = self.owner[row * 2 + col]
                        text += f" {who[-1]} " if who else "   "
                lines.append(text)
        return "\n".join(lines)

    def _observe(self, agent: str) -> str:
        boxes = ", ".join(f"{a}: {self.owner.count(a)}" for a in self.possible_agents)
        status = "your move" if agent == self.agent_selection else "waiting"
        if self.mask == FULL:
            status = "game over"
        return (
            f"Dots and Boxes (a digit inside a box is its owner's seat number):\n{self._board()}\n"
            f"Boxes: {boxes}. You are {agent} ({status}). Draw a line between two neighbouring "
            "dots with \\boxed{a1-b1}; completing a box gives you another move."
        )

    # ----- reference play ---------------------------------------------------------------
    def legal_moves(self, agent: str) -> list[str]:
        return [_name(e) for e in range(len(EDGES)) if not self.mask >> e & 1]

    def _scored(self, agent: str) -> list[tuple[int, int]]:
        """(player_0's net future boxes after the move, edge) for each free edge."""
        p0 = agent == "player_0"
        result = []
        for e in range(len(EDGES)):
            if self.mask >> e & 1:
                continue
            k = _closed(self.mask, e)
            mover_again = bool(k)
            after_p0 = p0 if mover_again else not p0
            result.append(((k if p0 else -k) + _value(self.mask | 1 << e, after_p0), e))
        return result

    def best_move(self, agent: str) -> str:
        scored = self._scored(agent)
        if not scored:
            return "a1-b1"
        pick = max(scored) if agent == "player_0" else min(scored, key=lambda s: (s[0], -s[1]))
        return _name(pick[1])

    def hint(self, agent: str) -> str:
        scored = self._scored(agent)
        if not scored:
            return "The game is over."
        if agent == "player_0":
            good = sum(1 for s, _ in scored if s > 0)
            if good:
                return (
                    f"{good} of your {len(scored)} possible lines keep a forced win. Never "
                    "draw the third side of a box unless you must; count the chains."
                )
        return "Avoid drawing the third side of a box: your opponent would take it."
