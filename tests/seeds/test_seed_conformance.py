"""Every seed environment honours the protocol, wins with its solution and resists trivial play."""

from __future__ import annotations

import ast
import sys
import warnings
from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test

import spade_envs
from spade_envs import GameSeatEnv, TextGame, extract_answer, seed_class, seed_names
from spade_envs.core.episodes import play_episode, random_text, repeated, scripted
from spade_envs.core.loader import find_env_class

SEEDS = range(20)
NAMES = seed_names()
TEXT_NAMES = [n for n in NAMES if not issubclass(seed_class(n), TextGame)]
GAME_NAMES = [n for n in NAMES if issubclass(seed_class(n), TextGame)]


def single_agent(name: str, opponent: str = "best"):
    """The env for ``name`` as a single-agent TextEnv (games: seat 0 vs a fixed opponent)."""
    env = spade_envs.make(name)
    if isinstance(env, TextGame):
        return GameSeatEnv(env, seat=0, opponent=opponent)
    return env


def messages(record) -> list[str]:
    return [str(w.message) for w in record]


@pytest.mark.parametrize("name", NAMES)
def test_gymnasium_check_env_has_no_warnings(name):
    env = single_agent(name)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    assert messages(record) == []


@pytest.mark.parametrize("name", NAMES)
def test_renders_last_observation_as_ansi(name):
    env = spade_envs.make(name, render_mode="ansi")
    if isinstance(env, TextGame):
        env.reset(seed=0)
        assert env.render() == env.observe(env.agent_selection)
    else:
        observation, _ = env.reset(seed=0)
        assert env.render() == observation


@pytest.mark.parametrize("name", GAME_NAMES)
def test_games_pass_pettingzoo_api_test(name):
    with warnings.catch_warnings():
        # api_test warns that text observations are not NumPy arrays / Box spaces: by design.
        warnings.simplefilter("ignore")
        api_test(spade_envs.make(name), num_cycles=300)


@pytest.mark.parametrize("name", NAMES)
def test_solution_wins_on_every_seed(name):
    env = single_agent(name)
    for seed in SEEDS:
        env.reset(seed=seed)
        solution = env.solution()
        assert solution and all(isinstance(a, str) for a in solution)
        assert len(solution) <= env.max_turns
        episode = play_episode(env, solution, seed=seed)
        assert episode.won, f"seed {seed}: solution {solution} got {episode.total_reward}"
        assert episode.transitions[-1].terminated
        assert len(episode.transitions) == len(solution)


@pytest.mark.parametrize("name", GAME_NAMES)
def test_game_solution_beats_random_opponent_and_winning_line_exists(name):
    env = single_agent(name, opponent="random")
    for seed in SEEDS:
        env.reset(seed=seed)
        episode = play_episode(env, env.solution(), seed=seed)
        assert episode.won, f"seed {seed}: lost to a random opponent"
        game = spade_envs.make(name)
        game.reset(seed=seed)
        assert game.winning_line("player_0") is not None


@pytest.mark.parametrize("name", NAMES)
def test_trivial_policies_do_not_win(name):
    env = single_agent(name)
    for seed in SEEDS:
        env.reset(seed=seed)
        solution = env.solution()
        hint = env.hint()
        policies = {
            "empty": repeated(""),
            "random": random_text(seed),
            "hint": repeated(hint),
        }
        if len(set(solution)) > 1:
            policies["first solution action repeated"] = repeated(solution[0])
        for label, policy in policies.items():
            episode = play_episode(env, policy, seed=seed)
            assert not episode.won, f"seed {seed}: the {label} policy won"
            assert episode.ended, f"seed {seed}: the {label} policy never ended the episode"


@pytest.mark.parametrize("name", NAMES)
def test_not_solved_at_reset_and_hint_does_not_leak_answer(name):
    env = single_agent(name)
    for seed in SEEDS:
        env.reset(seed=seed)
        hint = env.hint()
        assert isinstance(hint, str) and hint.strip()
        final = extract_answer(env.solution()[-1])
        if len(final) >= 2 and not isinstance(env, GameSeatEnv):
            assert final.lower() not in hint.lower(), f"seed {seed}: hint {hint!r} leaks {final!r}"
        assert env.episode_return == 0.0 and not env.won


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_trajectory_and_seeds_differ(name):
    env = single_agent(name)
    solutions = set()
    for seed in SEEDS:
        env.reset(seed=seed)
        solution = env.solution()
        solutions.add(tuple(solution))
        # Interleave solution moves with junk so that error paths are replayed too.
        mixed = [x for a in solution for x in ("??", a)]
        first = play_episode(env, scripted(mixed), seed=seed)
        second = play_episode(env, scripted(mixed), seed=seed)
        assert first.trace() == second.trace(), f"seed {seed}: two runs differ"
    assert len(solutions) > 1, "every seed gives the same episode"


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25)
@given(
    actions=st.lists(
        st.one_of(
            st.text(max_size=50),
            st.text(alphabet=st.characters(codec="utf-8"), max_size=3000),
            st.sampled_from(
                [
                    "",
                    "\x00",
                    "\\boxed{",
                    "\\boxed{}",
                    "\\boxed{-1}",
                    "\\boxed{1e309}",
                    "<answer></answer>",
                    "<tool_call>",
                    "<tool_call>{}</tool_call>",
                    '<tool_call>{"name": 3}</tool_call>',
                    '<tool_call>{"name": "nope", "arguments": []}</tool_call>',
                    '<tool_call>{"name": "select", "arguments": {"table": 7}}</tool_call>',
                    "take 999999 from 1",
                    "move north",
                    "9" * 5000,
                ]
            ),
        ),
        max_size=12,
    ),
    seed=st.integers(0, 2**31),
)
def test_arbitrary_actions_never_raise(name, actions, seed):
    env = spade_envs.make(name)
    if isinstance(env, TextGame):
        env.reset(seed=seed)
        for action in actions:
            if env.game_over:
                break
            env.step(action)
            env.observe(env.agent_selection)
        return
    env.reset(seed=seed)
    for action in actions:
        observation, reward, terminated, truncated, info = env.step(action)
        assert isinstance(observation, str) and isinstance(info, dict)
        assert env.reward_range[0] <= reward <= env.reward_range[1]
    assert env.turn <= env.max_turns


@pytest.mark.parametrize("name", NAMES)
def test_metadata_is_complete(name):
    meta = spade_envs.describe(seed_class(name))
    assert meta.skill in spade_envs.SKILLS
    assert len(meta.description) >= 40
    assert meta.max_turns >= 1
    assert meta.reward_range[0] < meta.reward_range[1]


def _allowed_imports(module_path: Path) -> list[str]:
    tree = ast.parse(module_path.read_text(encoding="utf-8"))
    bad = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        for n in names:
            root = n.split(".")[0]
            if (
                root not in sys.stdlib_module_names
                and root != "spade_envs"
                and root != "__future__"
            ):
                bad.append(n)
    return bad


@pytest.mark.parametrize("name", NAMES)
def test_seed_is_a_self_contained_module(name):
    cls = seed_class(name)
    path = Path(sys.modules[cls.__module__].__file__)
    assert _allowed_imports(path) == []
    assert find_env_class(sys.modules[cls.__module__]) is cls  # one class per module


def test_corpus_covers_skills_and_kinds():
    metas = [spade_envs.describe(seed_class(n)) for n in NAMES]
    assert len(metas) >= 30
    assert {m.skill for m in metas} >= set(spade_envs.SKILLS)
    multi_turn_text = [m for m in metas if m.kind == "text" and m.max_turns >= 3]
    assert len(multi_turn_text) >= 12
    assert len([m for m in metas if m.kind == "tool"]) >= 8
    assert len([m for m in metas if m.kind == "game"]) >= 5
