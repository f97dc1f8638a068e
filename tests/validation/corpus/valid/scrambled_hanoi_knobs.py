# expect: valid
"""Tower of Hanoi from a scrambled (but legal) position, with difficulty knobs.

The turn budget depends on the knobs, so ``max_turns`` is set per instance in
``__init__`` after the base class has applied the knobs: 2**disks - 1 moves always
suffice from any legal position, plus ``slack`` spare turns.
"""

from __future__ import annotations

import re
from typing import Any

from spade_envs import TextEnv, extract_answer

PEGS = "ABC"
MOVE = re.compile(r"^\s*(?:move\s+)?(?:disk\s+\d+\s+)?(?:from\s+)?([abc])\s*(?:->|→|to|-|,|\s)\s*([abc])\s*$")


class ScrambledHanoiKnobs(TextEnv):
    skill = "planning"
    description = (
        "Disks of different sizes sit on three pegs A, B and C, smaller disks always on "
        "larger ones, in a scrambled but legal arrangement. Gather all disks on the target "
        "peg by moving one top disk per turn ('A C' moves the top disk of A onto C); a disk "
        "may never sit on a smaller one. The turn budget is tight."
    )
    max_turns = 23  # budget for the default knobs (15 + 8); instances recompute it
    knobs = {"disks": 4, "slack": 8}

    def __init__(self, render_mode: str | None = None, **knobs: Any):
        super().__init__(render_mode=render_mode, **knobs)
        self.disks = max(2, min(int(self.disks), 6))
        self.slack = max(0, min(int(self.slack), 20))
        self.max_turns = (2**self.disks - 1) + self.slack

    def _reset(self) -> str:
        while True:
            where = [self.rng.randrange(3) for _ in range(self.disks)]  # where[d]: peg of disk d+1
            self.target = self.rng.randrange(3)
            if any(p != self.target for p in where):
                break
        self.pegs: list[list[int]] = [[], [], []]
        for disk in range(self.disks, 0, -1):  # largest first, so each peg is ordered
            self.pegs[where[disk - 1]].append(disk)
        self.plan = self._plan()
        return (
            f"Tower of Hanoi with {self.disks} disks (1 = smallest).\n{self._show()}\n"
            f"Move every disk onto peg {PEGS[self.target]}. One move per turn: name the "
            f"source and destination pegs, like \\boxed{{A C}}. You have {self.max_turns} "
            "turns."
        )

    def _show(self) -> str:
        return "\n".join(
            f"  {PEGS[i]}: " + (" ".join(map(str, peg)) if peg else "(empty)") + "  (bottom to top)"
            for i, peg in enumerate(self.pegs)
        )

    def _plan(self) -> list[tuple[int, int]]:
        """Optimal moves gathering every disk on the target peg from the current position."""
        where = {d: i for i, peg in enumerate(self.pegs) for d in peg}
        moves: list[tuple[int, int]] = []

        def gather(disk: int, dest: int) -> None:
            # Put disks 1..disk onto ``dest`` (they may be spread over all pegs).
            if disk == 0:
                return
            if where[disk] == dest:
                gather(disk - 1, dest)
                return
            spare = 3 - where[disk] - dest
            gather(disk - 1, spare)
            moves.append((where[disk], dest))
            where[disk] = dest
            tower(disk - 1, spare, dest)

        def tower(disk: int, source: int, dest: int) -> None:
            # Disks 1..disk form a tower on ``source``: the classic recursion.
            if disk == 0:
                return
            spare = 3 - source - dest
            tower(disk - 1, source, spare)
            moves.append((source, dest))
            where[disk] = dest
            tower(disk - 1, spare, dest)

        gather(self.disks, self.target)
        return moves

    def _step(self, action: str):
        found = MOVE.match(extract_answer(action)[:60].lower())
        if not found:
            return "Write a move as two peg letters, like \\boxed{A C}.", 0.0, False
        src, dst = PEGS.lower().index(found.group(1)), PEGS.lower().index(found.group(2))
        if src == dst or not self.pegs[src]:
            return f"Illegal: nothing to move from {PEGS[src]} to {PEGS[dst]}.\n{self._show()}", 0.0, False
        disk = self.pegs[src][-1]
        if self.pegs[dst] and self.pegs[dst][-1] < disk:
            return f"Illegal: disk {disk} cannot go on a smaller disk.\n{self._show()}", 0.0, False
        self.pegs[dst].append(self.pegs[src].pop())
        if len(self.pegs[self.target]) == self.disks:
            return f"All disks are on {PEGS[self.target]}. Solved in {self.turn} turns!", 1.0, True
        left = self.max_turns - self.turn
        return f"Moved disk {disk} to {PEGS[dst]}.\n{self._show()}\nTurns left: {left}.", 0.0, False

    def hint(self) -> str:
        largest_away = max(
            d for i, peg in enumerate(self.pegs) for d in peg if i != self.target
        )
        return (
            f"Work from the biggest disk that is not yet home (disk {largest_away}): first "
            "clear every smaller disk onto the peg that is neither its peg nor the target. "
            f"An optimal solution takes {len(self.plan)} moves."
        )

    def solution(self) -> list[str]:
        return [f"\\boxed{{{PEGS[a]} {PEGS[b]}}}" for a, b in self.plan]
