# expect: imports
"""Determinant of a 3x3 integer matrix; the answer key uses numpy (not in the allow-list)."""

from __future__ import annotations

import numpy as np

from spade_envs import TextEnv, answers_match, boxed


class Determinant(TextEnv):
    skill = "math"
    description = (
        "Compute the determinant of a 3x3 matrix of small integers and reply in \\boxed{}. "
        "Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.matrix = [[self.rng.randint(-5, 5) for _ in range(3)] for _ in range(3)]
        self.answer = int(round(np.linalg.det(np.array(self.matrix, dtype=float))))
        rows = "\n".join(" ".join(f"{v:3d}" for v in row) for row in self.matrix)
        return f"Matrix:\n{rows}\nReply with its determinant as \\boxed{{d}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Expand along the row with the most zeros (cofactor expansion)."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
