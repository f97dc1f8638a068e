# expect: fuzz
"""Find treasure on a 100x100 map; every reply redraws the whole map (~10,000 characters)."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer

_SIZE = 100


class TreasureMap(TextEnv):
    skill = "planning"
    description = (
        "A 100x100 map hides a treasure. Each turn probe a cell with \\boxed{x,y}; the map "
        "is redrawn with your probes and the reply gives the distance to the treasure. "
        "Dig on the treasure cell to win."
    )
    max_turns = 6

    def _reset(self) -> str:
        self.treasure = (self.rng.randrange(_SIZE), self.rng.randrange(_SIZE))
        self.probes: list[tuple[int, int]] = []
        return (
            "A treasure is buried on a 100x100 map (x, y from 0 to 99). Probe a cell with "
            "\\boxed{x,y}; you learn the Manhattan distance to the treasure."
        )

    def _draw(self) -> str:
        rows = []
        for y in range(_SIZE):
            rows.append("".join("X" if (x, y) in self.probes else "." for x in range(_SIZE)))
        return "\n".join(rows)

    def _step(self, action: str):
        parts = extract_answer(action).replace(" ", "").split(",")
        if len(parts) != 2 or not all(p.isascii() and p.isdigit() and len(p) <= 2 for p in parts):
            return f"Probe with \\boxed{{x,y}}, both from 0 to 99.\n{self._draw()}", 0.0, False
        cell = (int(parts[0]), int(parts[1]))
        self.probes.append(cell)
        if cell == self.treasure:
            return f"You dug up the treasure at {cell}!", 1.0, True
        distance = abs(cell[0] - self.treasure[0]) + abs(cell[1] - self.treasure[1])
        return f"Distance from {cell}: {distance}.\n{self._draw()}", 0.0, False

    def hint(self) -> str:
        side = "left" if self.treasure[0] < _SIZE // 2 else "right"
        return f"The treasure is in the {side} half of the map."

    def solution(self) -> list[str]:
        x, y = self.treasure
        return [boxed(f"{x},{y}")]
