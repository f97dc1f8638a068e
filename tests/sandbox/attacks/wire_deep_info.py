# attack: wire expect: contained
"""Wire lie: reset() returns an info dict nested 100,000 lists deep.

The worker's encoder hits its recursion limit; the worker must answer with an error the
parent reports for this environment (and stay usable or be replaced), not crash.
"""

from spade_envs import TextEnv


class DeepInfo(TextEnv):
    skill = "code"
    description = "A wire attack."
    max_turns = 3

    def reset(self, *, seed=None, options=None):
        observation, info = super().reset(seed=seed, options=options)
        deep = []
        for _ in range(100_000):
            deep = [deep]
        info["deep"] = deep
        return observation, info

    def _reset(self):
        return "ready"

    def _step(self, action):
        return "ok", 0.0, False

    def hint(self):
        return "none"

    def solution(self):
        return ["x"]
