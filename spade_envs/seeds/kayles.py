"""Kayles: knock down one pin or two neighbouring pins; whoever knocks down the last pin wins.

A row of up to 14 pins with a few already down splits into segments. Each segment of
length n is an independent game with Grundy number G(n) (Sprague-Grundy theory); the
position is lost for the player to move exactly when the XOR of the segments' Grundy
numbers is 0. Seeded starts have a nonzero XOR, so player_0 can force a win.
"""

from __future__ import annotations

import re
from functools import cache, reduce
from operator import xor
from typing import ClassVar

from spade_envs import IllegalMove, TextGame

MOVE = re.compile(r"([0-9]{1,2})(?: ?- ?([0-9]{1,2}))?")


@cache
def _grundy(n: int) -> int:
    """Grundy number of a segment of n standing pins: the mex over every split a move leaves."""
    reachable = {
        _grundy(left) ^ _grundy(n - take - left) for take in (1, 2) for left in range(n - take + 1)
    }
    return next(g for g in range(n + 2) if g not in reachable)


class Kayles(TextGame):
    skill = "pattern"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "Kayles: a row of numbered pins, some already down. Players alternate knocking down "
        "either one standing pin, written '5', or two standing neighbouring pins, written "
        "'5-6'. Whoever knocks down the last pin wins. The first player can force a win; "
        "the Grundy numbers of the segments of standing pins (XORed together) show how."
    )
    num_players = 2
    # hole: moves allowed in one game, both players together [30, 100]
    max_turns = 50
    # hole: pins in the row (8-30, up to 4 fewer at random) and most pins already down [1, 30]
    knobs: ClassVar[dict[str, int]] = {"pins": 14, "knocked": 3}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("8 <= pins <= 30", "1 <= knocked <= pins - 6")

    def _reset(self) -> None:
        pins = min(max(self.pins, 8), 30)
        while True:
            n = self.rng.randint(pins - 4, pins)
            self.up = [True] * n
            down = self.rng.randint(1, min(max(self.knocked, 1), n - 2))
            for i in self.rng.sample(range(n), down):
                self.up[i] = False
            if self._total():
                return

    def _segments(self) -> list[tuple[int, int]]:
        """(first pin index, length) of each run of standing pins, left to right."""
        runs, start = [], None
        for i, standing in enumerate([*self.up, False]):
            if standing and start is None:
                start = i
            elif not standing and start is not None:
                runs.append((start, i - start))
                start = None
        return runs

    def _total(self) -> int:
        return reduce(xor, (_grundy(n) for _, n in self._segments()), 0)

    def _observe(self, agent: str) -> str:
        turn = "your move" if agent == self.agent_selection else "waiting"
        numbers = "".join(f"{i + 1:>3}" for i in range(len(self.up)))
        pins = "".join(f"{'I' if s else '.':>3}" for s in self.up)
        return (
            f"Kayles. Pins ('I' standing, '.' down):\npin{numbers}\n   {pins}\n"
            f"You are {agent} ({turn}). Knock down one standing pin or two standing neighbours; "
            "whoever knocks down the last pin wins. Move as \\boxed{5} or \\boxed{5-6}."
        )

    def _parse(self, action: str) -> list[int]:
        found = MOVE.fullmatch(self.parse_move(action).strip(" ."))
        if not found:
            raise IllegalMove("write one pin number like 5, or two neighbours like 5-6")
        pins = sorted(int(g) for g in found.groups() if g is not None)
        if len(pins) == 2 and pins[1] != pins[0] + 1:
            raise IllegalMove(f"pins {pins[0]} and {pins[1]} are not neighbours")
        for p in pins:
            if not (1 <= p <= len(self.up) and self.up[p - 1]):
                raise IllegalMove(f"pin {p} is not standing")
        return pins

    def _move(self, agent: str, action: str):
        for p in self._parse(action):
            self.up[p - 1] = False
        if not any(self.up):
            return {a: (1.0 if a == agent else 0.0) for a in self.agents}
        return None

    def legal_moves(self, agent: str) -> list[str]:
        singles = [str(i + 1) for i, s in enumerate(self.up) if s]
        pairs = [
            f"{i + 1}-{i + 2}" for i in range(len(self.up) - 1) if self.up[i] and self.up[i + 1]
        ]
        return singles + pairs

    def best_move(self, agent: str) -> str:
        total = self._total()
        for start, n in self._segments():
            want = total ^ _grundy(n)  # what this segment must become for an overall XOR of 0
            for take in (1, 2):
                for left in range(n - take + 1):
                    if _grundy(left) ^ _grundy(n - take - left) == want:
                        first = start + left + 1
                        return str(first) if take == 1 else f"{first}-{first + 1}"
        moves = self.legal_moves(agent)  # a lost position: any move, and hope
        return moves[0] if moves else "1"

    def hint(self, agent: str) -> str:
        parts = [f"length {n} has G={_grundy(n)}" for _, n in self._segments()]
        total = self._total()
        if total == 0:
            return (
                f"Segments: {'; '.join(parts)}. "
                "Their XOR is 0, so every move loses against perfect play."
            )
        return (
            f"Segments of standing pins: {'; '.join(parts)}. The XOR is {total}; a move that "
            "changes one segment so that the XOR of all Grundy numbers becomes 0 wins."
        )
