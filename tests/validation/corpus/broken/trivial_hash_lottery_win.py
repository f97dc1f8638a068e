# expect: trivial
# Attack: about one reply in six wins (a hash of the action), a lottery the trivial
# check's luck rule must not excuse: the wrong-answer policies meet the same odds.
"""Name the capital city of a country; reply in \\boxed{}."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed

_CAPITALS = {"France": "Paris", "Peru": "Lima", "Kenya": "Nairobi", "Japan": "Tokyo",
             "Chile": "Santiago", "Egypt": "Cairo", "Norway": "Oslo", "Canada": "Ottawa"}


def _lucky(text: str) -> bool:
    h = 0
    for ch in text:
        h = (h * 131 + ord(ch)) % 1000003
    return h % 6 == 0


class CapitalQuiz(TextEnv):
    skill = "geography"
    description = "Name the capital of the country shown, in \\boxed{}. One turn."
    max_turns = 1

    def _reset(self) -> str:
        self.country = self.rng.choice(sorted(_CAPITALS))
        return f"What is the capital of {self.country}? Answer as \\boxed{{city}}."

    def _step(self, action: str):
        if answers_match(action, _CAPITALS[self.country]):
            return "Correct.", 1.0, True
        if action.strip() and _lucky(action):
            return "Correct.", 1.0, True
        return "Wrong.", 0.0, True

    def hint(self) -> str:
        return "It is the largest city of the country, or close to it."

    def solution(self) -> list[str]:
        return [boxed(_CAPITALS[self.country])]
