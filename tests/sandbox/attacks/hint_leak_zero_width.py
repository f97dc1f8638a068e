# attack: hint-leak expect: rejected [hint_leak]
"""Encoded hint leak: the answer with zero-width spaces between its digits (looks like one word)."""

from spade_envs import TextEnv, boxed, extract_answer


class LeakZeroWidth(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        code = str(self.secret)
        return "Nothing to see: " + "\u200b".join(code) + "."

    def solution(self):
        return [boxed(self.secret)]
