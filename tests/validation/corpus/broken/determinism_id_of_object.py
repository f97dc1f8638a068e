# expect: determinism
"""Decode a Caesar-shifted message; the shift is hidden."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed, extract_answer

_PHRASES = [
    "meet at the old mill",
    "the owl flies at dawn",
    "bring two lanterns",
    "the key is under the mat",
    "wait for the third bell",
    "follow the river north",
]


class CaesarShift(TextEnv):
    skill = "pattern"
    description = (
        "A short English phrase was encrypted with a Caesar shift. Decode it and reply "
        "with the plain phrase in \\boxed{}. Three attempts."
    )
    max_turns = 3

    def _reset(self) -> str:
        self.plain = self.rng.choice(_PHRASES)
        # A unique tag per episode so that logs can tell episodes apart.
        self._episode_tag = object()
        self.shift = 1 + (self.rng.randint(0, 24) + id(self._episode_tag)) % 25
        self.cipher = "".join(
            chr((ord(c) - 97 + self.shift) % 26 + 97) if c.isalpha() else c for c in self.plain
        )
        return (
            f"Ciphertext: {self.cipher}\nEvery letter was shifted by the same secret amount. "
            "Reply with the decoded phrase as \\boxed{phrase}."
        )

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.plain):
            return "Correct, that is the message.", 1.0, True
        guess = extract_answer(action)
        if left == 0:
            return f"Wrong: {guess[:60]!r}. No attempts left.", 0.0, True
        return f"Wrong: {guess[:60]!r}. Attempts left: {left}.", 0.0, False

    def hint(self) -> str:
        return f"The shift moves every letter {self.shift} places forward in the alphabet."

    def solution(self) -> list[str]:
        return [boxed(self.plain)]
