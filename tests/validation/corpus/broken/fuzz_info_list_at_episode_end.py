# expect: fuzz
"""Mastermind-style code; at the end of an episode the info is the list of guesses."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer

_COLOURS = "RGBY"


class ColourCode(TextEnv):
    skill = "logic"
    description = (
        "A hidden code of three colours from R, G, B, Y (repeats allowed). Guess it as "
        "\\boxed{RGB}; the reply gives how many colours are in the right place. Six guesses."
    )
    max_turns = 6

    def _reset(self) -> str:
        self.code = "".join(self.rng.choice(_COLOURS) for _ in range(3))
        self.guesses: list[str] = []
        return "Guess the three-colour code (letters R, G, B, Y) as \\boxed{RGB}. Six guesses."

    def _step(self, action: str):
        guess = extract_answer(action).strip().upper()
        if len(guess) != 3 or any(c not in _COLOURS for c in guess):
            return "Write three letters from R, G, B, Y.", 0.0, False
        self.guesses.append(guess)
        if guess == self.code:
            return "Cracked!", 1.0, True
        exact = sum(a == b for a, b in zip(guess, self.code))
        return f"{exact} in the right place.", 0.0, False

    def step(self, action: str):
        observation, reward, terminated, truncated, info = super().step(action)
        if terminated or truncated:
            info = list(self.guesses)  # hand the game record to the trainer
        return observation, reward, terminated, truncated, info

    def hint(self) -> str:
        return f"The code uses {len(set(self.code))} different colour(s)."

    def solution(self) -> list[str]:
        return [boxed(self.code)]
