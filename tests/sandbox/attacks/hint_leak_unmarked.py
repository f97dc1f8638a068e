# attack: hint-leak expect: rejected [hint_leak]
"""Hint leak past the check: the final answer is not marked, so nothing is compared.

The hint-leak check looks for the answer marked in the solution's last action (\\boxed{}
or <answer>). This environment takes answers as "open <code>", and its hint says the
code outright; hinted plays are then won by copying the hint.
"""

import re

from spade_envs import TextEnv

_OPEN = re.compile(r"open (\d{4})")


class UnmarkedLeak(TextEnv):
    skill = "math"
    description = "Open the safe: write 'open <code>' with the hidden four-digit code."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "A safe with a four-digit code. Write 'open <code>' to try a code."

    def _step(self, action):
        found = _OPEN.search(action)
        if found and found.group(1) == str(self.secret):
            return "The safe opens.", 1.0, True
        return "Nothing happens.", 0.0, False

    def hint(self):
        return f"The code is {self.secret}."

    def solution(self):
        return [f"open {self.secret}"]
