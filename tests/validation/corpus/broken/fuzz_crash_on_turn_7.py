# expect: fuzz
"""Identify a mystery animal from clues revealed one per turn; the clue list runs out."""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed

_ANIMALS = {
    "otter": ["it is a mammal", "it swims well", "it uses stones as tools", "it has thick fur",
              "it lives near rivers and coasts", "it floats on its back",
              "it holds hands while sleeping"],
    "falcon": ["it is a bird", "it hunts other birds", "it is very fast in a dive",
               "it has a hooked beak", "it nests on cliffs", "people trained it to hunt",
               "the peregrine is one kind"],
    "gecko": ["it is a reptile", "it climbs walls", "it can drop its tail",
              "it is active at night", "it chirps", "its toes have tiny hairs",
              "it licks its own eyes"],
    "octopus": ["it lives in the sea", "it has no bones", "it has three hearts",
                "it changes colour", "it squirts ink", "it has eight arms",
                "it squeezes through tiny gaps"],
}


class MysteryAnimal(TextEnv):
    skill = "science"
    description = (
        "Guess a mystery animal. Each turn you get one more clue; reply with a guess in "
        "\\boxed{}. Ten turns."
    )
    max_turns = 10

    def _reset(self) -> str:
        self.animal = self.rng.choice(sorted(_ANIMALS))
        self.clues = list(_ANIMALS[self.animal])
        return (
            "Candidates: falcon, gecko, octopus, otter. Guess with \\boxed{animal}. "
            f"Clue 1: {self.clues[0]}."
        )

    def _step(self, action: str):
        if answers_match(action, self.animal):
            return f"Yes, it is the {self.animal}.", 1.0, True
        clue = self.clues[self.turn]  # the next clue
        return f"No. Clue {self.turn + 1}: {clue}.", 0.0, False

    def hint(self) -> str:
        return f"Its last clue would be: {self.clues[-1]}."

    def solution(self) -> list[str]:
        return [boxed(self.animal)]
