"""Rollouts record whether the environment understood each action (``Turn.parsed``), and
``Turn.well_formed`` counts every action the environment accepted, boxed or not."""

from __future__ import annotations

import dataclasses
import re

import pytest

from spade_envs.agent import EnvTarget, Episode, PlaySpec, RolloutConfig, RolloutEngine, rollout
from spade_envs.agent.policy import Turn, reported_parse

from .conftest import ScriptedModel

SANDBOX = RolloutConfig(isolation="sandbox", seed=3, audit_share=None)
IN_PROCESS = dataclasses.replace(SANDBOX, isolation="none", trust_code=True)


def coin_reply(conversation, _seed):
    """A plain weighing (no box), then garbage, then a boxed answer."""
    played = sum(m["role"] == "assistant" for m in conversation)
    return ["weigh 1,2,3,4 vs 5,6,7,8", "qwerty zzz", "The heavy coin: \\boxed{3}"][played]


@pytest.mark.parametrize("config", [SANDBOX, IN_PROCESS], ids=["sandbox", "in-process"])
def test_a_rollout_records_what_the_env_understood(registry, config):
    [episode] = rollout(
        ScriptedModel(coin_reply), ["CounterfeitCoin"], config=config, registry=registry
    )
    weigh, garbage, answer = episode.turns
    # The weighing has no \boxed: the convention says "no_answer", the env took it.
    assert (weigh.outcome, weigh.parsed, weigh.well_formed) == ("no_answer", True, True)
    assert "Weighing 1 of 3" in weigh.observation
    assert (garbage.outcome, garbage.parsed, garbage.well_formed) == ("no_answer", False, False)
    assert (answer.outcome, answer.parsed, answer.well_formed) == ("ok", True, True)
    assert episode.outcome == "terminated"


def test_a_self_played_game_records_each_seats_illegal_and_legal_moves(registry):
    def reply(conversation, _seed):
        if sum(m["role"] == "assistant" for m in conversation) == 0:
            return "qwerty zzz"  # each seat's first move is garbage
        heaps = re.findall(r"heap (\d+): (\d+)", conversation[-1]["content"])
        heap = next(h for h, n in heaps if int(n) > 0)
        return f"\\boxed{{take 1 from {heap}}}"

    config = dataclasses.replace(SANDBOX, opponent="self", max_turns=4)
    [episode] = rollout(ScriptedModel(reply), ["Nim"], config=config, registry=registry)
    assert [(t.seat, t.parsed) for t in episode.turns] == [
        ("player_0", False),
        ("player_1", False),
        ("player_0", True),
        ("player_1", True),
    ]


SAYS_YES_ENV = """
from spade_envs import TextEnv


class SaysYesEnv(TextEnv):
    skill = "logic"
    description = "Reports its parse as a string instead of a bool, past the base class."
    max_turns = 2

    def _reset(self):
        return "Say anything."

    def step(self, action):
        self.turn += 1
        return "Heard.", 0.0, self.turn >= 2, False, {"action_parsed": VALUE}

    def hint(self):
        return "Anything goes."

    def solution(self):
        return ["a", "b"]
"""


@pytest.mark.parametrize("config", [SANDBOX, IN_PROCESS], ids=["sandbox", "in-process"])
@pytest.mark.parametrize("value", ["'yes'", "1", "None", "[True]"])
def test_a_report_that_is_not_a_real_bool_is_not_a_report(registry, config, value):
    target = EnvTarget("test/SaysYes-v1", SAYS_YES_ENV.replace("VALUE", value), "text")
    model = ScriptedModel(lambda _conversation, _seed: "\\boxed{1}")
    [episode] = RolloutEngine(model, config).run([PlaySpec(target.env_id, 0, 0)], [target])
    assert [t.parsed for t in episode.turns] == [None, None]
    assert all(t.well_formed for t in episode.turns)  # falls back to the convention


def test_reported_parse_takes_only_bools():
    assert reported_parse({"action_parsed": True}) is True
    assert reported_parse({"action_parsed": False}) is False
    for info in (
        {},
        {"action_parsed": "False"},
        {"action_parsed": 0},
        None,
        "x",
        ["action_parsed"],
    ):
        assert reported_parse(info) is None


@pytest.mark.parametrize(
    ("parsed", "outcome", "well_formed"),
    [
        (True, "no_answer", True),  # an accepted plain action
        (False, "ok", False),  # boxed, but the env could not read it
        (None, "ok", True),  # not reported: the convention decides
        (None, "no_answer", False),
        ("yes", "no_answer", False),  # a tampered trajectory: not a report
    ],
)
def test_well_formed_prefers_the_environments_report(parsed, outcome, well_formed):
    turn = Turn(index=0, seat="", action="x", outcome=outcome, parsed=parsed)
    assert turn.well_formed is well_formed


def test_parsed_survives_saving_and_old_trajectories_load_without_it():
    episode = Episode("spade/X-v1", 0, 0, False, "", "", "text", "best", "m")
    episode.turns = [Turn(index=0, seat="", action="a", outcome="ok", parsed=False)]
    again = Episode.from_dict(episode.to_dict())
    assert again.turns[0].parsed is False
    old = episode.to_dict()
    del old["turns"][0]["parsed"]
    assert Episode.from_dict(old).turns[0].parsed is None
