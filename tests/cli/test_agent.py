"""The rollout and regret commands through Click's test runner, with a scripted model."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from spade_envs.agent import load_jsonl
from spade_envs.cli.agent import AGENT_COMMANDS, regret_command, rollout_command

from ..agent import conftest as agent_fixtures
from ..agent.conftest import ScriptedModel

registry = agent_fixtures.registry  # the fixture: a fresh registry with the seeds


@pytest.fixture
def scripted(monkeypatch):
    loaded = []

    def load_model(spec, **kwargs):
        loaded.append(spec)
        return ScriptedModel()

    monkeypatch.setattr("spade_envs.llm.load_model", load_model)
    return loaded


def test_rollout_prints_a_summary_and_saves_trajectories(registry, scripted, tmp_path):
    out = tmp_path / "traj.jsonl"
    args = ["NumberGuess", "spade/Nim-v1", "--model", "fake", "--plays", "2", "--hint"]
    result = CliRunner().invoke(rollout_command, [*args, "--out", str(out), "--max-turns", "3"])
    assert result.exit_code == 0, result.output
    assert scripted == ["fake"]
    assert "spade/NumberGuess-v1" in result.output and "spade/Nim-v1" in result.output
    assert "win rate" in result.output and "saved 4 trajectories" in result.output
    episodes = load_jsonl(out)
    assert len(episodes) == 4 and all(e.hint for e in episodes)


def test_regret_prints_the_table_and_records_stats(registry, scripted, tmp_path):
    args = ["NumberGuess", "--model", "fake", "--plays", "2", "--isolation", "none"]
    result = CliRunner().invoke(regret_command, [*args, "--max-turns", "2"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(line for line in lines if line.startswith("env"))
    for column in ("with hint", "without", "hint gain", "regret", "win rate"):
        assert column in header
    row = next(line for line in lines if line.startswith("spade/NumberGuess-v1"))
    assert "±" in row and "2/2" in row
    [stats] = registry.play_stats("spade/NumberGuess-v1")
    assert stats.checkpoint == "scripted" and stats.plays_with_hint == 2
    as_json = CliRunner().invoke(regret_command, [*args, "--json", "--no-record", "--plays", "1"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(next(line for line in as_json.output.splitlines() if line.startswith("{")))
    assert data["env_id"] == "spade/NumberGuess-v1" and data["stderr"] is None
    assert "hint_gain" in data and "raw_regret" not in data  # one name per quantity


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("smollm2", {"batch_size": 5}),
        ("openai:http://127.0.0.1:9", {"max_concurrency": 5}),
        ("vllm:smollm2", {}),
    ],
)
def test_concurrency_is_the_model_batch(registry, monkeypatch, spec, expected):
    seen = []

    def load_model(spec, **kwargs):
        seen.append(kwargs)
        return ScriptedModel()

    monkeypatch.setattr("spade_envs.llm.load_model", load_model)
    args = ["NumberGuess", "--model", spec, "--plays", "1", "--concurrency", "5"]
    result = CliRunner().invoke(rollout_command, [*args, "--max-turns", "1"])
    assert result.exit_code == 0, result.output
    assert seen == [expected]


def test_commands_attach_to_the_main_group(registry, scripted):
    from spade_envs.cli import main

    assert all(main.commands.get(c.name) is c for c in AGENT_COMMANDS)
    result = CliRunner().invoke(main, ["regret", "NoSuchEnv", "--model", "fake", "--plays", "1"])
    assert result.exit_code == 1 and result.stdout == ""
    assert "No version of 'NoSuchEnv' is registered in the registry at" in result.stderr
    assert CliRunner().invoke(main, ["rollout", "--help"]).exit_code == 0


def test_progress_is_printed_as_lines_when_not_on_a_terminal(registry, scripted):
    args = ["NumberGuess", "--model", "fake", "--plays", "5", "--max-turns", "1"]
    result = CliRunner().invoke(rollout_command, args)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("playing: ")]
    assert lines[0] == "playing: 0/5 episodes"
    assert [line.split()[1] for line in lines[1:]] == ["1/5", "2/5", "3/5", "4/5", "5/5"]


def _register(registry, source: str) -> str:
    """Store ``source`` (not a seed) as the designer would; returns its gym ID."""
    from spade_envs.core.loader import load_env_class
    from spade_envs.core.metadata import describe

    cls = load_env_class(source)
    return registry.register(source, describe(cls, origin="designer"), status="validated").id


@pytest.mark.parametrize("command", ["rollout", "regret"])
def test_isolation_none_refuses_code_that_is_not_a_seed_unless_trusted(registry, scripted, command):
    from spade_envs.cli import main

    from ..agent.conftest import lying_env

    env_id = _register(registry, lying_env(1.0, False))
    args = [command, env_id, "--model", "fake", "--plays", "1", "--isolation", "none"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2, refused.output
    assert f"{env_id} is not a packaged seed" in refused.output and "--trust-code" in refused.output
    assert scripted == []  # refused before the model was loaded
    trusted = CliRunner().invoke(main, [*args, "--trust-code"])
    assert trusted.exit_code == 0, trusted.output
    assert "WARNING: --trust-code" in trusted.output and scripted == ["fake"]


def test_rollout_where_every_play_failed_exits_non_zero_saying_why(registry, monkeypatch):
    from spade_envs.llm.base import Completion

    down = ScriptedModel(lambda conversation, seed: Completion.failed("connection refused"))
    monkeypatch.setattr("spade_envs.llm.load_model", lambda spec, **kwargs: down)
    result = CliRunner().invoke(rollout_command, ["NumberGuess", "--model", "x", "--plays", "2"])
    assert result.exit_code == 1, result.output
    assert "failed plays: 2 model_error of 2" in result.output
    assert re.search(
        r"Error: Every one of the 2 plays of this rollout failed \(2 model_error\)", result.output
    )
    assert "connection refused" in result.output and "The model could not be asked" in result.output
    # One play that finished is enough for a zero exit, with the failures counted.
    flaky = ScriptedModel(
        lambda conversation, seed: (
            Completion.failed("dropped") if "HINT:" in conversation[1]["content"] else "\\boxed{50}"
        )
    )
    monkeypatch.setattr("spade_envs.llm.load_model", lambda spec, **kwargs: flaky)
    args = ["NumberGuess", "--model", "x", "--plays", "1", "--max-turns", "1"]
    result = CliRunner().invoke(regret_command, [*args, "--no-record"])
    assert result.exit_code == 0, result.output
    assert "failed: 1 model_error" in result.output


def test_regret_where_every_env_crashed_exits_non_zero(registry, scripted):
    from ..agent.conftest import CRASHING_ENV

    env_id = _register(registry, CRASHING_ENV)
    args = [env_id, "--model", "fake", "--plays", "2", "--step-timeout", "5"]
    result = CliRunner().invoke(regret_command, args)
    assert result.exit_code == 1, result.output
    assert "Every one of the 4 plays of this regret estimate failed (4 env_error)" in result.output
    assert "boom" in result.output and "failed: 4 env_error" in result.output
    assert registry.play_stats(env_id) == []  # nothing finished: nothing stored
