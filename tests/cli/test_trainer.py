"""spade-envs train / report and python -m spade_envs.trainer, through click's CliRunner."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_envs.cli import main
from spade_envs.trainer.metrics import read_metrics

from ..model_support import torch_threads
from ..trainer.trainer_support import RESUME_SETTINGS, save_tiny_llama

ROOT = Path(__file__).resolve().parents[2]


def _need(*modules: str) -> None:
    for name in modules:
        if os.environ.get("CI"):  # in CI a missing dependency fails
            importlib.import_module(name)
        else:
            pytest.importorskip(name)


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("SPADE_REGISTRY_URL", "SPADE_CHECKPOINT_DIR"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_train_then_report(tmp_path, clean_env):
    _need("torch", "transformers", "matplotlib")
    import torch

    model = save_tiny_llama(tmp_path / "model")
    run = tmp_path / "run"
    settings = [
        item
        for s in (
            f"model.spec={model}",
            *RESUME_SETTINGS,
            "eval.before_training=true",
            "designer.mode=scaffold",  # the loop with scaffold attempts (cpu-test says new)
        )
        for item in ("--set", s)
    ]
    runner = CliRunner()
    with torch_threads(torch.get_num_threads()):  # the preset sets 1 thread: put it back
        result = runner.invoke(
            main,
            [
                "train",
                "--preset",
                "cpu-test",
                "--run-dir",
                str(run),
                "--iterations",
                "1",
                *settings,
            ],
        )
    assert result.exit_code == 0, result.output
    assert "[iter 1/1] design:" in result.output and "[iter 1/1] update:" in result.output
    assert "iter yield regret" in result.output and f"spade-envs report {run}" in result.output
    # The untrained model's evaluation comes first, as iteration 0.
    records = read_metrics(run)
    assert [r["iteration"] for r in records] == [0, 1]
    assert records[0]["eval_plays"] > 0 and "loss" not in records[0]
    # The closing summary: yield, plays, synthesized IDs (also in synthesized.json).
    assert "attempts registered" in result.output and "plays: " in result.output
    ids = json.loads((run / "synthesized.json").read_text())
    if ids:  # each synthesized ID is named in the summary
        assert all(f"  {i} from " in result.output for i in ids)
    else:
        assert "synthesized environments: none" in result.output
    assert (run / "config.toml").is_file() and (run / "checkpoints" / "iter-0001").is_dir()

    # Run again: already finished, it only prints the summary.
    again = runner.invoke(
        main,
        ["train", "--preset", "cpu-test", "--run-dir", str(run), "--iterations", "1", *settings],
    )
    assert again.exit_code == 0, again.output
    assert [r["iteration"] for r in read_metrics(run)] == [0, 1]  # no second baseline
    assert "[iter" not in again.output and "iter yield regret" in again.output

    report = runner.invoke(main, ["report", str(run)])
    assert report.exit_code == 0, report.output
    assert "wrote 7 plots" in report.output
    assert sorted(p.name for p in (run / "plots").iterdir()) == [
        "designer.png",
        "failures.png",
        "losses.png",
        "regret.png",
        "returns.png",
        "throughput.png",
        "time.png",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--preset", "cpu-tinyy"], "Did you mean 'cpu-tiny'"),
        (["--set", "grpo.lr=1"], "Unknown setting 'grpo.lr'"),
        (["--set", "iterations"], "--set needs key=value"),
        (["--resume", "sometimes"], "Invalid value for '--resume'"),
    ],
)
def test_train_refuses_bad_options_before_loading_anything(tmp_path, clean_env, args, message):
    result = CliRunner().invoke(main, ["train", "--run-dir", str(tmp_path / "r"), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "r").exists()


def test_train_refuses_isolation_none_for_designer_environments(tmp_path, clean_env):
    args = ["train", "--run-dir", str(tmp_path / "r"), "--set", "agent.isolation=none"]
    for extra in ([], ["--set", "agent.trust_code=true"]):
        result = CliRunner().invoke(main, [*args, *extra])
        assert result.exit_code == 2 and "agent.isolation = 'none'" in result.output
    assert not (tmp_path / "r").exists()


def test_train_where_every_play_failed_exits_1_with_the_first_failure(tmp_path, clean_env):
    from spade_envs.agent import Episode, FailureCounts
    from spade_envs.trainer.stages import IterationFailedError

    failed = Episode("spade/X-v1", 0, 0, False, "", "", "text", "", "m", "sandbox_crashed")
    failed.error = "SandboxCrashed: the worker closed its pipe during worker start-up"

    class Failing:
        def __init__(self, *args, **kwargs):
            pass

        def run(self):
            raise IterationFailedError(FailureCounts.of([failed, failed]), 1)

    clean_env.setattr("spade_envs.trainer.loop.SelfPlayTrainer", Failing)
    result = CliRunner().invoke(main, ["train", "--run-dir", str(tmp_path / "r")])
    assert result.exit_code == 1, result.output
    assert "Every one of the 2 plays of iteration 1 failed (2 sandbox_crashed)" in result.output
    assert "worker closed its pipe during worker start-up" in result.output
    assert "Usage:" not in result.output  # a failed run, not a usage mistake


def test_report_of_a_directory_without_metrics(tmp_path):
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 1  # the directory holds no run: not a usage mistake
    assert result.stderr.startswith("Error: ") and "Cannot read metrics" in result.stderr
    assert "Usage:" not in result.output


def test_python_m_spade_envs_trainer_is_the_train_command():
    done = subprocess.run(
        [sys.executable, "-m", "spade_envs.trainer", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "-m spade_envs.trainer [OPTIONS]" in done.stdout
    assert "--resume [auto|never|always]" in done.stdout and "--set KEY=VALUE" in done.stdout
