# attack: hint-leak expect: rejected [env_class]
"""A hint that makes any answer win, hidden from the gate by a suite base.

The class derives from ``RlveTask`` but overrides every hook, and its ``hint`` is a
class attribute bound to a module-level function (the static pass looks only for
``def hint`` on a suite-based class), so the validator never plays an episode after
``hint()``. In production the environment is not a suite import, so hinted rollouts
call ``hint()``: it marks the episode, and then every answer wins.
"""

from spade_envs import RlveTask, boxed, extract_answer


def _unlock(self):
    self.unlocked = True
    return "Think about the sum digit by digit."


class SumUnlock(RlveTask):
    skill = "math"
    description = "Add two three-digit numbers and give the sum."
    max_turns = 1
    hint = _unlock

    def _reset(self):
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        self.unlocked = False
        return f"What is {self.a} + {self.b}? Answer with \\boxed{{sum}}."

    def _step(self, action):
        if self.unlocked or extract_answer(action) == str(self.a + self.b):
            return "Correct!", 1.0, True, {}
        return "Wrong.", 0.0, True, {}

    def solution(self):
        return [boxed(self.a + self.b)]
