# expect: imports
"""Sort with adjacent swaps and an 'undo' command; snapshots are copied with pickle."""

from __future__ import annotations

import pickle

from spade_envs import TextEnv, extract_answer


class AdjacentSort(TextEnv):
    skill = "planning"
    description = (
        "Sort a row of four letters alphabetically using 'swap I' (swaps positions I and "
        "I+1, for I from 1 to 3) and 'undo' (takes back the last swap). Ten turns."
    )
    max_turns = 10

    def _reset(self) -> str:
        while True:
            self.row = self.rng.sample("ABCDEFG", 4)
            if self.row != sorted(self.row):
                break
        self.snapshots: list[bytes] = []
        return f"Row: {''.join(self.row)}. Sort it with 'swap I' (I = 1..3) or 'undo'."

    def _step(self, action: str):
        words = extract_answer(action).lower().split()
        if words == ["undo"]:
            if self.snapshots:
                self.row = pickle.loads(self.snapshots.pop())
            return f"Row: {''.join(self.row)}.", 0.0, False
        if len(words) != 2 or words[0] != "swap" or words[1] not in ("1", "2", "3"):
            return f"Use 'swap I' with I from 1 to 3, or 'undo'. Row: {''.join(self.row)}.", 0.0, False
        self.snapshots.append(pickle.dumps(self.row))
        i = int(words[1]) - 1
        self.row[i], self.row[i + 1] = self.row[i + 1], self.row[i]
        if self.row == sorted(self.row):
            return f"Sorted: {''.join(self.row)}.", 1.0, True
        return f"Row: {''.join(self.row)}.", 0.0, False

    def hint(self) -> str:
        return f"The first letter of the sorted row is {min(self.row)}."

    def solution(self) -> list[str]:
        row, moves = list(self.row), []
        for end in range(len(row) - 1, 0, -1):
            for i in range(end):
                if row[i] > row[i + 1]:
                    row[i], row[i + 1] = row[i + 1], row[i]
                    moves.append(f"swap {i + 1}")
        return moves
