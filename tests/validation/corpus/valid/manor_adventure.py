# expect: valid
"""A small parser-driven text adventure: find a key and a lamp, unlock a door, fetch the
treasure from a dark room, and carry it out through the front door.

The manor is a random spanning tree over a grid of rooms, so every seed has a different
layout. The reference walkthrough is planned by breadth-first search over the map.
"""

from __future__ import annotations

from collections import deque

from spade_envs import TextEnv

ROOM_NAMES = [
    "Foyer",
    "Library",
    "Pantry",
    "Gallery",
    "Chapel",
    "Armoury",
    "Conservatory",
    "Scullery",
    "Study",
    "Ballroom",
    "Larder",
    "Observatory",
    "Billiard Room",
    "Nursery",
]
DIRECTIONS = {"north": (-1, 0), "south": (1, 0), "east": (0, 1), "west": (0, -1)}
SHORT = {"n": "north", "s": "south", "e": "east", "w": "west"}
OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}
JUNK = ["candlestick", "teacup", "umbrella", "globe", "violin", "hourglass"]


class ManorAdventure(TextEnv):
    skill = "planning"
    description = (
        "A text adventure in a manor of connected rooms. Explore with 'go north/south/"
        "east/west', pick things up with 'take ITEM', open a locked door with 'unlock "
        "DIRECTION' while holding the key, and check yourself with 'look' and 'inventory'. "
        "The treasure lies in a dark room (bring the lamp); bring it back to the room you "
        "started in and type 'exit manor' to win."
    )
    max_turns = 90
    knobs = {"rows": 3, "cols": 4}

    # ----- world building ---------------------------------------------------------------
    def _reset(self) -> str:
        rows, cols = max(2, min(self.rows, 3)), max(3, min(self.cols, 4))
        cells = [(r, c) for r in range(rows) for c in range(cols)]
        names = self.rng.sample(ROOM_NAMES, len(cells))
        self.name = dict(zip(cells, names))
        self.exits: dict[tuple[int, int], dict[str, tuple[int, int]]] = {c: {} for c in cells}
        # Randomised depth-first search carves a spanning tree of doors.
        start = self.rng.choice(cells)
        stack, seen = [start], [start]
        while stack:
            here = stack[-1]
            options = []
            for d, (dr, dc) in DIRECTIONS.items():
                there = (here[0] + dr, here[1] + dc)
                if there in self.exits and there not in seen:
                    options.append((d, there))
            if not options:
                stack.pop()
                continue
            d, there = self.rng.choice(options)
            self.exits[here][d] = there
            self.exits[there][OPPOSITE[d]] = here
            seen.append(there)
            stack.append(there)
        self.entrance = self.rng.choice(cells)
        dist, parent = self._bfs(self.entrance, locked=None)
        self.vault = max(cells, key=lambda c: (dist[c], self.name[c]))
        path = self._path(parent, self.vault)  # rooms from entrance to vault
        # Lock the door leading into the vault's branch, somewhere along the path.
        i = self.rng.randrange(1, len(path))
        self.locked = (path[i - 1], path[i])
        near, _ = self._bfs(self.entrance, locked=self.locked)
        near_rooms = [c for c in cells if c in near and c != self.entrance] or [self.entrance]
        self.items: dict[tuple[int, int], list[str]] = {c: [] for c in cells}
        self.items[self.rng.choice(near_rooms)].append("key")
        self.items[self.rng.choice(near_rooms)].append("lamp")
        self.items[self.vault].append("treasure")
        for junk in self.rng.sample(JUNK, 3):
            self.items[self.rng.choice(cells)].append(junk)
        self.here = self.entrance
        self.inventory: list[str] = []
        self.unlocked = False
        return (
            "You stand inside an old manor, in the room with the front door. Somewhere "
            "inside is a treasure. Commands: go DIRECTION, take ITEM, drop ITEM, unlock "
            "DIRECTION, look, inventory, exit manor (only from this room, with the "
            "treasure).\n" + self._describe()
        )

    def _bfs(self, source, locked):
        dist, parent = {source: 0}, {source: None}
        queue = deque([source])
        while queue:
            here = queue.popleft()
            for there in self.exits[here].values():
                if locked and {here, there} == set(locked):
                    continue
                if there not in dist:
                    dist[there], parent[there] = dist[here] + 1, here
                    queue.append(there)
        return dist, parent

    @staticmethod
    def _path(parent, target) -> list:
        path = [target]
        while parent[path[-1]] is not None:
            path.append(parent[path[-1]])
        return path[::-1]

    def _is_locked(self, a, b) -> bool:
        return not self.unlocked and {a, b} == set(self.locked)

    def _dark(self) -> bool:
        return self.here == self.vault and "lamp" not in self.inventory

    def _describe(self) -> str:
        parts = [f"== {self.name[self.here]} =="]
        if self._dark():
            parts.append("It is pitch dark. You can feel doorways but see nothing else.")
        else:
            things = self.items[self.here]
            parts.append("You see: " + (", ".join(things) if things else "nothing of note") + ".")
        doors = []
        for d, there in self.exits[self.here].items():
            doors.append(f"{d} (locked)" if self._is_locked(self.here, there) else d)
        parts.append("Exits: " + ", ".join(doors) + ".")
        return "\n".join(parts)

    # ----- the parser ---------------------------------------------------------------------
    def _step(self, action: str):
        words = action[:200].lower().replace(".", " ").split()
        if not words:
            return "Say something: go, take, drop, unlock, look, inventory, exit manor.", 0.0, False
        verb, rest = words[0], " ".join(words[1:])
        if verb in SHORT or verb in DIRECTIONS:
            verb, rest = "go", SHORT.get(verb, verb)
        if verb == "go":
            rest = SHORT.get(rest, rest)
            there = self.exits[self.here].get(rest)
            if there is None:
                return f"There is no way {rest[:20] or 'there'} from here.", 0.0, False
            if self._is_locked(self.here, there):
                return f"The door {rest} is locked.", 0.0, False
            self.here = there
            return self._describe(), 0.0, False
        if verb == "look":
            return self._describe(), 0.0, False
        if verb in ("inventory", "i"):
            return "You carry: " + (", ".join(self.inventory) or "nothing") + ".", 0.0, False
        if verb in ("take", "get"):
            if self._dark():
                return "You grope around in the dark and find nothing.", 0.0, False
            if rest not in self.items[self.here]:
                return f"There is no {rest[:30] or 'such thing'} here.", 0.0, False
            self.items[self.here].remove(rest)
            self.inventory.append(rest)
            return f"Taken: {rest}.", 0.0, False
        if verb == "drop":
            if rest not in self.inventory:
                return f"You are not carrying {rest[:30] or 'that'}.", 0.0, False
            self.inventory.remove(rest)
            self.items[self.here].append(rest)
            return f"Dropped: {rest}.", 0.0, False
        if verb == "unlock":
            rest = SHORT.get(rest.removesuffix(" door"), rest.removesuffix(" door"))
            there = self.exits[self.here].get(rest)
            if there is None or not self._is_locked(self.here, there):
                return "There is no locked door that way.", 0.0, False
            if "key" not in self.inventory:
                return "You need a key for this door.", 0.0, False
            self.unlocked = True
            return f"The key turns; the door {rest} swings open.", 0.0, False
        if verb == "exit" and rest in ("manor", "", "house"):
            if self.here != self.entrance:
                return "The front door is not in this room.", 0.0, False
            if "treasure" not in self.inventory:
                return "You would go home empty-handed. The treasure is still inside.", 0.0, False
            return "You step out into the daylight with the treasure. You win!", 1.0, True
        return f"I do not understand {verb[:20]!r}.", 0.0, False

    # ----- privileged help ----------------------------------------------------------------
    def hint(self) -> str:
        key_room = next(c for c, things in self.items.items() if "key" in things)
        return (
            f"The key is in the {self.name[key_room]}; the treasure is in the dark "
            f"{self.name[self.vault]}, behind the locked door between the "
            f"{self.name[self.locked[0]]} and the {self.name[self.locked[1]]}."
        )

    def _walk(self, source, target, locked) -> list[str]:
        _, parent = self._bfs(source, locked)
        rooms = self._path(parent, target)
        moves = []
        for a, b in zip(rooms, rooms[1:]):
            moves.append("go " + next(d for d, t in self.exits[a].items() if t == b))
        return moves

    def solution(self) -> list[str]:
        where = {thing: c for c, things in self.items.items() for thing in things}
        plan, here = [], self.here
        for thing in ("key", "lamp"):
            plan += self._walk(here, where[thing], self.locked) + [f"take {thing}"]
            here = where[thing]
        before, after = self.locked
        plan += self._walk(here, before, self.locked)
        plan.append("unlock " + next(d for d, t in self.exits[before].items() if t == after))
        plan += self._walk(before, self.vault, None) + ["take treasure"]
        plan += self._walk(self.vault, self.entrance, None) + ["exit manor"]
        return plan
