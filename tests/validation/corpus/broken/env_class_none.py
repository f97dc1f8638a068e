# expect: env_class
"""Word ladder puzzle written as a plain class: the TextEnv base class was forgotten."""

from __future__ import annotations

from spade_envs import boxed, extract_answer

_LADDERS = [
    ["cold", "cord", "card", "ward", "warm"],
    ["head", "heal", "teal", "tell", "tall", "tail"],
    ["lead", "load", "goad", "gold"],
    ["cat", "cot", "dot", "dog"],
]


class WordLadder:
    skill = "pattern"
    description = (
        "Change one letter at a time to turn the start word into the goal word; every step "
        "must be a word from the list. Send one word per turn in \\boxed{}."
    )
    max_turns = 8
    reward_range = (0.0, 1.0)

    def __init__(self, **knobs):
        self.turn = 0
        self.ladder: list[str] = []

    def reset(self, *, seed=None, options=None):
        import random

        rng = random.Random(seed)
        self.ladder = list(rng.choice(_LADDERS))
        self.current = self.ladder[0]
        self.turn = 0
        words = sorted(set(w for ladder in _LADDERS for w in ladder))
        return (
            f"Turn '{self.ladder[0]}' into '{self.ladder[-1]}'. Allowed words: {', '.join(words)}. "
            "Send the next word as \\boxed{word}.",
            {"turn": 0},
        )

    def step(self, action: str):
        self.turn += 1
        word = extract_answer(action).strip().lower()
        truncated = self.turn >= self.max_turns
        index = self.ladder.index(self.current)
        if word != self.ladder[index + 1]:
            return f"'{word[:20]}' is not the next rung. You are at '{self.current}'.", 0.0, False, truncated, {}
        self.current = word
        if word == self.ladder[-1]:
            return "You reached the goal word!", 1.0, True, False, {}
        return f"Now at '{word}'.", 0.0, False, truncated, {}

    def hint(self) -> str:
        return f"The second word of the ladder is '{self.ladder[1]}'."

    def solution(self) -> list[str]:
        return [boxed(w) for w in self.ladder[1:]]
