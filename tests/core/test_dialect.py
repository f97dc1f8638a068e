"""The SPADE dialect read in-process: detection, predefined names, SPADE's seeds, truncation,
rewards and wins, ToolUseBaseEnv's protocol and prose solutions.

The fixtures in ``spade_fixtures/`` are ours, written in the shapes SPADE's designer
prompts ask for (spade-rl/spade, ``spade/core/prompts/``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_envs.core.dialect import Dialect, detect_dialect, dialect_label, predefined_names
from spade_envs.core.loader import load_env_class
from spade_envs.core.spade_tool import FORMAT_PENALTY, prose_actions
from spade_envs.error import EnvContractError, EnvLoadError
from spade_envs.seeds import seed_source

FIXTURES = Path(__file__).parent / "spade_fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# ----- detection -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    [
        "multi_turn_no_imports.py",
        "tool_use_prose.py",
        "two_env_classes.py",
        "prose_not_numbered.py",
    ],
)
def test_spade_fixtures_read_as_spade(name):
    assert detect_dialect(fixture(name)) is Dialect.SPADE


def test_our_seeds_read_as_native_and_the_label_says_what_it_means():
    assert detect_dialect(seed_source("NumberGuess")) is Dialect.NATIVE
    assert dialect_label(seed_source("NumberGuess")).startswith("native (spade_envs protocol")
    assert "first *Env class" in dialect_label(fixture("tool_use_prose.py"))


def test_signals_of_the_spade_dialect_each_suffice():
    body = "class GuessEnv:\n    def reset(self, seed=None): ...\n    def step(self, a): ...\n"
    assert detect_dialect(body) is Dialect.SPADE  # no class of ours
    tool = "from spade_envs import TextEnv\nclass T(ToolUseBaseEnv):\n    pass\n"
    assert detect_dialect(tool) is Dialect.SPADE  # an unimported ToolUseBaseEnv
    header = '"""SPADE self-play generated game"""\n' + seed_source("NumberGuess")
    assert detect_dialect(header) is Dialect.SPADE
    assert detect_dialect("def broken(:") is Dialect.NATIVE  # the static checks say why


def test_predefined_names_are_only_modules_environment_code_may_import():
    from spade_envs.validation.static import ALLOWED_MODULES

    names = predefined_names()
    modules = {type(json)}
    for name, value in names.items():
        if isinstance(value, tuple(modules)):
            assert value.__name__.split(".")[0] in ALLOWED_MODULES, name
    assert "np" not in names and "numpy" not in names and "os" not in names
    assert names["deque"].__module__ == "collections"


# ----- loading and playing ---------------------------------------------------------------------
def test_a_multi_turn_game_without_imports_loads_and_plays_to_a_win():
    env = load_env_class(fixture("multi_turn_no_imports.py"))()
    assert (env.max_turns, env.reward_range, env.win_rule) == (12, (-10.0, 10.0), "final_reward")
    env.reset(seed=3)
    low, high = 1, 50
    while True:
        guess = (low + high) // 2
        observation, reward, terminated, truncated, info = env.step(f"\\boxed{{{guess}}}")
        if terminated or truncated:
            break
        low, high = (guess + 1, high) if "higher" in observation else (low, guess - 1)
    assert terminated and reward == 1.0 and env.won and info["success"] is True


def test_reset_seed_s_is_spades_episode_s():
    source = fixture("multi_turn_no_imports.py")
    cls = load_env_class(source)
    raw = cls.wrapped()  # the game class itself, as SPADE's loader would construct it
    for seed in (0, 7, 123456):
        raw.reset(seed=seed)
        env = cls()
        env.reset(seed=seed)
        assert env.inner._target == raw._target


def test_truncation_is_kept_and_a_truncated_episode_is_not_won():
    env = load_env_class(fixture("multi_turn_no_imports.py"))()
    env.reset(seed=1)
    for _ in range(12):
        _, reward, terminated, truncated, _ = env.step("no answer")
        if terminated or truncated:
            break
    assert (terminated, truncated, reward, env.won) == (False, True, 0.0, False)


def test_the_first_env_class_is_the_game_as_spades_loader_takes_it():
    cls = load_env_class(fixture("two_env_classes.py"))
    assert cls.__name__ == "SumTargetEnv"
    env = cls()
    env.reset(seed=5)
    [action] = env.solution()
    assert env.step(action)[1:3] == (1.0, True)


def test_a_first_env_class_without_step_is_refused_with_spades_reason():
    with pytest.raises(EnvLoadError, match="BoardEnv .*missing required method: step"):
        load_env_class(fixture("broken/first_env_missing_step.py"))


def test_a_module_without_any_env_class_names_both_dialects():
    with pytest.raises(EnvLoadError, match="no environment class: .*TextEnv, .*class named \\*Env"):
        load_env_class(fixture("broken/no_env_class.py"))


def test_a_reward_outside_spades_range_is_refused():
    env = load_env_class(fixture("broken/reward_out_of_range.py"))()
    env.reset(seed=0)
    with pytest.raises(EnvContractError, match="outside reward_range"):
        env.step("\\boxed{3}")


# ----- ToolUseBaseEnv --------------------------------------------------------------------------
def test_tool_games_follow_spades_protocol_and_win_despite_a_format_penalty():
    env = load_env_class(fixture("tool_use_prose.py"))()
    _, info = env.reset(seed=2)
    assert {t["function"]["name"] for t in info["tools"]} == {"cd", "ls", "mkdir", "mv"}
    assert env.step("I will look around")[1] == FORMAT_PENALTY
    assert env.step("<tool_call>{not json}</tool_call>")[1] == FORMAT_PENALTY
    unknown = env.step('<tool_call>{"name": "rm", "arguments": {}}</tool_call>')
    assert unknown[1] == 0.0 and "Unknown tool 'rm'. Available: cd, ls" in unknown[0]
    actions = env.solution()
    assert actions[0].startswith("<tool_call>") and actions[-1].startswith("<answer>")
    for action in actions:
        observation, reward, terminated, truncated, _ = env.step(action)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert env.episode_return == pytest.approx(0.8) and env.won  # SPADE's win: final reward


def test_a_tool_game_out_of_turns_is_truncated_with_the_solution_shown():
    env = load_env_class(fixture("tool_use_prose.py"))()
    env.reset(seed=2)
    for _ in range(env.max_turns):
        observation, reward, terminated, truncated, _ = env.step("<answer>wrong</answer>")
    assert (terminated, truncated) == (False, True) and "Solution:" in observation


def test_prose_not_in_the_numbered_form_is_unproven_not_an_error_of_the_game():
    from spade_envs.core.duck import UnprovenSolution

    env = load_env_class(fixture("prose_not_numbered.py"))()
    env.reset(seed=0)
    with pytest.raises(UnprovenSolution, match="numbered-call form"):
        env.solution()


# ----- prose solutions -------------------------------------------------------------------------
def test_prose_in_spades_numbered_form_becomes_tool_calls_and_an_answer():
    prose = (
        "1. cd(path=\"docs\") -> Changed to /home/docs 2. mkdir(name='archive') -> Created "
        '3. mv(src="report.txt", dst="archive") -> Moved ANSWER: archive/report.txt'
    )
    actions = prose_actions(prose)
    assert [json.loads(a[11:-12]) for a in actions[:-1]] == [
        {"name": "cd", "arguments": {"path": "docs"}},
        {"name": "mkdir", "arguments": {"name": "archive"}},
        {"name": "mv", "arguments": {"src": "report.txt", "dst": "archive"}},
    ]
    assert actions[-1] == "<answer>archive/report.txt</answer>"
    numbered_answer = "1. ls(path='/tmp') 2. <answer>done</answer>"
    assert prose_actions(numbered_answer)[-1] == "<answer>done</answer>"


@pytest.mark.parametrize(
    "prose",
    [
        "Look around, then answer.",
        "1. cd(path=docs) ANSWER: x",  # not a literal
        "1. cd(*args) ANSWER: x",
        '1. cd(path="a")',  # no answer
        "ANSWER: 4",  # no call
    ],
)
def test_prose_outside_the_form_gives_none(prose):
    assert prose_actions(prose) is None


@given(st.text(max_size=300))
def test_any_prose_gives_actions_or_none_and_never_raises(text):
    actions = prose_actions(text)
    assert actions is None or (actions and actions[-1].startswith("<answer>"))


def test_every_base_the_static_checks_know_is_a_protocol_base_of_the_dialect():
    from spade_envs.core.dialect import PROTOCOL_BASES, expected_win_rule
    from spade_envs.validation import static

    assert set(static._PROTOCOL_BASES) | set(static._SUITE_BASES) <= PROTOCOL_BASES
    for base in PROTOCOL_BASES:
        source = f"from spade_envs import {base}\nclass Task({base}):\n    pass\n"
        assert detect_dialect(source) is Dialect.NATIVE and expected_win_rule(source) == "return"
