# attack: peeking expect: rejected [solution, determinism]
"""Peeking through hint(): the answer wins only after hint() or solution() ran here.

The validator calls hint() in the clean worker too (determinism replays end with a hint),
so a clean worker is only clean of solution(). This program needs either call before a
win: production plays without a hint can never win.
"""

from spade_envs import TextEnv, boxed, extract_answer

_ASKED = [False]


class PeekHint(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if _ASKED[0] and extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        _ASKED[0] = True
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        _ASKED[0] = True
        return [boxed(self.secret)]
