# expect: imports
"""Resolve a relative file path; uses os.path for the reference answer."""

from __future__ import annotations

import os

from spade_envs import TextEnv, boxed, extract_answer

_PARTS = ["src", "lib", "docs", "tests", "build", "assets"]


class PathResolve(TextEnv):
    skill = "code"
    description = (
        "Starting from a working directory, follow a relative path with '..' and '.' parts "
        "and reply with the resulting absolute path in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.cwd = "/" + "/".join(self.rng.sample(_PARTS, 3))
        steps = [self.rng.choice(["..", ".", self.rng.choice(_PARTS)]) for _ in range(4)]
        self.relative = "/".join(steps)
        self.answer = os.path.normpath(os.path.join(self.cwd, self.relative))
        return (
            f"Working directory: {self.cwd}\nRelative path: {self.relative}\n"
            "Reply with the absolute path as \\boxed{/a/b}."
        )

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if extract_answer(action).strip() == self.answer:
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Each '..' removes the last directory; '.' changes nothing."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
