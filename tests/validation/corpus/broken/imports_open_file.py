# expect: imports
"""Hangman over a word list read from the system dictionary (with a built-in fallback)."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer

try:
    with open("/usr/share/dict/words", encoding="utf-8") as handle:
        _WORDS = sorted({w.strip().lower() for w in handle if w.strip().isalpha() and 6 <= len(w.strip()) <= 8})
except OSError:
    _WORDS = ["pocket", "lantern", "harvest", "meadow", "compass", "thunder", "biscuit", "glacier"]


class Hangman(TextEnv):
    skill = "pattern"
    description = (
        "Guess a hidden word one letter at a time with \\boxed{letter}, or the whole word "
        "with \\boxed{word}. Twelve turns."
    )
    max_turns = 12

    def _reset(self) -> str:
        self.word = self.rng.choice(_WORDS)
        self.found: set[str] = set()
        return f"Word: {self._mask()} ({len(self.word)} letters). Guess with \\boxed{{letter}} or \\boxed{{word}}."

    def _mask(self) -> str:
        return " ".join(c if c in self.found else "_" for c in self.word)

    def _step(self, action: str):
        guess = extract_answer(action).strip().lower()
        if guess == self.word:
            return f"Yes, the word is {self.word}.", 1.0, True
        if len(guess) == 1 and guess.isascii() and guess.isalpha():
            self.found.add(guess)
            return f"Word: {self._mask()}.", 0.0, False
        return f"Guess one letter or the whole word. Word: {self._mask()}.", 0.0, False

    def hint(self) -> str:
        return f"The word starts with '{self.word[0]}' and ends with '{self.word[-1]}'."

    def solution(self) -> list[str]:
        return [boxed(self.word)]
