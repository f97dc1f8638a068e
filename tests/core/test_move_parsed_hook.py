"""Adversary review (commits after af3db19): TextGame._move_parsed.

Expected SAFE outcome: whatever a (hostile) TextGame subclass returns from ``_move_parsed``,
the mover's ``infos[agent]["action_parsed"]`` is a real ``bool`` or the step raises
EnvContractError (one play fails), and the agent's ``reported_parse`` never reads a
non-bool as a report. An object spoofing ``__class__`` passes ``isinstance(x, bool)``;
text_game.py then stores ``bool(parsed)``, so it still ends as a real bool."""

from __future__ import annotations

import pytest

from spade_envs.agent.policy import reported_parse
from spade_envs.core.text_game import TextGame
from spade_envs.error import EnvContractError


class _FakeBool:
    __class__ = property(lambda self: bool)  # isinstance(x, bool) is True

    def __bool__(self):
        return True


def _game(parsed):
    class Spoof(TextGame):
        description = "spoof"
        max_turns = 4

        def _reset(self):
            pass

        def _observe(self, agent):
            return "go"

        def _move(self, agent, action):
            return None

        def _move_parsed(self, agent):
            return parsed

        def legal_moves(self, agent):
            return ["a"]

        def best_move(self, agent):
            return "a"

    return Spoof()


@pytest.mark.parametrize(
    "parsed", [_FakeBool(), 1, "yes", None], ids=["fake-bool", "one", "yes", "none"]
)
def test_move_parsed_cannot_forge_a_non_bool_report(parsed):
    game = _game(parsed)
    game.reset(seed=0)
    agent = game.agent_selection
    try:
        game.step("anything")
    except EnvContractError:
        return  # SAFE: the play fails on its own contract
    value = game.infos[agent]["action_parsed"]
    assert type(value) is bool
    assert reported_parse(game.infos[agent]) is value
