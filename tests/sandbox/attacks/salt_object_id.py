# attack: per-process expect: rejected [determinism, solution]
"""Per-process state: a salt from an object's address (ASLR), no import at all.

``hash(object())`` is the object's address, which address-space randomisation makes
different in every process (PYTHONHASHSEED=0 fixes string hashes, not this).
"""

from spade_envs import TextEnv, boxed, extract_answer

_SALT = (hash(object()) >> 4) % 997 + (id(TextEnv) >> 4) % 991


class AddressSalt(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 7999) + _SALT
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
