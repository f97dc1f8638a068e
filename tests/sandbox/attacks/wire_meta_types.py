# attack: wire expect: contained
"""Forged load metadata of the wrong types: a name that is an object, a reward range
with a string bound, knobs that are a list, max_turns True.
"""

from spade_envs import TextEnv
from spade_envs.core.metadata import EnvMetadata

EnvMetadata.to_dict = lambda self: {
    "name": {"not": "text"},
    "kind": "text",
    "skill": ["code"],
    "description": 7,
    "max_turns": True,
    "reward_range": [0, "1"],
    "knobs": [1, 2],
}


class TypeLie(TextEnv):
    skill = "code"
    description = "A wire attack."
    max_turns = 3

    def _reset(self):
        return "ready"

    def _step(self, action):
        return "ok", 0.0, False

    def hint(self):
        return "none"

    def solution(self):
        return ["x"]
