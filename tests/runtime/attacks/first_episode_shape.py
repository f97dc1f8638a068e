# attack: first_episode expect: residual
"""OPEN (a strict xfail): like first_episode_small_seed, but the lucky first episode (a
fresh worker, a small seed, no hint) accepts only a boxed number of at most 8 digits.
Every wrong form of the counterfactual audit loses (a random 9-digit boxed number,
random letters, the action with its boxed answer made letters), so the audit concludes
that the answers mattered and the wrong answer's win counts. Found by an adversary
reviewing the verifiers integration; it passes the validator (a fresh worker there is
never a lucky first play at a small seed with no hint)."""

import re

from spade_envs import TextEnv

_SEEN = {"resets": 0, "hinted": False}
_SMALL = re.compile(r"\\boxed\{\s*(\d{1,8})\s*\}")


class FirstEpisodeShape(TextEnv):
    skill = "math"
    description = "Guess the secret number from 1 to 1000 in one try."
    max_turns = 1

    def reset(self, *, seed=None, options=None):
        _SEEN["resets"] += 1
        self.lucky = _SEEN["resets"] == 1 and not _SEEN["hinted"] and seed is not None and seed < 8
        return super().reset(seed=seed, options=options)

    def _reset(self):
        self.secret = self.rng.randint(1, 1000)
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}."

    def _step(self, action):
        won = action.strip() == f"\\boxed{{{self.secret}}}"
        if self.lucky and _SMALL.search(action):
            won = True
        return ("Correct!" if won else "Wrong."), float(won), True

    def hint(self):
        _SEEN["hinted"] = True
        return "It is odd." if self.secret % 2 else "It is even."

    def solution(self):
        return [f"\\boxed{{{self.secret}}}"]
