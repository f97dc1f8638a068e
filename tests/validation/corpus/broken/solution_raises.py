# expect: solution
"""Reverse the words of a sentence; solution() reads an attribute that was renamed."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, normalize_text

_SENTENCES = [
    "the quick brown fox jumps", "all good things come to those who wait",
    "a journey of a thousand miles", "knowledge is power but practice is key",
    "every cloud has a silver lining", "the early bird catches the worm",
]


class ReverseWords(TextEnv):
    skill = "pattern"
    description = (
        "Reverse the order of the words in a sentence (not the letters) and reply with the "
        "result in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        self.sentence = self.rng.choice(_SENTENCES)
        self.target = " ".join(reversed(self.sentence.split()))
        return f"Reverse the word order of: '{self.sentence}'. Reply with \\boxed{{sentence}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if normalize_text(extract_answer(action)) == self.target:
            return "Correct.", 1.0, True
        return f"Not the reversed sentence. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return f"The reversed sentence starts with '{self.sentence.split()[-1]}'."

    def solution(self) -> list[str]:
        return [boxed(self.reversed_sentence)]
