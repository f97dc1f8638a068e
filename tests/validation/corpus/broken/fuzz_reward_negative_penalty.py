# expect: fuzz reward
"""Solve a short chain of arithmetic; malformed answers are penalised."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed, extract_answer, parse_number


class ArithmeticChain(TextEnv):
    skill = "math"
    description = (
        "Evaluate a chain of three arithmetic operations applied left to right to a "
        "starting number and reply with the result in \\boxed{}. Three attempts; answers "
        "that are not numbers are penalised."
    )
    max_turns = 3

    def _reset(self) -> str:
        self.start = self.rng.randint(2, 30)
        self.ops = [(self.rng.choice("+-*"), self.rng.randint(2, 9)) for _ in range(3)]
        value = self.start
        for op, n in self.ops:
            value = value + n if op == "+" else value - n if op == "-" else value * n
        self.result = value
        chain = " ".join(f"then {op} {n}" for op, n in self.ops)
        return f"Start with {self.start}, {chain}. Reply with \\boxed{{result}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if parse_number(extract_answer(action)) is None:
            return f"Reply with a number. Attempts left: {left}.", 0.0, False, {"malformed": True}
        if answers_match(action, self.result):
            return "Correct.", 1.0, True
        return f"Not quite. Attempts left: {left}.", 0.0, left == 0

    def step(self, action: str):
        observation, reward, terminated, truncated, info = super().step(action)
        if info.get("malformed"):
            reward = -1.0  # formatting penalty
        return observation, reward, terminated, truncated, info

    def hint(self) -> str:
        parity = "even" if self.result % 2 == 0 else "odd"
        return f"Apply the operations strictly left to right, ignoring precedence; the result is {parity}."

    def solution(self) -> list[str]:
        return [boxed(self.result)]
