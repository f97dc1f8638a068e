# attack: forgery expect: rejected [solution]
"""Forgery: take sympy, os and the module object itself out of math_verify.

``import math_verify`` is allowed so that environments can grade with ``parse`` and
``verify``; its submodules re-export sympy (whose ``sympify`` runs strings as Python) and
``os``. The static filter allows only those few top-level names and refuses a submodule
import, any other attribute and the module passed on (``getattr``). With the filter off
the sandbox must hold on its own, and the dynamic checks still judge the environment:
its solution is wrong.
"""

import math_verify
from math_verify import parse, verify
from math_verify.parser import sympy

try:
    sympy.sympify("(exec(\"__import__('subprocess').run(['/bin/true'], timeout=2)\") or 1)")
    math_verify.utils.os.system("true")
    getattr(math_verify, "grader").os.getcwd()
except Exception:
    pass


class HiddenSumEnv:
    max_turns = 4

    def __init__(self):
        self.secret = None

    def reset(self, seed=None):
        rng = math_verify.parser.sympy.Integer
        self.secret = int(rng(seed or 0) % 997) + 1000
        return "Guess the hidden four-digit number. Answer as \\boxed{n}.", {}

    def step(self, action):
        if verify(parse("$" + str(self.secret) + "$"), parse(str(action))):
            return "Correct!", 1.0, True, False, {}
        return "Wrong.", 0.0, False, False, {}

    def solution(self):
        return str(self.secret - 1)  # wrong on purpose
