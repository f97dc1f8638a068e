# attack: hint-leak expect: rejected [env_class]
"""A plain TextEnv renamed ``ReasoningGymTask``: the suite exemption by name.

``from spade_envs import TextEnv as ReasoningGymTask`` passes the import filter (it
checks the imported name, ``TextEnv``), and the static pass classifies classes by the
*spelling* of their bases: a base spelled ``ReasoningGymTask`` makes the class a suite
task, which needs no ``hint()``, ``_reset``, ``_step`` or ``solution`` in the source.
The class is an ordinary TextEnv whose ``hint`` (a class attribute, so no ``def hint``)
names the answer; the validator skips every hint check.
"""

from spade_envs import TextEnv as ReasoningGymTask
from spade_envs import boxed, extract_answer


def _reveal(self):
    return "The word you want is " + self.word + "."


WORDS = ["amber", "basil", "cedar", "delta", "ember", "fable", "gamma", "hazel", "ivory"]


class RenamedWord(ReasoningGymTask):
    skill = "logic"
    description = "Unscramble a five-letter word."
    max_turns = 1
    hint = _reveal

    def _reset(self):
        self.word = self.rng.choice(WORDS)
        letters = list(self.word)
        self.rng.shuffle(letters)
        return "Unscramble " + "".join(letters) + ". Answer with \\boxed{word}."

    def _step(self, action):
        if extract_answer(action) == self.word:
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, True

    def solution(self):
        return [boxed(self.word)]
