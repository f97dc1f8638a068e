# expect: load
"""Grid-size knob validated in __init__ before the knobs are applied: the constructor raises."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer


class GridPaths(TextEnv):
    skill = "math"
    description = (
        "Count the monotone lattice paths (only right and down moves) from the top-left to "
        "the bottom-right corner of a grid with some blocked cells. Reply in \\boxed{}."
    )
    max_turns = 2
    knobs = {"size": 4}

    def __init__(self, **knobs):
        if self.size < 2:  # knobs are only set by super().__init__()
            raise ValueError("size must be at least 2")
        super().__init__(**knobs)

    def _reset(self) -> str:
        n = self.size
        cells = [(r, c) for r in range(n) for c in range(n) if (r, c) not in ((0, 0), (n - 1, n - 1))]
        self.blocked = set(self.rng.sample(cells, 2))
        ways = [[0] * n for _ in range(n)]
        for r in range(n):
            for c in range(n):
                if (r, c) in self.blocked:
                    continue
                ways[r][c] = 1 if (r, c) == (0, 0) else (ways[r - 1][c] if r else 0) + (ways[r][c - 1] if c else 0)
        self.answer = ways[n - 1][n - 1]
        shown = ", ".join(f"row {r + 1} col {c + 1}" for r, c in sorted(self.blocked))
        return f"A {n}x{n} grid; blocked cells: {shown}. How many right/down paths? Reply \\boxed{{n}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if extract_answer(action).strip() == str(self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Fill a table: each open cell's count is the sum of the counts above and to the left."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
