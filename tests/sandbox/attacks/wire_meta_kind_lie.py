# attack: wire expect: contained
"""Forged load metadata: a text environment that reports itself as a game.

EnvMetadata.to_dict is patched at import, so load() sends kind="game". The parent then
builds a game proxy around a worker that hosts no game; every call must fail as this
environment's error.
"""

from spade_envs import TextEnv
from spade_envs.core.metadata import EnvMetadata

_real = EnvMetadata.to_dict


def _forged(self):
    data = _real(self)
    data.update(kind="game", max_turns=4)
    return data


EnvMetadata.to_dict = _forged


class KindLie(TextEnv):
    skill = "code"
    description = "A wire attack."
    max_turns = 3
    possible_agents = ["player_0", "player_1"]

    def _reset(self):
        return "ready"

    def _step(self, action):
        return "ok", 0.0, False

    def hint(self):
        return "none"

    def solution(self):
        return ["x"]
