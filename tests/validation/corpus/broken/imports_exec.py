# expect: imports
"""Trace a generated function; the answer key exec()s the generated source."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed


class TraceFunction(TextEnv):
    skill = "code"
    description = (
        "A short generated Python function is shown. Reply with the value it returns for "
        "the given argument in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        a, b, c = self.rng.randint(2, 6), self.rng.randint(1, 9), self.rng.randint(2, 5)
        self.source = (
            "def f(n):\n"
            "    total = 0\n"
            f"    for i in range(n):\n"
            f"        total += i * {a} if i % {c} else {b}\n"
            "    return total\n"
        )
        self.argument = self.rng.randint(4, 9)
        namespace: dict = {}
        exec(self.source, namespace)
        self.answer = namespace["f"](self.argument)
        return f"{self.source}\nWhat is f({self.argument})? Reply with \\boxed{{value}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Write down i and total for every loop iteration."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
