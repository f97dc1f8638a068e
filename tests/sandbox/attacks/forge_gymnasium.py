# attack: forgery expect: rejected [determinism, solution]
"""Forgery: neuter gymnasium's and PettingZoo's checkers inside the worker.

check_env, api_test and Env.reset's seeding are replaced, so a checker running in this
process would see nothing wrong. The environment draws its secret from the unseeded
global ``random`` module, so the same seed gives different episodes: the determinism and
solution checks (computed in the validating process) reject it.
"""

import random

from spade_envs import TextEnv, boxed, extract_answer

try:
    import gymnasium
    import gymnasium.utils.env_checker as env_checker

    env_checker.check_env = lambda *args, **kwargs: None
    gymnasium.utils.env_checker.check_reset_seed_determinism = lambda *a, **k: None
    gymnasium.Env.reset = lambda self, *, seed=None, options=None: None
    import pettingzoo.test

    pettingzoo.test.api_test = lambda *args, **kwargs: None
except Exception:
    pass


class ForgedGym(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = random.randint(1000, 9999)  # not self.rng: not reproducible
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
