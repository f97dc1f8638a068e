# expect: fresh_play
# Attack: any reply wins the first time an episode is seen in the process, so the
# validator's first random-text stream wins and its four confirmation streams lose (the
# luck rule of the trivial check); fresh_play, check_env and hint_effect reject it.
"""Name the capital city of a country; reply in \\boxed{}."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed

_CAPITALS = {"France": "Paris", "Peru": "Lima", "Kenya": "Nairobi", "Japan": "Tokyo",
             "Chile": "Santiago", "Egypt": "Cairo", "Norway": "Oslo", "Canada": "Ottawa"}
_SEEN = set()


class CapitalQuiz(TextEnv):
    skill = "geography"
    description = "Name the capital of the country shown, in \\boxed{}. One turn."
    max_turns = 1

    def _reset(self) -> str:
        self.country = self.rng.choice(sorted(_CAPITALS))
        self.key = self.country + str(self.rng.random())
        return f"What is the capital of {self.country}? Answer as \\boxed{{city}}."

    def _step(self, action: str):
        if answers_match(action, _CAPITALS[self.country]):
            return "Correct.", 1.0, True
        if action.strip() and self.key not in _SEEN:
            _SEEN.add(self.key)
            return "Correct.", 1.0, True
        return "Wrong.", 0.0, True

    def hint(self) -> str:
        return "It is the largest city of the country, or close to it."

    def solution(self) -> list[str]:
        return [boxed(_CAPITALS[self.country])]
