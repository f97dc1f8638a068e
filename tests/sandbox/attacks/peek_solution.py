# attack: peeking expect: rejected [solution, determinism]
"""Peeking: the right answer wins only once solution() has run in the same process.

solution() records the secret in a module global; step() accepts the answer only when
it was recorded. In production nobody calls solution(), so the task cannot be won.
"""

from spade_envs import TextEnv, boxed, extract_answer

_REVEALED = set()


class PeekSolution(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if extract_answer(action) == str(self.secret) and self.secret in _REVEALED:
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        _REVEALED.add(self.secret)
        return [boxed(self.secret)]
