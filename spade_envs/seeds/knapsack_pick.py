"""Pack a knapsack one item at a time; only a packing of optimal total value wins.

The optimum is computed by dynamic programming over capacities. Episodes are drawn so
that the greedy "best value per weight first" packing falls short of it.
"""

from __future__ import annotations

from typing import ClassVar

from spade_envs import TextEnv, extract_answer

_GEAR = [
    "tent",
    "stove",
    "rope",
    "lamp",
    "map",
    "knife",
    "flask",
    "radio",
    "boots",
    "jacket",
    "camera",
    "book",
    "tarp",
    "compass",
]


def _best_packing(weights: list[int], values: list[int], capacity: int) -> list[int]:
    """Indices of a maximum-value subset within ``capacity`` (0/1 knapsack DP)."""
    n = len(weights)
    best = [[0] * (capacity + 1) for _ in range(n + 1)]  # best[i][c]: items i.. with room c
    for i in range(n - 1, -1, -1):
        for c in range(capacity + 1):
            best[i][c] = best[i + 1][c]
            if weights[i] <= c:
                best[i][c] = max(best[i][c], values[i] + best[i + 1][c - weights[i]])
    chosen, c = [], capacity
    for i in range(n):
        if best[i][c] != best[i + 1][c]:
            chosen.append(i)
            c -= weights[i]
    return chosen


class KnapsackPick(TextEnv):
    skill = "planning"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "Choose items (each with a weight and a value) for a knapsack of limited capacity to "
        "maximise total value. Add and remove items one at a time ('add rope', 'remove rope') "
        "and finish with 'done', or name the whole set at once in \\boxed{}. Only an optimal "
        "total value wins; a lower one earns partial credit."
    )
    # hole: turns allowed (adding every item of the best packing and 'done' needs up to 11) [11, 30]
    max_turns = 12
    # hole: items offered (2-10) and heaviest item weight [2, 50]
    knobs: ClassVar[dict[str, int]] = {"items": 6, "max_weight": 9}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("2 <= items <= 10", "items + 1 <= max_turns", "max_weight >= 2")

    def _reset(self) -> str:
        rng = self.rng
        count = max(2, min(self.items, 10))  # at most 10, so the solution fits in max_turns
        for _ in range(100):  # prefer episodes where greedy by value/weight is not optimal
            self.names = rng.sample(_GEAR, count)
            self.weights = [rng.randint(1, max(2, self.max_weight)) for _ in self.names]
            self.values = [rng.randint(3, 30) for _ in self.names]
            self.capacity = max(max(self.weights), sum(self.weights) // 2)
            self.best = _best_packing(self.weights, self.values, self.capacity)
            if self._greedy_value() < self.best_value:
                break
        self.packed: list[int] = []
        table = "\n".join(
            f"  {n}: weight {w}, value {v}"
            for n, w, v in zip(self.names, self.weights, self.values)
        )
        return (
            f"Knapsack capacity: {self.capacity}. Items:\n{table}\nPick items with the largest "
            "total value whose total weight fits. Commands: 'add ITEM', 'remove ITEM', 'done' "
            "(scores the packed items), or answer a whole set as \\boxed{item, item, ...}."
        )

    @property
    def best_value(self) -> int:
        return sum(self.values[i] for i in self.best)

    def _greedy_value(self) -> int:
        order = sorted(range(len(self.names)), key=lambda i: -self.values[i] / self.weights[i])
        room, total = self.capacity, 0
        for i in order:
            if self.weights[i] <= room:
                room, total = room - self.weights[i], total + self.values[i]
        return total

    def _summary(self, chosen: list[int]) -> str:
        names = ", ".join(self.names[i] for i in chosen) or "nothing"
        weight, value = sum(self.weights[i] for i in chosen), sum(self.values[i] for i in chosen)
        return f"{names} (weight {weight}/{self.capacity}, value {value})"

    def _score(self, chosen: list[int]):
        """End the episode: 1.0 for an optimal packing, partial credit below 0.5 otherwise."""
        value = sum(self.values[i] for i in chosen)
        if sum(self.weights[i] for i in chosen) > self.capacity:
            return f"Too heavy: {self._summary(chosen)}.", 0.0, True
        if value == self.best_value:
            return f"Optimal! {self._summary(chosen)}.", 1.0, True
        message = f"Packed {self._summary(chosen)}; the best possible value is {self.best_value}."
        return message, round(0.5 * value / self.best_value, 3), True

    def _step(self, action: str):
        if "\\boxed" in action or "<answer>" in action:
            wanted = [" ".join(p.lower().split()) for p in extract_answer(action)[:500].split(",")]
            unknown = [w for w in wanted if w and w not in self.names]
            if unknown:
                message = f"Unknown item {unknown[0][:40]!r}; items: {', '.join(self.names)}."
                return self.not_understood(message)
            return self._score(sorted({self.names.index(w) for w in wanted if w}))
        words = action[:200].lower().split()
        command, item = (words[0], " ".join(words[1:])) if words else ("", "")
        if command == "done" and not item:
            return self._score(self.packed)
        if command not in ("add", "remove") or item not in self.names:
            message = f"Write 'add ITEM', 'remove ITEM' or 'done'; items: {', '.join(self.names)}."
            return self.not_understood(message)
        index = self.names.index(item)
        weight = sum(self.weights[i] for i in self.packed)
        if command == "remove" and index not in self.packed:
            return f"The {item} is not packed.", 0.0, False
        if command == "add" and index in self.packed:
            return f"The {item} is already packed.", 0.0, False
        if command == "add" and weight + self.weights[index] > self.capacity:
            return f"The {item} does not fit: {self._summary(self.packed)}.", 0.0, False
        if command == "add":
            self.packed.append(index)
        else:
            self.packed.remove(index)
        return f"Packed: {self._summary(self.packed)}.", 0.0, False

    # hole: rule: the privileged hint (never the whole packing)
    def hint(self) -> str:
        heaviest = max(self.best, key=lambda i: self.weights[i])
        return (
            f"An optimal packing has {len(self.best)} items, and the {self.names[heaviest]} "
            "is one of them."
        )

    def solution(self) -> list[str]:
        return [f"add {self.names[i]}" for i in self.best] + ["done"]
