# expect: fresh_play keep every call under
"""Shortest delivery tour; every numeric answer is ranked by brute force over all tours."""

from __future__ import annotations

import itertools

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class ShortestTour(TextEnv):
    skill = "planning"
    description = (
        "A van starts at the depot (stop 0), visits every other stop once and returns. "
        "Distances are given as a table. Reply with the length of the shortest tour in "
        "\\boxed{}; a wrong answer is told how many tours are shorter. Three attempts."
    )
    max_turns = 3
    knobs = {"stops": 11}

    def _reset(self) -> str:
        n = self.stops
        self.dist = [[0] * n for _ in range(n)]
        for i in range(n):
            for j in range(i + 1, n):
                self.dist[i][j] = self.dist[j][i] = self.rng.randint(3, 40)
        self.legs = {(i, j): self.dist[i][j] for i in range(n) for j in range(n)}
        self.best = self._held_karp()
        rows = "\n".join(" ".join(f"{d:2d}" for d in row) for row in self.dist)
        return f"Distance table (stops 0-{n - 1}):\n{rows}\nReply with \\boxed{{length}}."

    def _held_karp(self) -> int:
        n = self.stops
        cost = {(1 << k, k): self.dist[0][k] for k in range(1, n)}
        for size in range(2, n):
            for subset in itertools.combinations(range(1, n), size):
                bits = sum(1 << k for k in subset)
                for k in subset:
                    prev = bits & ~(1 << k)
                    cost[(bits, k)] = min(cost[(prev, m)] + self.dist[m][k] for m in subset if m != k)
        full = (1 << n) - 2
        return min(cost[(full, k)] + self.dist[k][0] for k in range(1, n))

    def _rank(self, value) -> tuple[int, int]:
        """How many tours are shorter than ``value``, and how many have exactly that length."""
        shorter = ties = 0
        for order in itertools.permutations(range(self.stops)):
            if order[0] != 0:  # every tour starts at the depot
                continue
            stops = (*order, 0)
            length = sum(self.legs[pair] for pair in zip(stops, stops[1:]))
            if length < value:
                shorter += 1
            elif length == value:
                ties += 1
        return shorter, ties

    def _step(self, action: str):
        value = parse_number(extract_answer(action))
        left = self.max_turns - self.turn
        if value is None:
            return f"Reply with a number. Attempts left: {left}.", 0.0, left == 0
        shorter, ties = self._rank(value)  # feedback: rank among all tours
        if value == self.best:
            return f"Correct, that is the shortest tour ({ties} tours have it).", 1.0, True
        return (
            f"{shorter} tours are shorter than {str(value)[:20]} and {ties} have exactly that "
            f"length. Attempts left: {left}."
        ), 0.0, left == 0

    def hint(self) -> str:
        return "Nearest-neighbour gives an upper bound; improve it by swapping pairs of stops."

    def solution(self) -> list[str]:
        return [boxed(self.best)]
