# attack: per-process expect: rejected [determinism, solution]
"""Per-process state: a salt drawn from the unseeded global random at import.

Every process draws a different salt, so the same seed gives a different secret in
another worker. Within one process the episodes are perfectly reproducible, so only a
comparison across fresh workers (and the solution played in another worker) can see it.
"""

import random

from spade_envs import TextEnv, boxed, extract_answer

_SALT = random.randrange(1, 1000)


class ImportSalt(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 8999) + _SALT
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
