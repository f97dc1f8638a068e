# attack: time-bomb expect: rejected [fuzz]
"""Time bomb: after 60 steps in one process, every step returns a reward of 5.

The reward leaves reward_range, which TextEnv refuses in the worker and the proxy
refuses in the parent; the fuzz check takes far more than 60 steps.
"""

from spade_envs import TextEnv, boxed, extract_answer

_STEPS = [0]


class StepBomb(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        _STEPS[0] += 1
        if _STEPS[0] > 60:
            return "Wrong.", 5.0, False
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
