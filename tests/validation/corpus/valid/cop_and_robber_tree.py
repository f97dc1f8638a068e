# expect: valid
"""Cops and robbers on a tree of villages: an asymmetric pursuit game.

player_0 is the sheriff, player_1 the outlaw. They move alternately along roads (or
stay). On a tree the sheriff always wins by stepping toward the outlaw: the outlaw's
part of the tree shrinks with every step. The sheriff has as many moves as the tree's
height seen from the sheriff's start, which is exactly enough. Catching means standing
on the same village; the outlaw never walks into the sheriff's village (that road is
closed to it), and it wins if the sheriff runs out of moves.
"""

from __future__ import annotations

from collections import deque

from spade_envs import IllegalMove, TextGame

VILLAGES = [
    "Ashford", "Brookmere", "Coldwater", "Dunmore", "Elmstead", "Fairhaven", "Glenrock",
    "Hollowell", "Ironbridge", "Juniper", "Kettleby", "Larkspur", "Millbrook", "Northby",
]


class CopAndRobberTree(TextGame):
    skill = "planning"
    description = (
        "A sheriff (player_0) chases an outlaw (player_1) on a map of villages joined by "
        "roads with no loops. Each turn a player moves to a neighbouring village ('go "
        "Elmstead') or stays ('stay'); the sheriff moves first, and the outlaw may not enter "
        "the sheriff's village. The sheriff wins by entering the outlaw's village within a "
        "limited number of moves; otherwise the outlaw escapes."
    )
    num_players = 2
    max_turns = 40
    knobs = {"villages": 10}

    def _reset(self) -> None:
        count = max(5, min(self.villages, len(VILLAGES)))
        names = self.rng.sample(VILLAGES, count)
        self.roads: dict[str, list[str]] = {n: [] for n in names}
        for i in range(1, count):  # a random tree: each village links to an earlier one
            other = names[self.rng.randrange(i)]
            self.roads[names[i]].append(other)
            self.roads[other].append(names[i])
        for n in names:
            self.roads[n].sort()
        while True:
            self.sheriff, self.outlaw = self.rng.sample(names, 2)
            if self._distance(self.sheriff)[self.outlaw] >= 2:
                break
        self.moves_left = max(self._distance(self.sheriff).values())  # the tree's height
        self.position = {"player_0": self.sheriff, "player_1": self.outlaw}

    def _distance(self, source: str) -> dict[str, int]:
        dist = {source: 0}
        queue = deque([source])
        while queue:
            here = queue.popleft()
            for nxt in self.roads[here]:
                if nxt not in dist:
                    dist[nxt] = dist[here] + 1
                    queue.append(nxt)
        return dist

    def _toward(self, source: str, target: str) -> str:
        """The neighbour of ``source`` on the unique path to ``target``."""
        dist = self._distance(target)
        return min(self.roads[source], key=lambda n: (dist[n], n))

    def _parse(self, agent: str, action: str) -> str:
        words = self.parse_move(action)[:80].replace("go to", "go").split()
        here = self.position[agent]
        if words in (["stay"], ["wait"]):
            return here
        if len(words) == 2 and words[0] == "go":
            match = [n for n in self.roads[here] if n.lower() == words[1]]
            if match and agent == "player_1" and match[0] == self.position["player_0"]:
                raise IllegalMove(f"the sheriff is in {match[0]}: the outlaw cannot go there")
            if match:
                return match[0]
            raise IllegalMove(f"no road from {here} to {words[1][:20]}")
        raise IllegalMove("write 'go VILLAGE' (a neighbouring village) or 'stay'")

    def _move(self, agent: str, action: str):
        if agent == "player_0":
            self.moves_left -= 1  # an illegal move still uses up one of the sheriff's moves
        target = self._parse(agent, action)
        self.position[agent] = target
        if self.position["player_0"] == self.position["player_1"]:
            return {"player_0": 1.0, "player_1": 0.0}
        if agent == "player_0" and self.moves_left <= 0:
            return {"player_0": 0.0, "player_1": 1.0}
        return None

    def _observe(self, agent: str) -> str:
        roads = "; ".join(f"{n}: {', '.join(ns)}" for n, ns in self.roads.items())
        role = "the sheriff" if agent == "player_0" else "the outlaw"
        status = "your move" if agent == self.agent_selection else "waiting"
        return (
            f"Roads (village: neighbours): {roads}.\nSheriff at {self.position['player_0']}, "
            f"outlaw at {self.position['player_1']}. The sheriff has {self.moves_left} move(s) "
            f"left to make the catch. You are {role} ({status}). Move with \\boxed{{go VILLAGE}} "
            "or \\boxed{stay}."
        )

    def legal_moves(self, agent: str) -> list[str]:
        closed = self.position["player_0"] if agent == "player_1" else None
        return ["stay"] + [f"go {n}" for n in self.roads[self.position[agent]] if n != closed]

    def best_move(self, agent: str) -> str:
        me, other = self.position[agent], self.position["player_1" if agent == "player_0" else "player_0"]
        if agent == "player_0":
            return f"go {self._toward(me, other)}"
        # The outlaw runs to the neighbour (or stays) that is farthest from the sheriff.
        dist = self._distance(other)
        options = [me] + [n for n in self.roads[me] if n != other]
        best = max(options, key=lambda n: (dist[n], n == me, n))
        return "stay" if best == me else f"go {best}"

    def hint(self, agent: str) -> str:
        if agent == "player_0":
            far = max(self._distance(self.position["player_1"]).values())
            return (
                "The map has no loops, so the outlaw can never get past you: always close the "
                f"distance along the only path. The outlaw's village is {far} roads from the "
                "farthest village on the map."
            )
        return "Run toward the longest dead end away from the sheriff and make every move count."
