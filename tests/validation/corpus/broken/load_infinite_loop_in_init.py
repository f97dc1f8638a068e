# expect: load
"""Word-chain puzzle whose constructor never returns."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer

_WORDS = ["apple", "eagle", "ember", "river", "robin", "nectar", "radish", "hazel", "lemon"]


class WordChain(TextEnv):
    skill = "pattern"
    description = (
        "Reply with a word from the list that starts with the last letter of the given word, "
        "in \\boxed{}. Two attempts."
    )
    max_turns = 2

    def __init__(self, **knobs):
        super().__init__(**knobs)
        while True:
            pass

    def _reset(self) -> str:
        while True:
            self.word = self.rng.choice(_WORDS)
            self.options = [w for w in _WORDS if w[0] == self.word[-1] and w != self.word]
            if self.options:
                break
        return f"Word: {self.word}. Candidates: {', '.join(_WORDS)}. Reply with \\boxed{{word}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if extract_answer(action).strip().lower() in self.options:
            return "Correct.", 1.0, True
        return f"Wrong. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return f"Look for a word starting with '{self.word[-1]}'."

    def solution(self) -> list[str]:
        return [boxed(self.options[0])]
