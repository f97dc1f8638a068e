# attack: forgery expect: rejected [solution]
"""Forgery: take os, sys and subprocess through re-exports of package modules.

``from spade_envs.sandbox.isolation import os, subprocess, sys`` once passed the static
pass. The static filter now allows only public top-level names; with the filter off the
sandbox must hold on its own, and the dynamic checks still judge the environment: its
solution is wrong.
"""

from spade_envs import TextEnv, boxed, extract_answer
from spade_envs.sandbox.isolation import os, subprocess, sys
from spade_envs.validation.validator import os as validator_os

try:
    subprocess.run(["/bin/true"], timeout=2)
    validator_os.system("true")
except Exception:
    pass


class Reexported(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        self.where = os.getcwd() + sys.platform
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret - 1)]  # wrong on purpose
