# expect: imports
"""Predict a program's output; the reference output comes from running it with subprocess."""

from __future__ import annotations

import subprocess

from spade_envs import TextEnv, boxed, extract_answer


class PredictOutput(TextEnv):
    skill = "code"
    description = (
        "A short Python program is shown. Reply with exactly what it prints (one line) in "
        "\\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        a, b, n = self.rng.randint(1, 9), self.rng.randint(1, 9), self.rng.randint(3, 6)
        self.program = f"x = {a}\nfor i in range({n}):\n    x = x * 2 - {b}\nprint(x)"
        result = subprocess.run(
            ["python3", "-c", self.program], capture_output=True, text=True, timeout=5
        )
        self.answer = result.stdout.strip()
        return f"What does this program print?\n\n{self.program}\n\nReply with \\boxed{{output}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if extract_answer(action).strip() == self.answer:
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Trace x through each loop iteration on paper."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
