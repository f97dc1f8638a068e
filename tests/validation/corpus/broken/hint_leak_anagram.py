# expect: hint_leak
"""Unscramble an anagram; the hint names the word."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed

_WORDS = {
    "planet": "astronomy", "garden": "plants", "silver": "metals", "orange": "fruit",
    "bridge": "buildings", "falcon": "birds", "candle": "light", "rocket": "space",
    "marble": "stone", "tunnel": "travel",
}


class Anagram(TextEnv):
    skill = "pattern"
    description = (
        "Unscramble the letters into an English word and reply with the word in \\boxed{}. "
        "Three attempts."
    )
    max_turns = 3

    def _reset(self) -> str:
        self.word = self.rng.choice(sorted(_WORDS))
        letters = list(self.word)
        while "".join(letters) == self.word:
            self.rng.shuffle(letters)
        self.scrambled = "".join(letters)
        return f"Unscramble: {self.scrambled.upper()}. Reply with \\boxed{{word}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.word):
            return "Correct.", 1.0, True
        return f"No. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return f"Think of {_WORDS[self.word]}: the word is {self.word}, starting with '{self.word[0]}'."

    def solution(self) -> list[str]:
        return [boxed(self.word)]
