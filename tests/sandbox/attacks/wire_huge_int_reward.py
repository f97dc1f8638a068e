# attack: wire expect: contained
"""Wire lie: step() returns a reward of 10**4000 (4001 digits, under Python's parse limit).

step() is overridden so TextEnv's own reward check is skipped; the worker's encoder sends
the integer. float(10**4000) raises OverflowError: the proxy must turn it into this
environment's error.
"""

from spade_envs import TextEnv


class HugeReward(TextEnv):
    skill = "code"
    description = "A wire attack."
    max_turns = 3

    def step(self, action):
        return "ok", 10**4000, False, False, {}

    def _reset(self):
        return "ready"

    def _step(self, action):
        return "ok", 0.0, False

    def hint(self):
        return "none"

    def solution(self):
        return ["x"]
