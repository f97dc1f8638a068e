"""Metrics: flat JSON lines, TensorBoard scalars, rewinding on resume."""

from __future__ import annotations

import importlib
import json
import os

import pytest

from spade_envs.error import SpadeError
from spade_envs.trainer import metrics as metrics_module
from spade_envs.trainer.metrics import (
    FAILURE_FIELDS,
    METRIC_FIELDS,
    REJECT_FIELDS,
    TIMING_FIELDS,
    MetricsWriter,
    read_metrics,
    reject_field,
)

CONTRACT = (
    "iteration designer_yield mean_regret agent_return_with_hint agent_return_without_hint "
    "eval_return loss loss_agent loss_designer tokens_agent tokens_designer tokens_per_s "
    "seconds_generate seconds_validate seconds_play seconds_update"
).split()


def _tensorboard_events(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder))
    events.Reload()
    return {
        tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]
    }


def test_the_contract_fields_are_all_written():
    assert set(CONTRACT) <= set(METRIC_FIELDS)
    assert "seconds_play" in TIMING_FIELDS and "tokens_per_s" in TIMING_FIELDS
    assert "loss" not in TIMING_FIELDS and "tokens_agent" not in TIMING_FIELDS


def test_lines_are_flat_json_and_nan_becomes_null(tmp_path):
    writer = MetricsWriter(tmp_path, tensorboard=False)
    writer.write({"iteration": 1, "loss": 0.5, "eval_return": float("nan"), "note": "x"})
    writer.write({"iteration": 2, "loss": 0.25, "eval_return": None})
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["eval_return"] for line in lines] == [None, None]
    assert read_metrics(tmp_path)[1] == {"iteration": 2, "loss": 0.25, "eval_return": None}
    with pytest.raises(SpadeError, match=r"Metric 'bad' must be a number or string"):
        writer.write({"iteration": 3, "bad": [1, 2]})


def test_reset_rewinds_to_a_checkpoints_copy(tmp_path):
    writer = MetricsWriter(tmp_path, tensorboard=False)
    for i in (1, 2, 3):
        writer.write({"iteration": i})
    kept = "".join(writer.text().splitlines(keepends=True)[:2])
    writer.reset(kept)
    assert [r["iteration"] for r in read_metrics(tmp_path)] == [1, 2]


def test_tensorboard_gets_every_number_and_a_resume_purges_later_steps(tmp_path):
    if os.environ.get("CI"):
        importlib.import_module("tensorboard")
    else:
        pytest.importorskip("tensorboard")
    writer = MetricsWriter(tmp_path)
    assert writer.tensorboard
    for i in (1, 2, 3):
        writer.write({"iteration": i, "loss": float(i), "seconds_play": 1.0, "mode": "x"})
    writer.close()
    events = _tensorboard_events(tmp_path / "tensorboard")
    assert events["update/loss"] == [(1, 1.0), (2, 2.0), (3, 3.0)]
    assert "time/seconds_play" in events and not any("mode" in tag for tag in events)
    # Resumed after iteration 1: the killed run's steps 2 and 3 are dropped.
    resumed = MetricsWriter(tmp_path, start_iteration=1)
    resumed.write({"iteration": 2, "loss": 20.0})
    resumed.close()
    assert _tensorboard_events(tmp_path / "tensorboard")["update/loss"] == [(1, 1.0), (2, 20.0)]


def test_a_resume_in_the_same_second_and_process_still_reads_last(tmp_path, monkeypatch):
    """TensorBoard reads event files in name order; a process's tenth writer ("...10") sorts
    before its ninth ("...9") when both are created in one second (a CI failure)."""
    if os.environ.get("CI"):
        importlib.import_module("tensorboard")
    else:
        pytest.importorskip("tensorboard")
    from tensorboard.summary.writer import event_file_writer

    monkeypatch.setattr(event_file_writer, "_global_uid", event_file_writer.AtomicCounter(9))
    writer = MetricsWriter(tmp_path)
    for i in (1, 2, 3):
        writer.write({"iteration": i, "loss": float(i)})
    writer.close()
    resumed = MetricsWriter(tmp_path, start_iteration=1)
    resumed.write({"iteration": 2, "loss": 20.0})
    resumed.close()
    names = sorted(p.name for p in (tmp_path / "tensorboard").iterdir())
    assert names[-1].endswith(".10"), names  # the resumed writer's file, read last
    assert _tensorboard_events(tmp_path / "tensorboard")["update/loss"] == [(1, 1.0), (2, 20.0)]


def test_without_tensorboard_the_writer_warns_once_and_writes_json(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_tensorboard(name, *args, **kwargs):
        if name.startswith("torch.utils.tensorboard"):
            raise ImportError("no tensorboard")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tensorboard)
    monkeypatch.setattr(metrics_module, "_WARNED", False)
    with pytest.warns(UserWarning, match="tensorboard is not installed"):
        writer = MetricsWriter(tmp_path / "a")
    assert not writer.tensorboard
    writer.write({"iteration": 1, "loss": 1.0})
    assert read_metrics(tmp_path / "a") == [{"iteration": 1, "loss": 1.0}]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MetricsWriter(tmp_path / "b")  # the second writer stays quiet


def test_designer_failure_kinds_fall_into_fields():
    from spade_envs.generator import DesignerFailure as F

    assert reject_field(F.NO_CODE) == "reject_no_code"
    assert reject_field(F.TRUNCATED) == "reject_truncated"
    assert reject_field(F.BAD_FILLING) == "reject_bad_filling"
    assert reject_field(F.INVALID) == "reject_invalid"
    assert reject_field(F.NOT_NOVEL) == "reject_not_novel"
    assert reject_field(F.MODEL_ERROR) == reject_field(F.PROMPT_ERROR) == "reject_model_error"
    assert reject_field(F.REGISTRY_ERROR) == reject_field(F.VALIDATOR_ERROR) == "reject_other"
    assert reject_field(None) == "reject_other"  # stopped without a kind
    # Every kind has its field (the fields are derived from the enum), and the kind is
    # typed, never read out of a message.
    assert {reject_field(kind) for kind in F} == set(REJECT_FIELDS)
    assert REJECT_FIELDS[-1] == "reject_other" and len(set(REJECT_FIELDS)) == len(REJECT_FIELDS)
    with pytest.raises(ValueError, match="not a valid DesignerFailure"):
        reject_field("invalid: check_env: boom")


def test_failed_plays_have_a_field_per_outcome():
    from spade_envs.agent.failures import FAILURE_OUTCOMES

    assert FAILURE_FIELDS == tuple(f"failed_{outcome}" for outcome in FAILURE_OUTCOMES)
    assert {"plays_failed", "eval_failed", *FAILURE_FIELDS} <= set(METRIC_FIELDS)


def test_unreadable_metrics_say_what_is_wrong(tmp_path):
    with pytest.raises(SpadeError, match="Cannot read metrics from .*Pass a run directory"):
        read_metrics(tmp_path)
    (tmp_path / "metrics.jsonl").write_text('{"iteration": 1}\n[1]\n')
    with pytest.raises(SpadeError, match=r"metrics.jsonl:2 is not a JSON object"):
        read_metrics(tmp_path)


def test_a_run_written_before_the_hint_gain_rename_reads_under_the_new_name(tmp_path):
    old = {"iteration": 1, "mean_regret": 0.0, "mean_raw_regret": -0.25}
    (tmp_path / "metrics.jsonl").write_text(json.dumps(old) + "\n")
    assert "mean_hint_gain" in METRIC_FIELDS and "mean_raw_regret" not in METRIC_FIELDS
    # The floored regret keeps its name; the unfloored difference is the hint gain.
    assert read_metrics(tmp_path) == [{"iteration": 1, "mean_regret": 0.0, "mean_hint_gain": -0.25}]
