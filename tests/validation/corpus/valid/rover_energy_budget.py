# expect: valid
"""Drive a Mars rover to a beacon across costly terrain on a tight battery.

The episode is cut short (truncated, not terminated) when the battery can no longer pay
for any move: ``_out_of_time`` is overridden. ``_step`` returns the 4-tuple form with an
info dict carrying the battery level. The battery is the Dijkstra optimum plus a small
margin, so wandering or greedy driving runs it flat.
"""

from __future__ import annotations

import heapq

from spade_envs import TextEnv

TERRAIN = {".": ("plain", 1), "~": ("ice", 2), ":": ("sand", 4), "#": ("rock", None)}
HEADINGS = {"north": (-1, 0), "south": (1, 0), "east": (0, 1), "west": (0, -1)}


class RoverEnergyBudget(TextEnv):
    skill = "planning"
    description = (
        "A rover on a gridded patch of Mars must reach a beacon. Entering a square costs "
        "battery: plain 1, ice 2, sand 4; rock cannot be crossed. The battery holds only a "
        "little more than the cheapest route needs. Drive one square per turn with "
        "'drive north/south/east/west'; the mission ends when you reach the beacon or the "
        "battery cannot pay for another move."
    )
    max_turns = 40
    knobs = {"size": 6, "margin": 1}

    def _reset(self) -> str:
        n = max(4, min(self.size, 8))
        while True:
            self.grid = [
                [self.rng.choices(".~:#", weights=[5, 2, 2, 2])[0] for _ in range(n)]
                for _ in range(n)
            ]
            self.pos = (self.rng.randrange(n), self.rng.randrange(n))
            self.beacon = (self.rng.randrange(n), self.rng.randrange(n))
            if self.pos[0] == self.beacon[0] or self.pos[1] == self.beacon[1]:
                continue  # never in a straight line from the start
            self.grid[self.pos[0]][self.pos[1]] = "."
            self.grid[self.beacon[0]][self.beacon[1]] = "."
            cost, route = self._cheapest()
            if route and len(route) >= 3:
                break
        self.route = route
        self.battery = cost + max(0, self.margin)
        self.optimum = cost
        return (
            "Mars rover. Map (R rover, B beacon; . plain 1, ~ ice 2, : sand 4, # rock):\n"
            f"{self._map()}\nBattery: {self.battery}. North is up. Drive with "
            "'drive DIRECTION' (north, south, east or west), one square per turn."
        )

    def _cost(self, cell: tuple[int, int]) -> int | None:
        n = len(self.grid)
        if not (0 <= cell[0] < n and 0 <= cell[1] < n):
            return None
        return TERRAIN[self.grid[cell[0]][cell[1]]][1]

    def _cheapest(self) -> tuple[int, list[str]]:
        """Dijkstra from the rover to the beacon: (cost, headings), or (0, []) if cut off."""
        best = {self.pos: 0}
        back: dict[tuple[int, int], tuple[tuple[int, int], str]] = {}
        heap = [(0, self.pos)]
        while heap:
            spent, cell = heapq.heappop(heap)
            if cell == self.beacon:
                headings = []
                while cell != self.pos:
                    cell, heading = back[cell]
                    headings.append(heading)
                return spent, headings[::-1]
            if spent > best.get(cell, spent):
                continue
            for heading, (dr, dc) in HEADINGS.items():
                nxt = (cell[0] + dr, cell[1] + dc)
                step = self._cost(nxt)
                if step is None:
                    continue
                if spent + step < best.get(nxt, 10**9):
                    best[nxt] = spent + step
                    back[nxt] = (cell, heading)
                    heapq.heappush(heap, (spent + step, nxt))
        return 0, []

    def _map(self) -> str:
        rows = []
        for r, row in enumerate(self.grid):
            marks = ["R" if (r, c) == self.pos else "B" if (r, c) == self.beacon else t
                     for c, t in enumerate(row)]
            rows.append("  " + " ".join(marks))
        return "\n".join(rows)

    def _affordable(self) -> bool:
        for dr, dc in HEADINGS.values():
            step = self._cost((self.pos[0] + dr, self.pos[1] + dc))
            if step is not None and step <= self.battery:
                return True
        return False

    def _out_of_time(self) -> bool:
        return not self._affordable()

    def _step(self, action: str):
        words = action[:100].lower().replace(",", " ").split()
        heading = next((w for w in words if w in HEADINGS), None)
        info = {"battery": self.battery}
        if not words or words[0] != "drive" or heading is None:
            return "Command not understood. Use 'drive north', 'drive east', ...", 0.0, False, info
        dr, dc = HEADINGS[heading]
        target = (self.pos[0] + dr, self.pos[1] + dc)
        step = self._cost(target)
        if step is None:
            return f"Blocked: rock or the edge of the map lies {heading}.", 0.0, False, info
        if step > self.battery:
            return f"Not enough battery to enter that square (needs {step}).", 0.0, False, info
        self.battery -= step
        self.pos = target
        info = {"battery": self.battery}
        if self.pos == self.beacon:
            return f"Beacon reached with {self.battery} battery to spare. Mission complete!", 1.0, True, info
        message = f"Moved {heading}.\n{self._map()}\nBattery: {self.battery}."
        if not self._affordable():
            message += " The battery is too low to move again. Mission over."
        return message, 0.0, False, info

    def hint(self) -> str:
        return (
            f"The cheapest route costs {self.optimum} battery and has {len(self.route)} "
            "moves; it is often cheaper to skirt sand on plain or ice than to cut across it."
        )

    def solution(self) -> list[str]:
        return [f"drive {h}" for h in self.route]
