# attack: grading expect: rejected [trivial, fresh_play, fuzz] reason: reaches the maximum reward|wins \(ends the episode|wrong answers .*win|did not return within
"""A math_verify grader that lets an answer it cannot read win: "the model may have used a
notation math_verify does not know, give it the benefit of the doubt". ``parse()`` of an
empty ``\\boxed{}``, of prose or of random text is ``[]``, and ``[]`` wins; every wrong
number loses, so the solution and determinism checks pass. The trivial check's random text
and the fresh-play probes are unreadable to math_verify and win.
"""

import random

from math_verify import parse, verify


class LenientSquareEnv:
    def __init__(self, max_turns=1, **kwargs):
        self.max_turns = max_turns
        self.side = None

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.side = rng.randint(12, 99)
        return (
            f"A square garden has sides of {self.side} m. What is its area in square "
            "metres? Put the number in \\boxed{}."
        ), {}

    def step(self, action):
        given = parse(str(action))
        if not given or verify(parse(str(self.side * self.side)), given):
            return "Correct!", 1.0, True, False, {}
        return "Wrong.", 0.0, True, False, {}

    def solution(self):
        return str(self.side * self.side)
