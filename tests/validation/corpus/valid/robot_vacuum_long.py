# expect: valid
"""A robot vacuum must clean every dirty tile of a furnished room: a long episode.

``max_turns`` is exactly 200 (the limit), the reference tour is often 50-90 moves, and
the reward is dense: every tile cleaned pays an equal share (the shares add up to exactly
1.0). The class is written against ``spade_envs.TextEnv`` as a module attribute, and it
has float and bool knobs.
"""

from __future__ import annotations

from collections import deque
from fractions import Fraction

import spade_envs

STEPS = {"n": (-1, 0), "s": (1, 0), "e": (0, 1), "w": (0, -1)}
WORDS = {"north": "n", "south": "s", "east": "e", "west": "w", "up": "n", "down": "s",
         "right": "e", "left": "w"}


class RobotVacuumLong(spade_envs.TextEnv):
    skill = "planning"
    description = (
        "Steer a robot vacuum around a furnished room until every dirty tile is clean. "
        "Each turn move one tile north, south, east or west (n/s/e/w); furniture blocks "
        "the way and entering a dirty tile cleans it. Each cleaned tile earns an equal "
        "share of the reward; clean them all within the turn limit."
    )
    max_turns = 200
    knobs = {"width": 12, "height": 8, "dirt": 0.4, "show_map": True}

    def _reset(self) -> str:
        w, h = max(4, min(self.width, 12)), max(4, min(self.height, 9))
        density = min(max(float(self.dirt), 0.05), 0.6)
        while True:
            self.grid = [["#" if self.rng.random() < 0.15 else "." for _ in range(w)] for _ in range(h)]
            free = [(r, c) for r in range(h) for c in range(w) if self.grid[r][c] == "."]
            if len(free) < 8:
                continue
            self.pos = self.rng.choice(free)
            reach = self._reachable(self.pos)
            dirty = [cell for cell in free if cell in reach and cell != self.pos and self.rng.random() < density]
            rows, cols = {r for r, _ in dirty}, {c for _, c in dirty}
            if len(dirty) < 6 or len(rows) < 2 or len(cols) < 2:
                continue
            self.dirty = sorted(dirty)
            self.total = len(self.dirty)
            self.tour = self._tour()
            if len(self.tour) <= self.max_turns - 10:
                break
        self.cleaned = 0
        return (
            f"Robot vacuum. {self.total} dirty tiles to clean. Move one tile per turn with "
            "n, s, e or w (or north/south/east/west)." + "\n" + self._view()
        )

    def _reachable(self, start):
        seen = {start}
        queue = deque([start])
        while queue:
            here = queue.popleft()
            for nxt in self._neighbours(here):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        return seen

    def _neighbours(self, cell):
        for key in "nsew":
            dr, dc = STEPS[key]
            r, c = cell[0] + dr, cell[1] + dc
            if 0 <= r < len(self.grid) and 0 <= c < len(self.grid[0]) and self.grid[r][c] == ".":
                yield (r, c)

    def _tour(self) -> list[str]:
        """Greedy: breadth-first search to the nearest remaining dirty tile, repeatedly."""
        here, left, moves = self.pos, list(self.dirty), []
        while left:
            parent = {here: None}
            queue = deque([here])
            goal = None
            while queue:
                cell = queue.popleft()
                if cell in left:
                    goal = cell
                    break
                for key in "nsew":
                    dr, dc = STEPS[key]
                    nxt = (cell[0] + dr, cell[1] + dc)
                    if nxt in parent or nxt not in set(self._neighbours(cell)):
                        continue
                    parent[nxt] = (cell, key)
                    queue.append(nxt)
            path = []
            cell = goal
            while parent[cell] is not None:
                cell, key = parent[cell]
                path.append(key)
            # Walking the path cleans every dirty tile it crosses.
            for key in reversed(path):
                dr, dc = STEPS[key]
                here = (here[0] + dr, here[1] + dc)
                if here in left:
                    left.remove(here)
                moves.append(key)
        return moves

    def _view(self) -> str:
        dirty = set(self.dirty)
        if not self.show_map:
            open_ = set(self._neighbours(self.pos))
            around = [k for k in "nsew" if (self.pos[0] + STEPS[k][0], self.pos[1] + STEPS[k][1]) in open_]
            return f"Open directions: {', '.join(around)}. Dirty tiles left: {len(dirty)}."
        rows = []
        for r, row in enumerate(self.grid):
            rows.append("".join("R" if (r, c) == self.pos else "*" if (r, c) in dirty else t
                                for c, t in enumerate(row)))
        return "Room (R robot, * dirt, # furniture, . clean floor; north is up):\n" + "\n".join(rows)

    def _step(self, action: str):
        word = action[:40].strip().lower().strip(".!")
        key = WORDS.get(word, word)
        if key not in STEPS:
            return "Move with n, s, e or w.", 0.0, False
        dr, dc = STEPS[key]
        nxt = (self.pos[0] + dr, self.pos[1] + dc)
        if nxt not in set(self._neighbours(self.pos)):
            return "Bump! Furniture or a wall is in the way.\n" + self._view(), 0.0, False
        self.pos = nxt
        if nxt not in self.dirty:
            return self._view(), 0.0, False
        self.dirty.remove(nxt)
        self.cleaned += 1
        reward = float(Fraction(self.cleaned, self.total)) - float(Fraction(self.cleaned - 1, self.total))
        if not self.dirty:
            return "Every tile is clean. Done!", reward, True
        return f"Slurp! {len(self.dirty)} dirty tiles left.\n" + self._view(), reward, False

    def hint(self) -> str:
        far = max(self.dirty, key=lambda cell: abs(cell[0] - self.pos[0]) + abs(cell[1] - self.pos[1]))
        return (
            f"Sweep systematically instead of chasing single tiles; the farthest dirty tile is "
            f"row {far[0] + 1}, column {far[1] + 1} (counting from the top left). A greedy "
            f"nearest-first tour needs {len(self.tour)} moves."
        )

    def solution(self) -> list[str]:
        return list(self.tour)
