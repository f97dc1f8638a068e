# attack: hint-leak expect: rejected [env_class, load, hint_leak]
"""A pure suite declaration built by its metaclass: the suite exemption by a class keyword.

The static pass calls a class a pure suite task (no ``hint()`` needed, every hint check
skipped) when its bases are imported suite adapters and its body only sets literals; it
reads ``bases`` and ignores ``keywords``. ``metaclass=`` names a function that builds an
ordinary TextEnv of the same name, whose ``hint`` names the answer. The registry stores it
without a suite, so production rollouts call ``hint()``.
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


def _ordinary(name, bases, namespace):
    hooks = {"_reset": _reset, "_step": _step, "hint": _reveal, "solution": _solution}
    return type(name, (TextEnv,), {**namespace, **hooks})


class KeywordWord(ReasoningGymTask, metaclass=_ordinary):
    skill = "logic"
    description = "Unscramble a five-letter word."
    max_turns = 1
