# expect: fuzz
"""Navigate a small dungeon by commands; the parser indexes the first word unguarded."""

from __future__ import annotations

from spade_envs import TextEnv

_DIRS = {"north": (0, -1), "south": (0, 1), "east": (1, 0), "west": (-1, 0)}


class DungeonWalk(TextEnv):
    skill = "planning"
    description = (
        "Walk through a 5x5 dungeon to the stairs. Commands: 'go north', 'go south', "
        "'go east', 'go west', and 'look'. Walls stop you; reach the stairs in 14 turns."
    )
    max_turns = 14

    def _reset(self) -> str:
        self.pos = (0, 0)
        self.stairs = (self.rng.randint(2, 4), self.rng.randint(2, 4))
        return (
            "You stand in the north-west corner (0, 0) of a 5x5 dungeon; x grows east, y grows "
            "south. Find the stairs. Commands: go north|south|east|west, look."
        )

    def _step(self, action: str):
        words = action.strip().lower().split()
        verb = words[0]
        if verb == "look":
            return f"You are at {self.pos}. The stairs are at {self.stairs}.", 0.0, False
        if verb != "go" or len(words) != 2 or words[1] not in _DIRS:
            return "Unknown command. Try 'go east' or 'look'.", 0.0, False
        dx, dy = _DIRS[words[1]]
        x, y = self.pos[0] + dx, self.pos[1] + dy
        if not (0 <= x < 5 and 0 <= y < 5):
            return "A wall blocks the way.", 0.0, False
        self.pos = (x, y)
        if self.pos == self.stairs:
            return "You found the stairs!", 1.0, True
        return f"You move {words[1]} to {self.pos}.", 0.0, False

    def hint(self) -> str:
        return "Use 'look' to see where the stairs are, then walk there."

    def solution(self) -> list[str]:
        x, y = self.stairs
        return ["look"] + ["go east"] * x + ["go south"] * y
