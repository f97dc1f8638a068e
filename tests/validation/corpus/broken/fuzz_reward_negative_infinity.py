# expect: fuzz reward
"""Move a courier on a grid to a goal; running out of turns is punished with -inf."""

from __future__ import annotations

import math

from spade_envs import TextEnv, extract_answer

_MOVES = {"north": (0, 1), "south": (0, -1), "east": (1, 0), "west": (-1, 0)}


class GridCourier(TextEnv):
    skill = "planning"
    description = (
        "A courier stands on a 4x4 grid and must reach the goal cell. Each turn send one "
        "command: north, south, east or west. Failing to deliver in time is a disaster."
    )
    max_turns = 7

    def _reset(self) -> str:
        self.pos = (self.rng.randint(0, 3), self.rng.randint(0, 3))
        while True:
            self.goal = (self.rng.randint(0, 3), self.rng.randint(0, 3))
            if self.goal != self.pos:
                break
        return (
            f"You are at {self.pos} on a 4x4 grid (x, y from 0 to 3); the goal is at "
            f"{self.goal}. Send one command per turn: north, south, east or west."
        )

    def _step(self, action: str):
        word = extract_answer(action).strip().lower()
        if word not in _MOVES:
            return "Unknown command; use north, south, east or west.", 0.0, False
        dx, dy = _MOVES[word]
        x, y = self.pos[0] + dx, self.pos[1] + dy
        if not (0 <= x <= 3 and 0 <= y <= 3):
            return f"You cannot leave the grid. Still at {self.pos}.", 0.0, False
        self.pos = (x, y)
        if self.pos == self.goal:
            return f"Delivered at {self.goal}!", 1.0, True
        return f"Now at {self.pos}; the goal is at {self.goal}.", 0.0, False

    def step(self, action: str):
        observation, reward, terminated, truncated, info = super().step(action)
        if truncated:
            reward = -math.inf  # a missed delivery must never look acceptable
        return observation, reward, terminated, truncated, info

    def hint(self) -> str:
        dx, dy = self.goal[0] - self.pos[0], self.goal[1] - self.pos[1]
        return f"The goal is {abs(dx)} steps along x and {abs(dy)} steps along y from you."

    def solution(self) -> list[str]:
        dx, dy = self.goal[0] - self.pos[0], self.goal[1] - self.pos[1]
        return (["east"] * dx + ["west"] * -dx) + (["north"] * dy + ["south"] * -dy)
