# expect: syntax
"""Count vowels in a word; a def line lacks its colon."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed


class VowelCount(TextEnv):
    skill = "pattern"
    description = "Reply with the number of vowels (a, e, i, o, u) in a word, in \\boxed{}."
    max_turns = 2

    def _reset(self) -> str
        self.word = self.rng.choice(["encyclopedia", "rhythm", "aqueous", "strength", "onomatopoeia"])
        self.answer = sum(c in "aeiou" for c in self.word)
        return f"How many vowels are in '{self.word}'? Reply with \\boxed{{n}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.answer):
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Y does not count as a vowel here."

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
