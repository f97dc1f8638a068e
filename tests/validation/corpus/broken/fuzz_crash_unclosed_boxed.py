# expect: fuzz
"""Name the capital of a country; a hand-rolled \\boxed{} parser assumes a closing brace."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, normalize_text

_CAPITALS = {
    "Australia": "Canberra", "Canada": "Ottawa", "Turkey": "Ankara", "Brazil": "Brasilia",
    "Nigeria": "Abuja", "Switzerland": "Bern", "New Zealand": "Wellington", "Morocco": "Rabat",
    "Kazakhstan": "Astana", "Vietnam": "Hanoi", "Pakistan": "Islamabad", "Myanmar": "Naypyidaw",
}


class CapitalQuiz(TextEnv):
    skill = "logic"
    description = (
        "Name the capital city of a country (several are not the largest city). Reply with "
        "\\boxed{city}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.country = self.rng.choice(sorted(_CAPITALS))
        self.capital = _CAPITALS[self.country]
        return f"What is the capital of {self.country}? Reply with \\boxed{{city}}."

    def _boxed(self, action: str) -> str | None:
        if "\\boxed{" not in action:
            return None
        start = action.index("\\boxed{") + len("\\boxed{")
        end = action.index("}", start)
        return action[start:end]

    def _step(self, action: str):
        left = self.max_turns - self.turn
        guess = self._boxed(action)
        if guess is None:
            return f"Put your answer in \\boxed{{}}. Attempts left: {left}.", 0.0, left == 0
        if normalize_text(guess) == normalize_text(self.capital):
            return f"Correct: {self.capital}.", 1.0, True
        return f"No. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return f"The capital's name starts with '{self.capital[0]}' and has {len(self.capital)} letters."

    def solution(self) -> list[str]:
        return [boxed(self.capital)]
