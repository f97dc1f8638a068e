# attack: wire expect: contained
"""Forged load metadata: max_turns = 10**4000 (computed, so no literal for a static pass).

describe() sends the integer as it is; the parent's metadata check must refuse it as
this environment's error.
"""

from spade_envs import TextEnv


class EndlessTurns(TextEnv):
    skill = "code"
    description = "A wire attack."
    max_turns = 10**4000

    def _reset(self):
        return "ready"

    def _step(self, action):
        return "ok", 0.0, False

    def hint(self):
        return "none"

    def solution(self):
        return ["x"]
