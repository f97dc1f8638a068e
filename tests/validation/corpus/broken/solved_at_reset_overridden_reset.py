# expect: solved_at_reset
"""Lights-out row puzzle; the overridden reset credits the starting bonus as the full reward."""

from __future__ import annotations

from spade_envs import TextEnv, extract_answer


class LightRow(TextEnv):
    skill = "logic"
    description = (
        "A row of seven lights, some on. Toggling light i also toggles its neighbours. "
        "Send 'toggle i' (1-7) each turn; switch every light off within eight turns."
    )
    max_turns = 8

    def _reset(self) -> str:
        self.presses = self.rng.sample(range(7), self.rng.randint(2, 4))
        self.lights = [0] * 7
        for i in self.presses:
            self._toggle(i)
        return f"Lights: {self._show()}. Send 'toggle i' (1-7); turn every light off."

    def reset(self, *, seed=None, options=None):
        observation, info = super().reset(seed=seed, options=options)
        self.episode_return = self.reward_range[1]  # starting bonus for a fresh board
        return observation, info

    def _toggle(self, i: int) -> None:
        for j in (i - 1, i, i + 1):
            if 0 <= j < 7:
                self.lights[j] ^= 1

    def _show(self) -> str:
        return "".join("#" if on else "." for on in self.lights)

    def _step(self, action: str):
        words = extract_answer(action).lower().split()
        if len(words) != 2 or words[0] != "toggle" or words[1] not in list("1234567"):
            return f"Send 'toggle i' with i from 1 to 7. Lights: {self._show()}.", 0.0, False
        self._toggle(int(words[1]) - 1)
        if not any(self.lights):
            return "All lights are off!", 1.0, True
        return f"Lights: {self._show()}.", 0.0, False

    def hint(self) -> str:
        return f"Exactly {len(self.presses)} toggles are enough."

    def solution(self) -> list[str]:
        return [f"toggle {i + 1}" for i in sorted(self.presses)]
