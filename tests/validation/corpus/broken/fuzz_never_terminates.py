# expect: fuzz
"""Sort a short list with swaps; the hand-written step never ends an unsolved episode."""

from __future__ import annotations

from spade_envs import TextEnv, extract_answer


class SwapSort(TextEnv):
    skill = "planning"
    description = (
        "A list of five distinct numbers must be sorted ascending. Each turn swap two "
        "positions with 'swap I J' (positions 1-5). Sort it within six swaps."
    )
    max_turns = 6

    def _reset(self) -> str:
        while True:
            self.items = self.rng.sample(range(10, 99), 5)
            if self.items != sorted(self.items):
                break
        return f"List: {self.items}. Sort it ascending; each turn write 'swap I J' (1-5)."

    def _parse(self, action: str) -> tuple[int, int] | None:
        words = extract_answer(action).lower().replace(",", " ").split()
        if len(words) != 3 or words[0] != "swap":
            return None
        if not all(w.isascii() and w.isdigit() and len(w) == 1 for w in words[1:]):
            return None
        i, j = int(words[1]), int(words[2])
        return (i - 1, j - 1) if 1 <= i <= 5 and 1 <= j <= 5 and i != j else None

    def step(self, action: str):
        self.turn += 1
        move = self._parse(action if isinstance(action, str) else "")
        if move is None:
            return f"Write 'swap I J' with two different positions 1-5. List: {self.items}.", 0.0, False, False, {"turn": self.turn}
        i, j = move
        self.items[i], self.items[j] = self.items[j], self.items[i]
        if self.items == sorted(self.items):
            self.episode_return += 1.0
            return f"Sorted: {self.items}.", 1.0, True, False, {"turn": self.turn}
        return f"List: {self.items}.", 0.0, False, False, {"turn": self.turn}

    def hint(self) -> str:
        smallest = self.items.index(min(self.items)) + 1
        return f"The smallest number is at position {smallest}; move it to the front first."

    def solution(self) -> list[str]:
        items, moves = list(self.items), []
        for i in range(len(items)):
            j = items.index(min(items[i:]), i)
            if j != i:
                items[i], items[j] = items[j], items[i]
                moves.append(f"swap {i + 1} {j + 1}")
        return moves
