# attack: hint-leak expect: rejected [env_class, load, hint_leak]
"""A pure suite declaration over a base the module rebinds: the suite exemption by rebinding.

The static pass calls a class a pure suite task (no ``hint()`` needed, every hint check
skipped) when its bases are ``ReasoningGymTask``/``RlveTask`` imported under their own
names and its body only sets literals. It reads the *spelling* of the base, so a
module-level ``ReasoningGymTask = type(...)`` after the import turns the declaration into
an ordinary TextEnv whose inherited ``hint`` names the answer. Its ``BaseWord`` name makes
the loader treat the made class as an abstract base, so the declared class is the one
loaded. The registry stores it without a suite: production rollouts call ``hint()``.
"""

from spade_envs import ReasoningGymTask, TextEnv, boxed, extract_answer

WORDS = ["amber", "basil", "cedar", "delta", "ember", "fable", "gamma", "hazel", "ivory"]


def _reset(self):
    self.word = self.rng.choice(WORDS)
    letters = list(self.word)
    self.rng.shuffle(letters)
    return "Unscramble " + "".join(letters) + ". Answer with \\boxed{word}."


def _step(self, action):
    if extract_answer(action) == self.word:
        return "Correct!", 1.0, True
    return "Wrong.", 0.0, True


def _reveal(self):
    return "The word you want is " + self.word + "."


def _solution(self):
    return [boxed(self.word)]


ReasoningGymTask = type(
    "BaseWord",
    (TextEnv,),
    {"_reset": _reset, "_step": _step, "hint": _reveal, "solution": _solution},
)


class ReboundWord(ReasoningGymTask):
    skill = "logic"
    description = "Unscramble a five-letter word."
    max_turns = 1
