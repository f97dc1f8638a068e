"""``spade-envs import --suite``, ``list --suite``, ``show`` and ``evaluate`` through the
CLI runner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from spade_envs.cli import main

from ..model_support import SMOLLM2_MARKS
from ..suites import conftest as suite_fixtures

# The suites' fixtures: the imported suite registry, one validation process per import.
imported = suite_fixtures.imported
one_validation_process = suite_fixtures.one_validation_process
registry = suite_fixtures.registry


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A CliRunner on a new, empty registry (reading commands refuse a missing file)."""
    from spade_envs.registry import Registry

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    Registry(url).close()
    return CliRunner()


def test_import_a_suite_task_then_list_and_show_it(fresh):
    # CycleCounting has one right answer (CRT accepts many, which the gate's wrong-answer
    # probe can hit): its verdict does not depend on the check seeds.
    result = fresh.invoke(
        main, ["import", "--suite", "rlve", "--tasks", "CycleCounting", "--levels", "0"]
    )
    assert result.exit_code == 0, result.output
    assert "rlve: 1 environments planned" in result.output and "1 validated" in result.output
    listed = fresh.invoke(main, ["list", "--suite", "rlve"])
    assert (
        "spade/RlveCycleCountingL0-v1" in listed.output
        and "1 environment version(s)" in listed.output
    )
    assert (
        "0 environment version(s)"
        in fresh.invoke(main, ["list", "--suite", "reasoning-gym"]).output
    )
    shown = fresh.invoke(main, ["show", "spade/RlveCycleCountingL0-v1"])
    assert (
        "suite: rlve 0.0.1 task CycleCounting level 0 (MIT, https://github.com/Zhiyuan-Zeng/RLVE)"
        in shown.output
    )
    again = fresh.invoke(main, ["import", "--suite", "rlve", "--tasks", "CycleCounting", "--json"])
    assert json.loads(again.output)["counts"]["already_registered"] == 1


def test_list_tasks(fresh):
    result = fresh.invoke(main, ["import", "--suite", "reasoning-gym", "--list-tasks"])
    names = result.output.split()
    assert result.exit_code == 0 and len(names) == 105 and "chain_sum" in names


@pytest.mark.parametrize(
    "args, message",
    [
        (["import", "--suite", "rlv"], "No suite named 'rlv'. Did you mean 'rlve'?"),
        (
            ["import", "--suite", "rlve", "--tasks", "CRTT"],
            "rlve has no task 'CRTT'. Did you mean 'CRT'",
        ),
        (["import", "--suite", "rlve", "--levels", "easy"], "level 'easy' is not a level"),
        (["import", "--tasks", "CRT"], "--tasks, --levels and --list-tasks go with --suite"),
        (["import"], "Pass the PATH of a corpus to import, or --suite NAME"),
        (["import", "--suite", "rlve", "--no-validate"], "--suite always validates"),
        (["list", "--suite", "rg"], "No suite named 'rg'"),
        (["evaluate", "--suite", "rg-hrad"], "No evaluation set 'rg-hrad'. Did you mean 'rg-hard'"),
        (["evaluate", "--suite", "rlve:3"], "spade-envs import --suite rlve --levels 3"),
    ],
)
def test_bad_input_says_what_to_do(fresh, args, message):
    result = fresh.invoke(main, args)
    assert result.exit_code != 0
    assert message in " ".join(result.output.split()), result.output


@pytest.mark.slow
@SMOLLM2_MARKS[1]
def test_evaluate_smollm2_on_an_imported_suite(registry):
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--model",
            "smollm2",
            "--suite",
            "rlve",
            "--episodes",
            "2",
            "--max-tokens",
            "24",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{") :])
    assert data["overall"]["plays"] + data["failed_plays"] == 4
    assert data["failed_plays"] == 0 and 0 < data["env_share"] < 1
    assert {c["category"] for c in data["categories"]} == {"logic"}
