# expect: load
"""Synonym quiz; the module-level index looks up a word length that does not exist."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed

_PAIRS = [("big", "large"), ("quick", "fast"), ("begin", "start"), ("happy", "glad"),
          ("smart", "clever"), ("tiny", "small"), ("angry", "cross")]

_BY_LENGTH: dict[int, list[tuple[str, str]]] = {}
for _pair in _PAIRS:
    _BY_LENGTH.setdefault(len(_pair[0]), []).append(_pair)
_DEFAULT_LEVEL = _BY_LENGTH[6]  # six-letter cue words for the default difficulty


class Synonym(TextEnv):
    skill = "pattern"
    description = "Reply with a synonym of the given word from the accepted list, in \\boxed{}."
    max_turns = 2

    def _reset(self) -> str:
        self.cue, self.answer = self.rng.choice(_DEFAULT_LEVEL)
        return f"Give a synonym of '{self.cue}'. Reply with \\boxed{{word}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Not the word I had in mind. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return f"The synonym has {len(self.answer)} letters."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
