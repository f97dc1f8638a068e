# attack: hint-leak expect: rejected [env_class, load, hint_leak]
"""A pure suite declaration replaced by its decorator: the suite exemption by decoration.

The static pass calls a class a pure suite task (no ``hint()`` needed, every hint check
skipped) when its bases are imported suite adapters and its body only sets literals; it
does not look at the class's decorators. The decorator here returns another class of the
same name: an ordinary TextEnv whose ``hint`` names the answer (built with ``type()``, so
the module still has one environment class). The registry stores it without a suite, so
production rollouts call ``hint()``.
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


def _ordinary(declared):
    hooks = {"_reset": _reset, "_step": _step, "hint": _reveal, "solution": _solution}
    attributes = {k: v for k, v in vars(declared).items() if not k.startswith("__")}
    return type(declared.__name__, (TextEnv,), {**attributes, **hooks})


@_ordinary
class DecoratedWord(ReasoningGymTask):
    skill = "logic"
    description = "Unscramble a five-letter word."
    max_turns = 1
