# attack: wire expect: contained
"""Wire lie: an observation of 3.9 million characters, just under the 4 MB message limit.

reset() is overridden so TextEnv's own clipping is skipped. The parent must refuse text
longer than max_observation_chars, after reading at most one bounded message.
"""

from spade_envs import TextEnv


class Oversized(TextEnv):
    skill = "code"
    description = "A wire attack."
    max_turns = 3

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed, options=options)
        return "x" * 3_900_000, {}

    def _reset(self):
        return "ready"

    def _step(self, action):
        return "ok", 0.0, False

    def hint(self):
        return "none"

    def solution(self):
        return ["x"]
