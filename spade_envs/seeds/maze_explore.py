"""Find the exit of a hidden maze while seeing only the walls around you."""

from __future__ import annotations

import re
from collections import deque
from typing import ClassVar

from spade_envs import TextEnv, extract_answer

# Direction name -> (row step, column step). A dict keeps a fixed order.
MOVES = {"north": (-1, 0), "south": (1, 0), "east": (0, 1), "west": (0, -1)}


class MazeExplore(TextEnv):
    skill = "planning"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "You stand in a grid maze you cannot see; only the open directions around your "
        "cell are shown, together with your position and the exit's position. Move "
        "north, south, east or west, remember what you have explored, and reach the exit "
        "before the turns run out."
    )
    # hole: moves allowed (a 7x7 maze's farthest cell can be 48 moves away) [40, 150]
    max_turns = 60
    # hole: maze side length [2, 7]
    knobs: ClassVar[dict] = {"size": 5}

    def _reset(self) -> str:
        self.size = min(max(self.size, 2), 7)  # the farthest cell must stay within max_turns
        n = self.size
        # Each cell lists the directions with no wall.
        self.open: dict[tuple[int, int], list[str]] = {
            (r, c): [] for r in range(n) for c in range(n)
        }
        # Carve a perfect maze (one path between any two cells) with a randomized DFS.
        start = (self.rng.randrange(n), self.rng.randrange(n))
        stack, seen = [start], {start}
        while stack:
            r, c = stack[-1]
            options = [
                (name, (r + dr, c + dc))
                for name, (dr, dc) in MOVES.items()
                if (r + dr, c + dc) in self.open and (r + dr, c + dc) not in seen
            ]
            if not options:
                stack.pop()
                continue
            name, cell = self.rng.choice(options)
            self.open[(r, c)].append(name)
            self.open[cell].append(_opposite(name))
            seen.add(cell)
            stack.append(cell)
        self.pos = start
        self.path = self._shortest_path()  # the exit is the cell farthest from the start
        self.exit = self._walk(start, self.path)
        return (
            f"Maze of {n}x{n} cells; rows are numbered 1-{n} from north to south and "
            f"columns 1-{n} from west to east. The exit is at row {self.exit[0] + 1}, column "
            f"{self.exit[1] + 1}. You only see the walls of the cell you stand in. Move with "
            "'move north', 'move south', 'move east' or 'move west' (one move per turn); you "
            f"have {self.max_turns} turns.\n{self._describe()}"
        )

    def _shortest_path(self) -> list[str]:
        """BFS from the current position; the path to the farthest cell (first found)."""
        routes = {self.pos: []}
        queue = deque([self.pos])
        while queue:
            cell = queue.popleft()
            for name in MOVES:
                nxt = self._walk(cell, [name])
                if name in self.open[cell] and nxt not in routes:
                    routes[nxt] = routes[cell] + [name]
                    queue.append(nxt)
        return max(routes.values(), key=len)

    @staticmethod
    def _walk(cell: tuple[int, int], moves: list[str]) -> tuple[int, int]:
        r, c = cell
        for name in moves:
            r, c = r + MOVES[name][0], c + MOVES[name][1]
        return r, c

    def _describe(self) -> str:
        r, c = self.pos
        doors = [name for name in MOVES if name in self.open[self.pos]]
        return f"You are at row {r + 1}, column {c + 1}. Open: {', '.join(doors)}."

    def _step(self, action: str):
        words = re.findall(r"[a-z]+", extract_answer(action)[:200].lower())
        named = [w for w in MOVES if w in words]
        if len(named) != 1:
            return self.not_understood(
                "Say exactly one direction, e.g. 'move north'. " + self._describe()
            )
        direction = named[0]
        if direction not in self.open[self.pos]:
            return f"A wall blocks the way {direction}. " + self._describe(), 0.0, False
        self.pos = self._walk(self.pos, [direction])
        if self.pos == self.exit:
            return f"You step {direction} and reach the exit!", 1.0, True
        return f"You move {direction}. " + self._describe(), 0.0, False

    # hole: rule: the privileged hint (never the whole route)
    def hint(self) -> str:
        counts = {name: self.path.count(name) for name in MOVES}
        parts = ", ".join(f"{k} {name}" for name, k in counts.items() if k)
        return (
            f"The shortest route from the start takes {len(self.path)} moves: {parts} in "
            f"total, and its first move goes {self.path[0]}."
        )

    def solution(self) -> list[str]:
        return [f"move {name}" for name in self.path]


def _opposite(name: str) -> str:
    return {"north": "south", "south": "north", "east": "west", "west": "east"}[name]
