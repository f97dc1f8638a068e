"""Every seed reports ``info["action_parsed"]``: garbage is not understood, its own
reference solution always is, and free text is understood only where it is an action."""

from __future__ import annotations

import json

import pytest

import spade_envs
from spade_envs import GameSeatEnv, TextGame, ToolEnv, seed_class, seed_names
from spade_envs.core.text_env import ACTION_PARSED

NAMES = seed_names()
GARBAGE = "qwerty zzz"


def single_agent(name: str):
    env = spade_envs.make(name)
    return GameSeatEnv(env, seat=0, opponent="best") if isinstance(env, TextGame) else env


@pytest.mark.parametrize("name", NAMES)
def test_garbage_is_not_understood(name):
    env = single_agent(name)
    for seed in range(3):
        env.reset(seed=seed)
        observation, reward, *_, info = env.step(GARBAGE)
        assert info[ACTION_PARSED] is False, f"seed {seed}: {observation[:80]!r}"
        assert reward == 0.0


@pytest.mark.parametrize("name", NAMES)
def test_every_step_of_the_solution_is_understood(name):
    env = single_agent(name)
    for seed in range(3):
        env.reset(seed=seed)
        for action in env.solution():
            *_, info = env.step(action)
            assert info[ACTION_PARSED] is True, f"seed {seed}: {action!r} was not understood"


@pytest.mark.parametrize("name", [n for n in NAMES if issubclass(seed_class(n), ToolEnv)], ids=str)
def test_tool_seeds_judge_any_answer_they_take(name):
    """``<answer>free text</answer>`` is an answer (judged, maybe wrong) in a tool seed with
    answers; a tool seed without answers does not understand one."""
    env = spade_envs.make(name)
    env.reset(seed=0)
    *_, info = env.step(f"<answer>{GARBAGE}</answer>")
    takes_answers = type(env)._answer is not ToolEnv._answer
    assert info[ACTION_PARSED] is takes_answers


@pytest.mark.parametrize(
    ("name", "action"),
    [
        ("NumberGuess", "50"),  # a bare number is a guess
        ("CounterfeitCoin", "weigh 1,2 vs 3,4"),
        ("KnapsackPick", "done"),
        ("MazeExplore", "go west"),  # any one direction word, even into a wall
        ("SequenceRule", "more"),
        ("HiddenFunction", "query 1000"),
        ("LightsOut", "press 9 9"),  # off the board: understood, refused by the rules
        ("BattleshipHunt", "fire I9"),
    ],
)
def test_plain_actions_without_a_box_are_understood(name, action):
    env = spade_envs.make(name)
    env.reset(seed=0)
    *_, info = env.step(action)
    assert info[ACTION_PARSED] is True


def test_twenty_questions_takes_a_bare_object_name_and_refuses_unknown_questions():
    env = spade_envs.make("TwentyQuestions")
    env.reset(seed=0)
    *_, info = env.step("ask qwerty")
    assert info[ACTION_PARSED] is False
    *_, info = env.step(f"{env.names[0]}")  # a guess needs no box
    assert info[ACTION_PARSED] is True


def test_knapsack_refuses_unknown_items():
    env = spade_envs.make("KnapsackPick")
    env.reset(seed=0)
    for action in ("add qwerty", "\\boxed{qwerty, zzz}"):
        *_, info = env.step(action)
        assert info[ACTION_PARSED] is False, action


@pytest.mark.parametrize("name", ["CodeTrace", "ModularEquation"])
def test_a_wasted_last_attempt_still_ends_the_episode(name):
    env = spade_envs.make(name)
    env.reset(seed=0)
    for _ in range(env.max_turns):
        *_, terminated, truncated, info = env.step(GARBAGE)
    assert (terminated, truncated, info[ACTION_PARSED]) == (True, False, False)


def test_warehouse_directions_outside_the_literal_are_malformed_calls():
    env = spade_envs.make("WarehouseRobot")
    env.reset(seed=0)
    payload = json.dumps({"name": "move", "arguments": {"direction": "up"}})
    *_, info = env.step(f"<tool_call>{payload}</tool_call>")
    assert info[ACTION_PARSED] is False
