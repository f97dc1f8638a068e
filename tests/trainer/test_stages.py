"""The loop's stage summaries: failures counted by outcome across ranks, never averaged
as zeros, and the error that stops an iteration where every play failed."""

from __future__ import annotations

import math

import pytest

from spade_envs.agent import Episode, FailureCounts, regret_rows
from spade_envs.error import SpadeError
from spade_envs.trainer.stages import (
    IterationFailedError,
    design_line,
    design_summary,
    merge_eval,
    merge_play,
    metrics_record,
    play_line,
    play_summary,
)

STATS = dict.fromkeys(
    (
        "loss loss_agent loss_designer tokens_agent tokens_designer samples_agent "
        "samples_designer grad_norm clip_frac kl"
    ).split(),
    0.0,
)


def played(env, hint, ret=0.0, outcome="terminated", error=""):
    return Episode(
        env, 0, 0, hint, "", "", "text", "", "m", outcome, ret, won=ret >= 1.0, error=error
    )


def test_plays_merged_across_ranks_count_failures_and_average_only_finished_plays():
    rank0 = [played("a", True, 1.0), played("a", False, 0.0, "sandbox_crashed", "worker died")]
    rank1 = [played("b", True, math.nan), played("b", False, 1.0), played("b", False, 0, "timeout")]
    parts = [
        play_summary(episodes, regret_rows(episodes, "ck"), seconds)
        for episodes, seconds in ((rank0, 2.0), (rank1, 3.0))
    ]
    rows, play = merge_play(parts, envs=2)
    assert [r.env_id for r in rows] == ["a", "b"]
    failures = play["failures"]
    assert (failures.plays, failures.failed) == (5, 3)
    assert failures.by_outcome() == {
        "env_error": 1,
        "timeout": 1,
        "sandbox_crashed": 1,
        "model_error": 0,
        "audit_divergence": 0,
        "audit_failed": 0,
    }
    assert failures.first_error == "sandbox_crashed in a: worker died"  # rank order
    assert play["with"] == [1.0] and play["without"] == [1.0] and play["wins"] == [1.0]
    assert play["seconds"] == 3.0
    line = play_line(play, rows, 4)
    assert line.endswith("; 3 of 5 plays failed (1 env_error, 1 timeout, 1 sandbox_crashed)")
    record = metrics_record(1, {}, play, rows, [], [], STATS, {})
    assert record["plays"] == 5 and record["plays_failed"] == 3
    assert (record["failed_env_error"], record["failed_sandbox_crashed"]) == (1, 1)
    assert record["agent_return_without_hint"] == 1.0  # not dragged to 0.5 by a failed play


def test_a_stage_where_nothing_finished_says_n_a_not_zero():
    episodes = [played("a", True, 0.0, "env_error", "boom"), played("a", False, 0, "env_error")]
    rows, play = merge_play([play_summary(episodes, regret_rows(episodes, "ck"), 1.0)], 1)
    assert "return n/a with hint / n/a without" in play_line(play, rows, 1)
    record = metrics_record(1, {}, play, rows, [], [], STATS, {})
    assert record["agent_return_with_hint"] is None and record["win_rate"] is None
    assert record["mean_hint_gain"] is None  # no side finished: no hint gain, not 0
    assert play["failures"].all_failed
    evaluation = merge_eval([{"results": [], "failures": FailureCounts.of(episodes)}], 0.5)
    assert evaluation["eval_return"] is None and evaluation["eval_failed"] == 2


def test_the_error_that_stops_an_iteration_says_why_and_what_to_do():
    counts = FailureCounts.of([played("a", False, 0, "sandbox_crashed", "pipe closed")] * 3)
    error = IterationFailedError(counts, 4)
    assert isinstance(error, SpadeError) and error.iteration == 4 and error.counts is counts
    with pytest.raises(
        IterationFailedError,
        match=r"Every one of the 3 plays of iteration 4 failed \(3 sandbox_crashed\).*"
        r"sandbox_crashed in a: pipe closed.*spade-envs play NumberGuess.*"
        r"run the same command again",
    ):
        raise error


def test_design_rejections_are_counted_by_failure_kind_not_by_message():
    from spade_envs.generator import Attempt, AttemptStage, DesignerFailure

    def attempt(stage, failure=None):
        return Attempt(0, "new", "math", stage, "misleading words: invalid", failure)

    attempts = [
        attempt(AttemptStage.REGISTERED),
        attempt(AttemptStage.REQUESTED, DesignerFailure.MODEL_ERROR),
        attempt(AttemptStage.REQUESTED, DesignerFailure.PROMPT_ERROR),
        attempt(AttemptStage.GENERATED, DesignerFailure.NO_CODE),
        attempt(AttemptStage.PARSED, DesignerFailure.VALIDATOR_ERROR),
    ]
    summary = design_summary(attempts)
    assert summary == {
        "requested": 5,
        "registered": 1,
        "failures": {
            DesignerFailure.MODEL_ERROR: 1,
            DesignerFailure.PROMPT_ERROR: 1,
            DesignerFailure.NO_CODE: 1,
            DesignerFailure.VALIDATOR_ERROR: 1,
        },
    }
    assert design_line(summary["failures"]) == (
        "model_error 1, no_code 1, prompt_error 1, validator_error 1"
    )
    # The metrics record counts them under the reject_* fields.
    episodes = [played("a", True, 1.0), played("a", False, 0.0)]
    _, play = merge_play([play_summary(episodes, regret_rows(episodes, "ck"), 1.0)], 1)
    record = metrics_record(1, summary, play, [], [], [], STATS, {})
    rejects = {k: v for k, v in record.items() if k.startswith("reject_") and v}
    assert rejects == {"reject_model_error": 2, "reject_no_code": 1, "reject_other": 1}


def test_evaluation_reports_the_standard_error_of_its_mean_return():
    from spade_envs.agent.failures import FailureCounts
    from spade_envs.trainer.stages import merge_eval

    part = {
        "results": [(1.0, 1.0), (0.0, 0.0), (1.0, 1.0), (0.0, 0.0)],
        "failures": FailureCounts(),
    }
    evaluation = merge_eval([part], seconds=1.0)
    assert evaluation["eval_plays"] == 4 and evaluation["eval_return"] == 0.5
    assert evaluation["eval_return_se"] == pytest.approx((1 / 3 / 4) ** 0.5)
    one = merge_eval([{"results": [(1.0, 1.0)], "failures": FailureCounts()}], seconds=1.0)
    assert one["eval_return_se"] is None  # one play: no spread to estimate


def test_groups_with_unequal_returns_are_the_ones_that_teach():
    from spade_envs.trainer.stages import unequal_share

    assert unequal_share([[0.0, 0.0, 0.0], [0.0, 1.0], [1.0]]) == 0.5  # a group of 1 is no group
    assert unequal_share([[1.0]]) is None
    summary = play_summary(
        [played("a", False, 1.0), played("a", False, 0.0), played("a", True, 1.0)],
        [],
        1.0,
    )
    assert summary["groups"] == [[1.0, 0.0]]  # unhinted plays only: the agent's groups


def test_evaluations_keep_wins_per_environment_for_intervals_and_the_ceiling():
    from spade_envs.trainer.stages import eval_fields, eval_summary

    rank0 = [played("spade/A-v1", False, 1.0), played("spade/A-v1", False, 0.0)]
    rank1 = [played("spade/B-v1", False, 0.0), played("spade/B-v1", False, 0, "timeout")]
    evaluation = merge_eval([eval_summary(rank0), eval_summary(rank1)], 1.0)
    evaluation["eval_ceiling"] = 1.0
    fields = eval_fields(evaluation)
    assert fields["eval_wins"] == 1 and evaluation["eval_plays"] == 3
    assert (fields["eval_env_spade/A-v1_wins"], fields["eval_env_spade/A-v1_plays"]) == (1, 2)
    assert (fields["eval_env_spade/B-v1_wins"], fields["eval_env_spade/B-v1_plays"]) == (0, 1)
    assert fields["eval_ceiling"] == 1.0
