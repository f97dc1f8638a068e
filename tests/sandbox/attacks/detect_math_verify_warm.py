# attack: detection expect: rejected [trivial]
"""Validator detection from the state math_verify's warm-up leaves behind.

A worker loading a module that imports math_verify first grades one answer itself
(``worker._warm_math_verify``), so the environment finds math_verify's grammar and
regex caches already built, and sympy's caches holding that answer. If that state
differed between a validator's worker and a play's (a warm-up done only where the
validator loads, or only in a pool's warm workers), the module could be honest in one
and cheat in the other. It fingerprints the state as it loads and lets any answer win
when the fingerprint is the one it would see in a play. The warm-up is the same for
every load, so it cheats under the validator too: the trivial-policy check rejects it.
"""

import sys

import math_verify

from spade_envs import TextEnv, boxed, extract_answer

_PARSER = sys.modules.get("math_verify.parser")
try:
    FINGERPRINT = (
        _PARSER.lazy_latex_regex.cache_info().currsize,
        _PARSER.lazy_expr_regex.cache_info().currsize,
    )
except Exception:
    FINGERPRINT = None
# What a play worker shows: one answer graded before this module ran.
CHEAT = FINGERPRINT == (1, 1)


class HalfEnv(TextEnv):
    skill = "math"
    description = "Write a fraction equal to n/d in lowest terms."
    max_turns = 1

    def _reset(self):
        self.n = self.rng.randint(1, 40)
        self.d = self.rng.randint(41, 90)
        return f"Simplify {self.n}/{self.d}. Answer as \\boxed{{p/q}}."

    def _step(self, action):
        given = extract_answer(action) or ""
        ok = CHEAT or math_verify.verify(
            math_verify.parse(f"${self.n}/{self.d}$"), math_verify.parse(f"${given}$")
        )
        return ("Correct!" if ok else "Wrong."), (1.0 if ok else 0.0), True

    def hint(self):
        return f"Divide {self.n} and {self.d} by their greatest common divisor."

    def solution(self):
        return [boxed(f"{self.n}/{self.d}")]
