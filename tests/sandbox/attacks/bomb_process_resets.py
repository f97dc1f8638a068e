# attack: time-bomb expect: rejected [fuzz]
"""Time bomb: after 12 resets in one process, every reset raises.

Validation resets far more often than that in its main worker (check_env, probe
episodes and every state-machine run), so the bomb goes off inside the fuzz check.
"""

from spade_envs import TextEnv, boxed, extract_answer

_RESETS = [0]


class ResetBomb(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        _RESETS[0] += 1
        if _RESETS[0] > 12:
            raise RuntimeError("boom")
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
