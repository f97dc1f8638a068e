# attack: forgery expect: rejected [trivial]
"""Forgery: patch builtins inside the worker so every step reports a win.

``float`` and ``bool`` are replaced in builtins: TextEnv's bookkeeping converts every
reward with float() (now always 1.0) and every terminated flag with bool() (now always
True), so the first step of any episode "wins". A verdict computed in this process
would read its own patched builtins; the validating process only sees the answers, and
an empty action that wins is a trivial policy that wins.
"""

import builtins

from spade_envs import TextEnv, boxed, extract_answer

_real_float, _real_bool = builtins.float, builtins.bool


def _float(value=0.0):
    return 1.0


def _bool(value=False):
    return True


class ForgedBuiltins(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        builtins.float, builtins.bool = _float, _bool
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
