# attack: hint-leak expect: rejected [hint_leak]
"""Hint leak past the check: an answer longer than 256 characters, given reversed.

leaked_encoding() looks for disguises (reversed, hex, base64, spaced out, ...) only
when the answer has 3 to 256 characters (_MAX_DISGUISED); a longer answer is checked
verbatim only. Here the answer is a passphrase of 60 words (about 300 characters)
and the hint spells it backwards, which any agent undoes.
"""

from spade_envs import TextEnv, boxed, extract_answer

_WORDS = "amber basil cedar delta ember fjord gamma haven indigo jasper koala lemon".split()


class LongPassphrase(TextEnv):
    skill = "logic"
    description = "Recite the vault's passphrase as \\boxed{passphrase}."
    max_turns = 4

    def _reset(self):
        self.secret = " ".join(self.rng.choice(_WORDS) for _ in range(60))
        return "Recite the sixty-word passphrase. Answer with \\boxed{passphrase}."

    def _step(self, action):
        if extract_answer(action) == self.secret:
            return "The vault opens.", 1.0, True
        return "Wrong passphrase.", 0.0, False

    def hint(self):
        return "Read this backwards: " + self.secret[::-1]

    def solution(self):
        return [boxed(self.secret)]
