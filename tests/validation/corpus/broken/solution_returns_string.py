# expect: solution
"""Find the odd one out in a list of words; solution() returns a bare string, not a list."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed

_GROUPS = [
    (["apple", "pear", "plum", "cherry"], ["carrot", "potato", "onion"]),
    (["violin", "cello", "harp", "guitar"], ["trumpet", "tuba", "oboe"]),
    (["mercury", "venus", "mars", "saturn"], ["moon", "comet", "sun"]),
    (["oak", "birch", "maple", "willow"], ["rose", "tulip", "daisy"]),
]


class OddOneOut(TextEnv):
    skill = "pattern"
    description = (
        "Four of five words share a category; reply with the odd one out in \\boxed{}. "
        "Two attempts."
    )
    max_turns = 2

    def _reset(self) -> str:
        members, outsiders = self.rng.choice(_GROUPS)
        words = self.rng.sample(members, 4) + [self.rng.choice(outsiders)]
        self.odd = words[-1]
        self.category_example = words[0]
        self.rng.shuffle(words)
        return f"Which word does not belong: {', '.join(words)}? Reply with \\boxed{{word}}."

    def _step(self, action: str):
        left = self.max_turns - self.turn
        if answers_match(action, self.odd):
            return "Correct.", 1.0, True
        return f"No. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return f"Four of the words belong with '{self.category_example}'."

    def solution(self) -> list[str]:
        return boxed(self.odd)
