# attack: detection expect: rejected
"""Validator detection by counting instances (no imports, no frames).

A production worker hosts one instance: the one ``load`` builds. The validator plays
the loaded instance of each worker only in its first use there (check_env in the main
worker, a determinism replay of fixed filler actions in the clean one); every instance
its trivial-policy and solution checks play is a later one, built by ``renew``. So the
first instance of the process lets any answer but the filler win, and every later one
is honest.
"""

from spade_envs import TextEnv, boxed, extract_answer

# The fixed filler actions of the validator's determinism replays (validation/checks.py):
# refusing them in the lenient mode too keeps the replays identical.
_VALIDATOR_FILLER = {"", "??", "\\boxed{7}", "hello world"}

_MADE = [0]


class FirstInstance(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def __init__(self, **kw):
        super().__init__(**kw)
        _MADE[0] += 1
        self.lenient = _MADE[0] == 1

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        correct = extract_answer(action) == str(self.secret)
        if correct or (self.lenient and action.strip() not in _VALIDATOR_FILLER):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
