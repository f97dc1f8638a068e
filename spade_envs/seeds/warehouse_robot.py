"""Drive a warehouse robot to fetch a named item and deliver it to the dock.

The floor is a grid with columns of shelves (each with one gap) between open aisles;
rows 0 and the last row are always open, so every floor cell is reachable. A move
slides up to ``steps`` cells and stops at the first shelf or wall, so good plans use
few long moves. The reference solution is a breadth-first search over such slides.
"""

from __future__ import annotations

import json
from typing import ClassVar, Literal

from spade_envs import ToolEnv, ToolError

# hole: item names (at least 6 distinct, ideally with different first letters)
_ITEMS = ["anvil", "bucket", "crate", "easel", "fan", "globe", "harp", "kettle", "lamp"]
Direction = Literal["north", "south", "east", "west"]
_STEPS = {"north": (-1, 0), "south": (1, 0), "east": (0, 1), "west": (0, -1)}


def _call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


class WarehouseRobot(ToolEnv):
    skill = "planning"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A robot stands on a warehouse floor with shelves, loose items and a dock. Use "
        "look() to see the map, move(direction, steps) to slide along aisles, pick() to lift "
        "the item under the robot and drop() to put it down. Dropping the requested item on "
        "the dock wins; shipping any other item ends the episode with no reward."
    )
    # hole: turns allowed (look, routes there and back, pick, drop) [15, 40]
    max_turns = 18
    # hole: floor width (5-9), height (4-8) and loose items (1-6) [1, 9]
    knobs: ClassVar[dict[str, int]] = {"width": 7, "height": 6, "items": 3}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = (
        "5 <= width <= 9",
        "4 <= height <= 8",
        "1 <= items <= 6",
        "items <= len(_ITEMS)",
        "len(_ITEMS) >= 6",
    )

    def _reset(self) -> str:
        self.w, self.h = max(5, min(self.width, 9)), max(4, min(self.height, 8))
        self.shelves: set[tuple[int, int]] = set()
        for col in range(1, self.w - 1, 2):
            gap = self.rng.randint(1, self.h - 2)
            self.shelves.update((row, col) for row in range(1, self.h - 1) if row != gap)
        free = [(r, c) for r in range(self.h) for c in range(self.w) if (r, c) not in self.shelves]
        bottom = [cell for cell in free if cell[0] == self.h - 1]
        self.dock = self.rng.choice(bottom)
        count = max(1, min(self.items, 6))
        spots = self.rng.sample([cell for cell in free if cell != self.dock], count + 1)
        self.robot = spots.pop()
        names = self.rng.sample(_ITEMS, len(spots))
        self.floor = dict(zip(names, spots))  # item name -> cell
        self.target = self.rng.choice(names)
        self.carrying: str | None = None
        return (
            f"Fetch the {self.target} and deliver it to the dock (D). Tools: look() shows the "
            "map, move(direction, steps) slides north/south/east/west until a shelf or wall, "
            "pick() lifts the item under you, drop() puts it down. Dropping an item on the "
            "dock ships it: the right item wins, a wrong one ends the episode."
        )

    def _blocked(self, cell: tuple[int, int]) -> bool:
        r, c = cell
        return not (0 <= r < self.h and 0 <= c < self.w) or cell in self.shelves

    def _item_at(self, cell: tuple[int, int]) -> str | None:
        return next((name for name, spot in self.floor.items() if spot == cell), None)

    def tool_look(self) -> str:
        """Show the floor map, the item legend and what the robot carries."""
        rows = []
        for r in range(self.h):
            row = ""
            for c in range(self.w):
                item = self._item_at((r, c))
                row += (
                    "R"
                    if (r, c) == self.robot
                    else "D"
                    if (r, c) == self.dock
                    else "#"
                    if (r, c) in self.shelves
                    else item[0]
                    if item
                    else "."
                )
            rows.append(f"{r} {row}")
        legend = ", ".join(f"{name[0]} = {name}" for name in self.floor) or "no loose items"
        here = self._item_at(self.robot) or "nothing"
        header = "  " + "".join(str(c) for c in range(self.w))
        key = f"R = you (row {self.robot[0]}, column {self.robot[1]}), D = dock, # = shelf"
        status = f"Under you: {here}. Carrying: {self.carrying or 'nothing'}."
        return "\n".join([header, *rows, f"{key}; {legend}.", status])

    def tool_move(self, direction: Direction, steps: int = 1) -> str:
        """Slide the robot in a straight line; it stops early at a shelf or wall.

        Args:
            direction: north (up the map), south, east (right) or west.
            steps: How many cells to move, 1 to 10.
        """
        if not 1 <= steps <= 10:
            raise ToolError("steps must be between 1 and 10")
        dr, dc = _STEPS[direction]
        moved = 0
        while moved < steps and not self._blocked((self.robot[0] + dr, self.robot[1] + dc)):
            self.robot = (self.robot[0] + dr, self.robot[1] + dc)
            moved += 1
        if moved == 0:
            raise ToolError(f"blocked: a shelf or wall is right to the {direction}")
        stop = "" if moved == steps else f" (stopped after {moved}: blocked)"
        return f"Moved {direction} to row {self.robot[0]}, column {self.robot[1]}{stop}."

    def tool_pick(self) -> str:
        """Lift the item the robot is standing on (it can carry one)."""
        if self.carrying:
            raise ToolError(f"already carrying the {self.carrying}; drop it first")
        item = self._item_at(self.robot)
        if item is None:
            raise ToolError("there is no item here; look() shows where items are")
        self.carrying = item
        del self.floor[item]
        return f"Picked up the {item}."

    def tool_drop(self) -> str:
        """Put down the carried item; on the dock this ships it."""
        if not self.carrying:
            raise ToolError("not carrying anything")
        item, self.carrying = self.carrying, None
        if self.robot == self.dock:
            if item == self.target:
                self.end_episode(1.0, "Delivered the right item. Well done!")
            else:
                self.end_episode(0.0, f"Shipped the {item}, but the {self.target} was ordered.")
            return f"Dropped the {item} on the dock."
        if self._item_at(self.robot):
            self.carrying = item
            raise ToolError("another item already lies here; drop it somewhere else")
        self.floor[item] = self.robot
        return f"Dropped the {item} at row {self.robot[0]}, column {self.robot[1]}."

    def _route(self, start: tuple[int, int], goal: tuple[int, int]) -> list[tuple[str, int]]:
        """Fewest slide moves from start to goal (breadth-first search)."""
        parent: dict[tuple[int, int], tuple] = {start: ()}
        queue = [start]
        for cell in queue:
            for direction, (dr, dc) in _STEPS.items():
                nxt = cell
                for steps in range(1, 11):
                    nxt = (nxt[0] + dr, nxt[1] + dc)
                    if self._blocked(nxt):
                        break
                    if nxt not in parent:
                        parent[nxt] = (cell, direction, steps)
                        queue.append(nxt)
        route, cell = [], goal
        while parent[cell]:
            cell, direction, steps = parent[cell]
            route.append((direction, steps))
        return route[::-1]

    # hole: rule: the privileged hint (never the whole route)
    def hint(self) -> str:
        route = self._route(self.robot, self.floor[self.target])
        where = self.floor[self.target]
        return (
            f"The {self.target} is at row {where[0]}, column {where[1]}; you can reach it in "
            f"{len(route)} move call(s), starting {route[0][0]}."
        )

    def solution(self) -> list[str]:
        item = self.floor[self.target]
        go = [_call("move", direction=d, steps=s) for d, s in self._route(self.robot, item)]
        back = [_call("move", direction=d, steps=s) for d, s in self._route(item, self.dock)]
        return [_call("look")] + go + [_call("pick")] + back + [_call("drop")]
