# expect: imports
"""Find the cheapest route cost in a small graph; sys.maxsize as the 'infinity' sentinel."""

from __future__ import annotations

import sys

from spade_envs import TextEnv, answers_match, boxed


class CheapestRoute(TextEnv):
    skill = "planning"
    description = (
        "A small road network with toll costs is given as a list of edges. Reply with the "
        "cheapest total cost from town A to town F in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        towns = "ABCDEF"
        self.edges = {}
        for i, a in enumerate(towns):
            for b in towns[i + 1 : i + 3]:
                self.edges[(a, b)] = self.rng.randint(1, 20)
        cost = {t: sys.maxsize for t in towns}
        cost["A"] = 0
        for t in towns:  # towns are in topological order
            for (a, b), w in self.edges.items():
                if a == t and cost[a] + w < cost[b]:
                    cost[b] = cost[a] + w
        self.answer = cost["F"]
        listing = ", ".join(f"{a}-{b}: {w}" for (a, b), w in self.edges.items())
        return f"One-way roads and tolls: {listing}. Cheapest cost from A to F? Reply \\boxed{{cost}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Work forward from A, keeping the cheapest known cost of every town."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
