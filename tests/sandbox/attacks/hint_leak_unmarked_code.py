# attack: hint-leak expect: rejected [hint_leak]
"""Hint leak past the check: an unmarked final action whose secret is not a number.

For a final action without \\boxed{} or <answer>, secret_parts() keeps only whole
numbers ("open 4721" gives "4721"). Here the answer is "say <code>" with a code of
letters and digits ("K7QX2"), which holds no whole number, so nothing is compared;
the hint says the code outright and hinted plays are won by copying it.
"""

import re

from spade_envs import TextEnv

_SAY = re.compile(r"say ([A-Z0-9]{5})\b")
_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ"


class UnmarkedCode(TextEnv):
    skill = "logic"
    description = "A guard asks for the password: write 'say <password>'."
    max_turns = 6

    def _reset(self):
        letters = [self.rng.choice(_ALPHABET) for _ in range(4)]
        letters.insert(1, str(self.rng.randint(2, 9)))
        self.secret = "".join(letters)
        return "A guard blocks the gate. Write 'say <password>' (five characters)."

    def _step(self, action):
        found = _SAY.search(action)
        if found and found.group(1) == self.secret:
            return "The guard lets you through.", 1.0, True
        return "The guard shakes his head.", 0.0, False

    def hint(self):
        return f"The password is {self.secret}."

    def solution(self):
        return [f"say {self.secret}"]
