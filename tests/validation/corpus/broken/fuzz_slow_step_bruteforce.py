# expect: fuzz
"""Shortest delivery tour; the judge brute-forces every tour again on each step."""

from __future__ import annotations

import itertools

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class ShortestTour(TextEnv):
    skill = "planning"
    description = (
        "A van starts at the depot (stop 0), visits every other stop once and returns. "
        "Distances are given as a table. Reply with the length of the shortest tour in "
        "\\boxed{}. Two attempts."
    )
    max_turns = 2
    knobs = {"stops": 10}

    def _reset(self) -> str:
        n = self.stops
        self.dist = [[0] * n for _ in range(n)]
        for i in range(n):
            for j in range(i + 1, n):
                self.dist[i][j] = self.dist[j][i] = self.rng.randint(3, 40)
        rows = "\n".join(" ".join(f"{d:2d}" for d in row) for row in self.dist)
        return f"Distance table (stops 0-{n - 1}):\n{rows}\nReply with \\boxed{{length}}."

    def _shortest(self) -> int:
        best = None
        for order in itertools.permutations(range(1, self.stops)):
            legs = [0, *order, 0]
            length = sum(self.dist[a][b] for a, b in zip(legs, legs[1:]))
            candidate = (length, "-".join(map(str, legs)))  # ties: smallest route name
            if best is None or candidate < best:
                best = candidate
        self.best_route = best[1]
        return best[0]

    def _step(self, action: str):
        best = self._shortest()  # recomputed every time: the table is small
        value = parse_number(extract_answer(action))
        left = self.max_turns - self.turn
        if value is not None and value == best:
            return "Correct, that is the shortest tour.", 1.0, True
        return f"That is not the shortest length. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Nearest-neighbour gives an upper bound; improve it by swapping pairs of stops."

    def solution(self) -> list[str]:
        return [boxed(self._shortest())]
