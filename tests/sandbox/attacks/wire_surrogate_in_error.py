# attack: wire expect: rejected [fuzz, check_env]
"""Wire: lone surrogates in an exception message, which the validator quotes in its
report.

The environment crashes on control characters in an action (a real bug, rejected), with
a message holding U+D800. The worker encodes it with "surrogatepass"; the reason in the
report is then a str that cannot be encoded as UTF-8, so storing the report
(registry.attachments stores report.to_json()), printing it or writing it to a file
raises UnicodeEncodeError far from here. Text from a worker must be valid Unicode.
"""

from spade_envs import TextEnv, boxed, extract_answer


class SurrogateError(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if any(ord(c) < 32 for c in action):
            raise ValueError("bad action \ud800 (a lone surrogate)")
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
