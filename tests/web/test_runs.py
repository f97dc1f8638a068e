"""Self-play runs: metrics.jsonl parsing, listing, and no way out of the runs directory."""

from __future__ import annotations

import json

import pytest

from spade_envs.web.params import HTTPError
from spade_envs.web.runs import MAX_POINTS, RunsDir, read_metrics

from .conftest import write_run


def test_metrics_keep_numeric_fields_and_skip_bad_lines(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(
        json.dumps(
            {"iteration": 0, "mean_regret": 0.1, "ok": True, "name": "x", "nan": float("nan")}
        )
        + "\nnot json\n[1, 2]\n\n"
        + json.dumps({"iteration": 1, "mean_regret": 0.2})
        + '\n{"iteration": 2, "mean_re'  # a line still being written
    )
    rows, skipped = read_metrics(path)
    assert rows == [{"iteration": 0.0, "mean_regret": 0.1}, {"iteration": 1.0, "mean_regret": 0.2}]
    assert skipped == 2


def test_a_run_written_before_the_hint_gain_rename_reads_under_the_new_name(tmp_path):
    path = tmp_path / "metrics.jsonl"
    old = {"iteration": 0, "mean_regret": 0.0, "mean_raw_regret": -0.25}
    path.write_text(
        json.dumps(old) + "\n" + json.dumps({"iteration": 1, "mean_hint_gain": 0.5}) + "\n"
    )
    rows, _ = read_metrics(path)
    # The floored regret keeps its name; the unfloored difference is the hint gain.
    assert rows == [
        {"iteration": 0.0, "mean_regret": 0.0, "mean_hint_gain": -0.25},
        {"iteration": 1.0, "mean_hint_gain": 0.5},
    ]


def test_runs_are_listed_and_read_with_series(tmp_path):
    write_run(tmp_path / "older", iterations=2)
    write_run(tmp_path / "newer", iterations=5)
    (tmp_path / "not-a-run").mkdir()
    (tmp_path / ".hidden").mkdir()
    write_run(tmp_path / ".hidden")
    runs = RunsDir(tmp_path)
    assert set(runs.names()) == {"older", "newer"}
    run = runs.get("newer")
    assert len(run.rows) == 5 and run.config == '{"preset": "<tiny>"}'
    assert "model" not in run.fields and "iteration" not in run.fields
    assert run.series("mean_regret")[-1] == (4.0, pytest.approx(0.2))
    assert RunsDir(None).names() == []


def test_a_directory_that_is_itself_a_run(tmp_path):
    write_run(tmp_path)
    assert RunsDir(tmp_path).names() == ["."]
    assert len(RunsDir(tmp_path).get(".").rows) == 6


def test_names_outside_the_listing_are_not_found(tmp_path):
    write_run(tmp_path / "runs" / "a")
    (tmp_path / "secret").mkdir()
    write_run(tmp_path / "secret")
    runs = RunsDir(tmp_path / "runs")
    for name in ("../secret", "..", "/etc", "a/../../secret", "missing"):
        with pytest.raises(HTTPError, match="There is no run called") as info:
            runs.get(name)
        assert info.value.status == 404


def test_long_runs_are_thinned_and_reread_when_they_grow(tmp_path):
    directory = write_run(tmp_path / "long", iterations=MAX_POINTS * 3)
    runs = RunsDir(tmp_path)
    series = runs.get("long").series("mean_regret")
    assert len(series) == MAX_POINTS and series[-1][0] == MAX_POINTS * 3 - 1
    with (directory / "metrics.jsonl").open("a") as out:
        out.write(json.dumps({"iteration": 99999, "mean_regret": 9.0}) + "\n")
    assert runs.get("long").last()["mean_regret"] == 9.0


def test_the_trainers_config_toml_is_preferred_and_null_metrics_are_gaps(tmp_path):
    directory = write_run(tmp_path / "run")
    (directory / "config.toml").write_text('preset = "<tiny>"\n')
    with (directory / "metrics.jsonl").open("a") as out:
        out.write(json.dumps({"iteration": 6, "eval_return": None, "mean_regret": 0.4}) + "\n")
    run = RunsDir(tmp_path).get("run")
    assert run.config_name == "config.toml" and run.config == 'preset = "<tiny>"\n'
    assert [x for x, _ in run.series("eval_return")] == [0, 1, 2, 3, 4, 5]  # no point at 6
    assert run.series("mean_regret")[-1] == (6.0, 0.4)
