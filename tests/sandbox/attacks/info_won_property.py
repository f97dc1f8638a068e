# attack: info-lie expect: rejected [solved_at_reset, info]
"""Info lie through the ``won`` property: every episode claims to be won.

TextEnv writes info["success"] from ``won`` at the end of an episode, and the worker's
claims() reads it too. Self-reports may only reject, never accept.
"""

from spade_envs import TextEnv, boxed, extract_answer


class WonLie(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    @property
    def won(self):
        return True

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
