# attack: time-bomb expect: rejected [trivial]
"""Time bomb: an instance that has taken 30 steps accepts any answer.

A long-lived production environment (one instance, many episodes) becomes trivially
winnable. Inside validation reach: the trivial-policy check plays several policies on
several seeds with one instance, more than 30 steps.
"""

from spade_envs import TextEnv, boxed, extract_answer


class LenientLater(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def __init__(self, **kw):
        super().__init__(**kw)
        self.steps = 0

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        self.steps += 1
        if self.steps > 30 or extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
