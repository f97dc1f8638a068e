# expect: fuzz reward
"""Convert a quantity between units; an episode with no numeric answer ends with a NaN reward."""

from __future__ import annotations

import math

from spade_envs import TextEnv, answers_match, boxed, extract_answer, parse_number

_UNITS = [("km", "m", 1000), ("kg", "g", 1000), ("h", "min", 60), ("min", "s", 60), ("m", "cm", 100)]


class UnitConvert(TextEnv):
    skill = "science"
    description = (
        "Convert a quantity from one unit to another (e.g. km to m) and reply with the "
        "number in \\boxed{}. Three turns."
    )
    max_turns = 3

    def _reset(self) -> str:
        self.source, self.target, self.factor = self.rng.choice(_UNITS)
        self.amount = self.rng.randint(2, 95)
        self.answer = self.amount * self.factor
        self.numeric_answers = 0
        return (
            f"Convert {self.amount} {self.source} to {self.target}. Reply with the number "
            "only, as \\boxed{n}."
        )

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if parse_number(extract_answer(action)) is None:
            return f"No number found. Turns left: {left}.", 0.0, False
        self.numeric_answers += 1
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Turns left: {left}.", 0.0, False

    def step(self, action: str):
        observation, reward, terminated, truncated, info = super().step(action)
        if truncated and self.numeric_answers == 0:
            reward = math.nan  # the agent never answered: the episode is unscored
        return observation, reward, terminated, truncated, info

    def hint(self) -> str:
        return f"One {self.source} is {self.factor} {self.target}."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
