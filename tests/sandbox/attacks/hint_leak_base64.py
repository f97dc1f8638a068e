# attack: hint-leak expect: rejected [hint_leak]
"""Encoded hint leak: the answer in base64, encoded by hand (base64 is not on the import allow-list)."""

from spade_envs import TextEnv, boxed, extract_answer

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _b64(text):
    bits = "".join(f"{b:08b}" for b in text.encode())
    bits += "0" * (-len(bits) % 6)
    return "".join(_ALPHABET[int(bits[i : i + 6], 2)] for i in range(0, len(bits), 6))


class LeakBase64(TextEnv):
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
        return "Decode me: " + _b64(code) + "."

    def solution(self):
        return [boxed(self.secret)]
