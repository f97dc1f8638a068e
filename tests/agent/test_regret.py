"""Regret estimation end to end: matched plays, rows, registry play statistics."""

from __future__ import annotations

import math

import pytest

from spade_envs.agent import (
    Episode,
    RegretConfig,
    RolloutConfig,
    blend,
    estimate_regret,
    learnability,
    regret_rows,
)
from spade_envs.error import SpadeError

from .conftest import ScriptedModel


def test_estimate_regret_writes_play_stats_per_checkpoint(registry):
    config = RegretConfig(plays=3, rollout=RolloutConfig(isolation="none", max_turns=2, seed=5))
    report = estimate_regret(ScriptedModel(), ["NumberGuess", "Nim"], config, registry=registry)
    assert [r.env_id for r in report.rows] == ["spade/NumberGuess-v1", "spade/Nim-v1"]
    assert len(report.episodes) == 12
    assert sum(e.hint for e in report.episodes) == 6
    for row in report.rows:
        assert row.checkpoint == "scripted"
        assert row.n_with_hint == row.n_without_hint == 3
        assert row.regret == pytest.approx(max(0.0, row.mean_with_hint - row.mean_without_hint))
        assert row.blend == pytest.approx(blend(row.regret, row.win_rate))
        assert row.learnability == pytest.approx(learnability(row.win_rate))
        [stats] = registry.play_stats(row.env_id)
        assert stats.checkpoint == "scripted"
        assert (stats.plays_with_hint, stats.plays_without_hint) == (3, 3)
        assert stats.mean_return_with_hint == pytest.approx(row.mean_with_hint)
        assert stats.mean_return_without_hint == pytest.approx(row.mean_without_hint)
        assert stats.win_rate == pytest.approx(row.win_rate)
    table = report.table()
    assert "spade/NumberGuess-v1" in table and "±" in table and "win rate" in table
    # Another checkpoint gets its own row; record=False writes nothing.
    quick = RolloutConfig(isolation="none", max_turns=1)
    other = RegretConfig(plays=1, checkpoint="ckpt-2", rollout=quick)
    estimate_regret(ScriptedModel(), ["Nim"], other, registry=registry)
    assert {s.checkpoint for s in registry.play_stats("spade/Nim-v1")} == {"scripted", "ckpt-2"}
    unrecorded = RegretConfig(plays=1, checkpoint="ckpt-3", record=False, rollout=quick)
    estimate_regret(ScriptedModel(), ["Nim"], unrecorded, registry=registry)
    assert len(registry.play_stats("spade/Nim-v1")) == 2


def episode(env_id, hint, ret, outcome="terminated", won=None):
    return Episode(
        env_id=env_id,
        play_index=0,
        env_seed=0,
        hint=hint,
        hint_source="env" if hint else "",
        hint_text="",
        kind="text",
        opponent="",
        model="m",
        outcome=outcome,
        episode_return=ret,
        won=ret >= 1.0 if won is None else won,
    )


def test_regret_rows_leave_out_model_errors_and_penalise_env_failures():
    episodes = [
        episode("a", True, 1.0),
        episode("a", True, 1.0),
        episode("a", True, 0.0, outcome="timeout"),
        episode("a", False, 0.0),
        episode("a", False, 1.0),
        episode("a", False, 0.0, outcome="model_error"),
    ]
    [row] = regret_rows(episodes, "m", timeout_penalty=0.5)
    assert (row.n_with_hint, row.n_without_hint, row.failed, row.model_errors) == (2, 2, 1, 1)
    assert row.hint_gain == pytest.approx(0.5)
    assert row.regret == pytest.approx(0.5 - 0.5 / 5)
    assert row.win_rate == pytest.approx(0.5)
    assert not math.isnan(row.stderr)


def test_a_return_that_is_not_finite_is_a_failed_play_of_its_env_only():
    episodes = [
        episode("bad", True, math.nan),
        episode("bad", False, math.inf, won=True),
        episode("good", True, 1.0),
        episode("good", False, 0.0),
        episode("crashed", True, 0.0, outcome="sandbox_crashed"),
        episode("crashed", False, 0.0, outcome="timeout"),
    ]
    bad, good, crashed = regret_rows(episodes, "m", timeout_penalty=0.5)
    assert (bad.failed, bad.env_errors, bad.n_with_hint, bad.n_without_hint) == (2, 2, 0, 0)
    assert bad.win_rate == 0.0 and bad.regret == pytest.approx(-0.5)
    assert math.isfinite(bad.mean_with_hint) and math.isfinite(bad.hint_gain)
    assert (good.failed, good.hint_gain, good.win_rate) == (0, 1.0, 0.0)
    with pytest.warns(DeprecationWarning, match="use RegretRow.hint_gain"):
        assert good.raw_regret == good.hint_gain
    assert (crashed.sandbox_crashes, crashed.timeouts, crashed.failed) == (1, 1, 2)
    assert crashed.failures.summary() == "1 timeout, 1 sandbox_crashed"


def test_the_table_shows_failures_and_no_zero_for_sides_with_no_finished_play():
    from spade_envs.agent import RegretReport, RolloutStats

    episodes = [episode("a", True, 0.0, outcome="env_error"), episode("a", False, 1.0)]
    episodes += [episode("b", True, 0.0), episode("b", False, 1.0)]
    report = RegretReport(regret_rows(episodes, "m"), episodes, RolloutStats())
    head, _, *rows = report.table().splitlines()
    assert "hint gain" in head and head.index("hint gain") < head.index("regret")
    row = next(line for line in rows if line.startswith("a "))
    assert row.split()[1:4] == ["n/a", "1.000", "n/a"] and "failed: 1 env_error" in row
    # A hint that hurts: the gain is shown signed, the regret (the reward) floored at 0.
    hurt = next(line for line in rows if line.startswith("b ")).split()
    assert hurt[1:4] == ["0.000", "1.000", "-1.000"] and hurt[6] == "0.000"
    assert report.table().splitlines()[-1] == "failed plays: 1 env_error of 4"
    assert report.failures.first_error.startswith("env_error in a")


def test_regret_config_checks():
    for bad in ({"plays": 0}, {"timeout_penalty": -1}, {"rollout": "fast"}):
        with pytest.raises(SpadeError):
            RegretConfig(**bad)
