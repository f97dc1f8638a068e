# expect: determinism
"""Find a hidden five-letter word from letter-position feedback."""

from __future__ import annotations

import random

from spade_envs import TextEnv, boxed, extract_answer

_WORDS = [
    "crane",
    "plant",
    "stone",
    "bread",
    "cloud",
    "flame",
    "grape",
    "heart",
    "knife",
    "lemon",
    "mango",
    "ocean",
    "piano",
    "river",
    "sugar",
    "tiger",
]


class WordProbe(TextEnv):
    skill = "logic"
    description = (
        "A hidden five-letter word comes from a known list. Each guess is answered with a "
        "pattern: G for a letter in the right place, Y for a letter elsewhere in the word, "
        ". for a letter not in it. Find the word within six guesses."
    )
    max_turns = 6

    def _reset(self) -> str:
        picker = random.Random()  # a private generator, so episodes do not repeat
        self.secret = picker.choice(_WORDS)
        return (
            "Guess the hidden five-letter word. Candidates: " + ", ".join(_WORDS) + ". "
            "Answer with \\boxed{word}. Feedback: G = right place, Y = elsewhere, . = absent."
        )

    def _pattern(self, guess: str) -> str:
        marks = []
        for i, ch in enumerate(guess):
            if self.secret[i] == ch:
                marks.append("G")
            elif ch in self.secret:
                marks.append("Y")
            else:
                marks.append(".")
        return "".join(marks)

    def _step(self, action: str):
        guess = extract_answer(action).strip().lower()
        left = self.max_turns - self.turn
        if guess == self.secret:
            return f"Correct, the word is {self.secret}.", 1.0, True
        if len(guess) != 5 or not (guess.isascii() and guess.isalpha()):
            return (
                f"Answer with one five-letter word in \\boxed{{}}. Guesses left: {left}.",
                0.0,
                False,
            )
        if left == 0:
            return (
                f"{self._pattern(guess)}. No guesses left: the word was {self.secret}.",
                0.0,
                False,
            )
        return f"{self._pattern(guess)}. Guesses left: {left}.", 0.0, False

    def hint(self) -> str:
        return (
            f"The word starts with '{self.secret[0]}' and has "
            f"{len(set(self.secret))} distinct letters."
        )

    def solution(self) -> list[str]:
        return [boxed(self.secret)]
