"""spade-envs report: PNG curves from metrics.jsonl and the summary table."""

from __future__ import annotations

import importlib
import json
import os

import pytest

from spade_envs.error import SpadeError
from spade_envs.trainer.metrics import METRIC_FIELDS, MetricsWriter, read_metrics
from spade_envs.trainer.report import (
    PLOTS,
    STACKED_PLOTS,
    draw_report,
    stack_heights,
    summary_table,
)

PNG = b"\x89PNG\r\n\x1a\n"


def _run_dir(tmp_path, iterations=3):
    writer = MetricsWriter(tmp_path, tensorboard=False)
    for i in range(1, iterations + 1):
        record = dict.fromkeys(METRIC_FIELDS, 0.5)
        record.update(iteration=i, eval_return=None if i == 2 else 0.25 * i, tokens_agent=10 * i)
        writer.write(record)
    return tmp_path


def test_report_draws_every_plot_as_png(tmp_path):
    if os.environ.get("CI"):
        importlib.import_module("matplotlib")
    else:
        pytest.importorskip("matplotlib")
    paths = draw_report(_run_dir(tmp_path))
    names = sorted(p.name for p in paths)
    assert names == sorted([name for name, *_ in PLOTS] + ["time.png", "failures.png"])
    for path in paths:
        assert path.parent == tmp_path / "plots"
        assert path.read_bytes()[:8] == PNG and path.stat().st_size > 5_000
    elsewhere = draw_report(tmp_path, tmp_path / "other")
    assert all(p.parent == tmp_path / "other" for p in elsewhere)


def test_failures_are_plotted_by_outcome(tmp_path):
    if os.environ.get("CI"):
        importlib.import_module("matplotlib")
    else:
        pytest.importorskip("matplotlib")
    [(_, _, _, layers)] = [p for p in STACKED_PLOTS if p[0] == "failures.png"]
    assert [field for field, _ in layers] == [
        "failed_env_error",
        "failed_timeout",
        "failed_sandbox_crashed",
        "failed_model_error",
        "eval_failed",
    ]
    writer = MetricsWriter(tmp_path / "a", tensorboard=False)
    writer.write({"iteration": 1, "failed_sandbox_crashed": 7, "failed_env_error": 2})
    writer.write({"iteration": 2, "failed_timeout": 1})
    writer.close()
    none = MetricsWriter(tmp_path / "b", tensorboard=False)
    none.write({"iteration": 1, **dict.fromkeys(METRIC_FIELDS[1:], 0)})
    none.close()
    for folder in ("a", "b"):
        drawn = draw_report(tmp_path / folder)[-1]
        assert drawn.name == "failures.png" and drawn.read_bytes()[:8] == PNG
    bars = dict(stack_heights(read_metrics(tmp_path / "a"), layers))
    assert bars == {
        "env_error": [2.0, 0.0],
        "timeout": [0.0, 1.0],
        "sandbox_crashed": [7.0, 0.0],
        "model_error": [0.0, 0.0],
        "evaluation (any outcome)": [0.0, 0.0],
    }


def test_report_needs_metrics(tmp_path):
    (tmp_path / "metrics.jsonl").write_text("")
    with pytest.raises(SpadeError, match="has no metrics yet"):
        draw_report(tmp_path)


def test_summary_table_has_a_row_per_iteration_and_dashes_for_missing_values(tmp_path):
    from spade_envs.trainer.metrics import read_metrics

    table = summary_table(read_metrics(_run_dir(tmp_path)))
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["iter", "yield", "regret"]
    assert lines[0].split()[6] == "failed" and lines[2].split()[6] == "0"
    assert len(lines) == 2 + 3
    assert lines[3].split()[0] == "2" and "-" in lines[3].split()  # no evaluation there
    assert lines[4].split()[-3] == "30"  # tokens_agent of iteration 3
    assert "(no iterations recorded)" in summary_table([])


def test_closing_summary_names_the_synthesized_ids_yield_failures_and_plots(tmp_path):
    from spade_envs.registry import Registry
    from spade_envs.seeds import seed_source
    from spade_envs.trainer.report import closing_summary, synthesized, write_synthesized
    from spade_envs.validation.static import static_metadata

    registry = Registry(f"sqlite:///{tmp_path}/r.db")
    source = seed_source("NumberGuess").replace("NumberGuess", "NumberGuessXabc123")
    meta = static_metadata(source, origin="designer", parents=("spade/NumberGuess-v1",))
    extra = {"designer_run": "run7-iter2", "scaffold": {"filled": {"max_turns": 6}}}
    registry.register(source, meta, status="validated", extra=extra)
    other = source.replace("NumberGuessXabc123", "NumberGuessXdef456")
    registry.register(
        other,
        static_metadata(other, origin="designer"),
        status="validated",
        extra={"designer_run": "run8-iter1"},  # another run's
    )
    envs = synthesized(registry, "run7")
    assert [r.id for r in envs] == ["spade/NumberGuessXabc123-v1"]
    records = [
        {"designer_requested": 6, "designer_registered": 0, "reject_bad_filling": 6, "plays": 8},
        {
            "designer_requested": 6,
            "designer_registered": 1,
            "reject_not_novel": 5,
            "plays": 12,
            "failed_timeout": 2,
        },
    ]
    text = closing_summary(records, envs, tmp_path)
    assert "designer: 1 of 12 attempts registered (yield 8%)" in text
    assert "rejected: 6 bad_filling, 5 not_novel" in text
    assert "plays: 20, failed 2 (2 timeout)" in text
    assert 'spade/NumberGuessXabc123-v1 from spade/NumberGuess-v1, filled {"max_turns": 6}' in text
    assert f"plots: {tmp_path / 'plots'}" in text
    path = write_synthesized(envs, tmp_path)
    assert json.loads(path.read_text()) == ["spade/NumberGuessXabc123-v1"]
    assert "synthesized environments: none" in closing_summary([], [], tmp_path)
    registry.close()


def test_an_iteration_tag_reads_back_only_for_its_own_run():
    from spade_envs.trainer.view import iteration_tag, tag_iteration

    assert tag_iteration(iteration_tag("run7", 12), "run7") == 12
    assert tag_iteration(iteration_tag("run70", 2), "run7") is None  # another run's tag
    assert tag_iteration("run7-iterx", "run7") is None and tag_iteration("", "run7") is None


def test_the_closing_summary_shows_before_cold_start_and_after_with_intervals():
    from spade_envs.trainer.report import before_after

    def evaluation(stage, wins, formed, iteration=0):
        record = {"iteration": iteration, "eval_plays": 16, "eval_wins": wins}
        record.update(eval_turns=40, eval_well_formed_turns=formed, eval_ceiling=1.0)
        return {**record, "stage": stage} if stage else record

    records = [
        evaluation("untrained", 0, 1),
        evaluation("cold_start", 2, 30),
        {**evaluation(None, 5, 36, iteration=1), "designer_requested": 4},
        {"iteration": 2, "designer_requested": 4, "designer_registered": 1},
    ]
    text = before_after(records)
    assert "held-out actions understood: untrained 1/40 [0.00, 0.13]" in text
    assert "-> cold start 30/40 [0.60, 0.86] -> last 36/40 [0.77, 0.96]" in text
    assert "held-out wins: untrained 0/16 [0.00, 0.19]" in text
    assert "reference solutions on the same instances win 1.00" in text
    assert "designer: 8 attempts, 1 registered, 0 parse failures" in text
    assert before_after([{"iteration": 1}]) == ""
