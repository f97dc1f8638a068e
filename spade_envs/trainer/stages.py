"""What the self-play loop's stages hand each other (:mod:`spade_envs.trainer.loop`).

The designer's reward of an attempt, the summaries of the design, play and evaluation
stages (each rank summarises its share; the summaries are gathered and merged), the
progress lines, and the metrics record of an iteration. Failed plays are counted by
outcome (:class:`~spade_envs.agent.failures.FailureCounts`) and left out of every mean;
an iteration where every play failed stops the run with :class:`IterationFailedError`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from ..agent.failures import FAILURE_OUTCOMES, AllPlaysFailedError, FailureCounts, play_failure
from ..error import SpadeError
from ..generator.outcomes import AttemptStage, DesignerFailure
from .metrics import REJECT_FIELDS, reject_field

__all__ = [
    "IterationFailedError",
    "design_line",
    "design_summary",
    "designer_reward",
    "eval_line",
    "eval_summary",
    "merge_eval",
    "merge_play",
    "metrics_record",
    "play_line",
    "play_summary",
]


class IterationFailedError(AllPlaysFailedError):
    """Every play of a training iteration failed: the run stops before training on it.

    Attributes:
        counts: The iteration's failed plays, by outcome (all ranks together).
        iteration: The iteration that failed.
    """

    def __init__(self, counts: FailureCounts, iteration: int) -> None:
        self.iteration = iteration
        super().__init__(
            counts,
            f"of iteration {iteration}",
            then=f"The run stopped before iteration {iteration}'s update; fix the cause and "
            "run the same command again: it resumes from the last checkpoint.",
        )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _standard_error(values: Sequence[float]) -> float | None:
    """:func:`~spade_envs.agent.rewards.standard_error`, None (not NaN: JSON) under 2 values."""
    from ..agent.rewards import standard_error

    error = standard_error(values)
    return None if math.isnan(error) else error


def _number(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def designer_reward(attempt: Any, row: Any, settings: Any) -> float:
    """The reward of one designer attempt.

    Args:
        attempt: A :class:`~spade_envs.generator.Attempt`.
        row: The :class:`~spade_envs.agent.RegretRow` of its environment this iteration
            (None when it was not played).
        settings: :class:`~spade_envs.trainer.config.RewardSettings`.

    Returns:
        For a registered, played environment: ``regret`` (already penalised for plays
        whose environment hung or crashed), or ``blend``/``learnability`` minus
        ``timeout_penalty`` times the share of such plays. Otherwise the stage ladder:
        ``failed_requested`` (no reply), ``failed_generated`` (no code),
        ``failed_truncated`` (code cut off at ``max_tokens``), ``failed_parsed`` (invalid
        code), ``failed_valid`` (valid but not novel, or registered and never played to
        the end).
    """
    if attempt.stage == AttemptStage.REGISTERED and row is not None:
        total = row.n_with_hint + row.n_without_hint + row.failed
        if total:
            if settings.kind == "regret":
                return float(row.regret)
            base = row.blend if settings.kind == "blend" else row.learnability
            return float(base) - settings.timeout_penalty * row.failed / total
    if attempt.stage == AttemptStage.GENERATED and attempt.failure == DesignerFailure.TRUNCATED:
        return float(settings.failed_truncated)
    ladder = {
        AttemptStage.REQUESTED: settings.failed_requested,
        AttemptStage.GENERATED: settings.failed_generated,
        AttemptStage.PARSED: settings.failed_parsed,
    }
    return float(ladder.get(attempt.stage, settings.failed_valid))


def design_summary(attempts: Sequence[Any]) -> dict[str, Any]:
    """Requested and registered attempts, and the rejected ones by failure kind.

    Returns:
        ``requested`` and ``registered`` counts, and ``failures``: a
        :class:`~collections.Counter` of :class:`DesignerFailure` (None for an attempt
        that stopped without one), rejected attempts only.
    """
    rejected = [a for a in attempts if a.stage != AttemptStage.REGISTERED]
    return {
        "requested": len(attempts),
        "registered": len(attempts) - len(rejected),
        "failures": Counter(a.failure for a in rejected),
    }


def design_line(failures: Counter[DesignerFailure | None]) -> str:
    """The rejected attempts of :func:`design_summary`, by kind (``truncated 2, invalid 1``)."""
    named = [(str(f) if f is not None else "other", n) for f, n in failures.items()]
    return ", ".join(f"{name} {n}" for name, n in sorted(named))


def play_summary(
    episodes: Sequence[Any], rows: list[Any], seconds: float, stats: Any = None
) -> dict[str, Any]:
    """One rank's plays: returns and wins of the plays that finished, the failures, and
    the replay audits (``stats``: the rollout's :class:`~spade_envs.agent.RolloutStats`)."""
    finished = [e for e in episodes if play_failure(e) is None]
    return {
        "audits": getattr(stats, "audits", 0),
        "audit_failures": getattr(stats, "audit_failures", 0),
        "seconds_audit": getattr(stats, "audit_seconds", 0.0),
        "quarantined": list(getattr(stats, "quarantined", [])),
        "rows": rows,
        "with": [e.episode_return for e in finished if e.hint],
        "without": [e.episode_return for e in finished if not e.hint],
        "wins": [float(e.won) for e in finished if not e.hint],
        "well_formed": [float(t.well_formed) for e in finished for t in e.turns],
        "groups": _group_returns(finished),
        "plays": len(episodes),
        "failures": FailureCounts.of(episodes),
        "seconds": seconds,
    }


def _group_returns(episodes: Sequence[Any]) -> list[list[float]]:
    """The unhinted returns of each environment's plays: the agent's GRPO groups."""
    groups: dict[str, list[float]] = {}
    for episode in episodes:
        if not episode.hint:
            groups.setdefault(episode.env_id, []).append(float(episode.episode_return))
    return list(groups.values())


def unequal_share(groups: Sequence[Sequence[float]]) -> float | None:
    """The share of groups (of at least 2 plays) whose returns are not all equal: only
    those give GRPO a gradient (an equal group's advantages are all 0)."""
    sized = [g for g in groups if len(g) >= 2]
    if not sized:
        return None
    return sum(max(g) - min(g) > 1e-9 for g in sized) / len(sized)


def merge_play(parts: Sequence[dict[str, Any]], envs: int) -> tuple[list[Any], dict[str, Any]]:
    """Every rank's :func:`play_summary` merged (rank order): the rows and the totals."""
    rows = [row for part in parts for row in part["rows"]]
    play: dict[str, Any] = {
        key: [v for part in parts for v in part.get(key, [])]
        for key in ("with", "without", "wins", "well_formed", "groups")
    }
    play["plays"] = sum(part["plays"] for part in parts)
    play["failures"] = FailureCounts.total([part["failures"] for part in parts])
    play["envs"] = envs
    play["seconds"] = max(part["seconds"] for part in parts)
    play["audits"] = sum(part.get("audits", 0) for part in parts)
    play["audit_failures"] = sum(part.get("audit_failures", 0) for part in parts)
    play["seconds_audit"] = max(part.get("seconds_audit", 0.0) for part in parts)
    play["quarantined"] = [q for part in parts for q in part.get("quarantined", [])]
    return rows, play


def play_line(play: dict[str, Any], rows: Sequence[Any], plays_per_mode: int) -> str:
    """The play stage's progress line; ``n/a`` where no play finished, failures counted."""
    failures: FailureCounts = play["failures"]
    line = (
        f"play: {play['envs']} environments x {plays_per_mode}+{plays_per_mode} plays, return "
        f"{_number(_mean(play['with']), '.3f')} with hint / "
        f"{_number(_mean(play['without']), '.3f')} without, mean regret "
        f"{_number(_mean([r.regret for r in rows]), '.3f')} in {play['seconds']:.1f} s"
    )
    if play.get("audits"):
        share = play["seconds_audit"] / play["seconds"] if play["seconds"] > 0 else 0.0
        line += f"; {play['audits']} replay audits ({share:.1%} of the play time)"
        if play.get("audit_failures"):
            line += (
                f", {play['audit_failures']} could not be replayed (a timeout or a dead "
                "worker: raise agent.step_timeout if the machine is loaded)"
            )
    if play.get("quarantined"):
        line += f"; quarantined {', '.join(play['quarantined'])}"
    if failures.failed:
        line += f"; {failures.failed} of {failures.plays} plays failed ({failures.summary()})"
    return line


def eval_summary(episodes: Sequence[Any]) -> dict[str, Any]:
    """One rank's evaluation plays: (return, win) of those that finished, the failures."""
    finished = [e for e in episodes if play_failure(e) is None]
    turns = [t for e in finished for t in e.turns]
    per_env: dict[str, list[int]] = {}
    for e in finished:
        wins_plays = per_env.setdefault(e.env_id, [0, 0])
        wins_plays[0] += int(e.won)
        wins_plays[1] += 1
    return {
        "results": [(e.episode_return, float(e.won)) for e in finished],
        "turns": (sum(1 for t in turns if t.well_formed), len(turns)),
        "per_env": per_env,
        "failures": FailureCounts.of(episodes),
    }


def merge_eval(parts: Sequence[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """Every rank's :func:`eval_summary` merged into the evaluation's metrics."""
    results = [r for part in parts for r in part["results"]]
    failures = FailureCounts.total([part["failures"] for part in parts])
    returns = [r for r, _ in results]
    well_formed = sum(part.get("turns", (0, 0))[0] for part in parts)
    turns = sum(part.get("turns", (0, 0))[1] for part in parts)
    per_env: dict[str, list[int]] = {}
    for part in parts:
        for env_id, (wins, plays) in part.get("per_env", {}).items():
            total = per_env.setdefault(env_id, [0, 0])
            total[0] += wins
            total[1] += plays
    return {
        # An action the environment understood (or, where it does not say, one in the
        # answer format): what a 135M model learns long before it wins.
        "eval_well_formed": well_formed / turns if turns else None,
        "eval_well_formed_turns": well_formed,
        "eval_wins": sum(int(w) for _, w in results),
        "eval_per_env": per_env,
        "eval_turns": turns,
        "eval_return": _mean(returns),
        "eval_return_se": _standard_error(returns),
        "eval_win_rate": _mean([w for _, w in results]),
        "eval_plays": len(results),
        "eval_failed": failures.failed,
        "eval_failures": failures,
        "seconds_eval": seconds,
    }


def eval_fields(evaluation: dict[str, Any]) -> dict[str, Any]:
    """The evaluation's fields beyond :data:`~.metrics.METRIC_FIELDS`: wins and plays per
    held-out environment (``eval_env_<id>_wins``/``_plays``, for intervals per rung), the
    reference solution's win rate under the same turn cap (``eval_ceiling``), and the suite
    sets' win rates per category (``suite_<set>_<category>_win_rate``, with ``_wins`` and
    ``_plays``)."""
    out: dict[str, Any] = {k: v for k, v in evaluation.items() if k.startswith("suite_")}
    if "eval_wins" in evaluation:
        out["eval_wins"] = evaluation["eval_wins"]
        out["eval_well_formed_turns"] = evaluation.get("eval_well_formed_turns", 0)
    for env_id, (wins, plays) in sorted(evaluation.get("eval_per_env", {}).items()):
        out[f"eval_env_{env_id}_wins"] = wins
        out[f"eval_env_{env_id}_plays"] = plays
    if evaluation.get("eval_ceiling") is not None:
        out["eval_ceiling"] = evaluation["eval_ceiling"]
    return out


def eval_line(evaluation: dict[str, Any], envs: int) -> str:
    """The evaluation's progress line."""
    failures: FailureCounts = evaluation["eval_failures"]
    line = (
        f"eval: return {_number(evaluation['eval_return'], '.3f')}, win rate "
        f"{_number(evaluation['eval_win_rate'], '.2f')}, well-formed replies "
        f"{_number(evaluation.get('eval_well_formed'), '.2f')} on {envs} held-out environment(s) "
        f"in {evaluation['seconds_eval']:.1f} s"
    )
    if failures.failed:
        line += f"; {failures.failed} of {failures.plays} plays failed ({failures.summary()})"
        line += f"; first: {failures.first_error}"
    return line


def metrics_record(
    k: int,
    design: dict[str, Any],
    play: dict[str, Any],
    rows: list[Any],
    due: list[Any],
    rewards: list[float],
    stats: dict[str, float],
    evaluation: dict[str, Any],
) -> dict[str, Any]:
    """The metrics line of iteration ``k`` (without the throughput and total time, which
    the loop adds)."""
    requested = design.get("requested", 0)
    failures: FailureCounts = play["failures"]
    record: dict[str, Any] = {
        "iteration": k,
        "designer_requested": requested,
        "designer_registered": design.get("registered", 0),
        "designer_yield": design.get("registered", 0) / requested if requested else 0.0,
        "designer_reward": _mean(rewards),
        "designer_reward_se": _standard_error(rewards),
        "designer_trained": len(due),
        "envs_played": play["envs"],
        "plays": play["plays"],
        "plays_failed": failures.failed,
    }
    for outcome in FAILURE_OUTCOMES:
        record[f"failed_{outcome}"] = getattr(failures, outcome)
    record.update(
        mean_regret=_mean([r.regret for r in rows]),
        mean_hint_gain=_mean([r.hint_gain for r in rows if r.n_with_hint and r.n_without_hint]),
        win_rate=_mean(play["wins"]),
        agent_well_formed=_mean(play.get("well_formed", [])),
        agent_groups_unequal=unequal_share(play.get("groups", [])),
        agent_return_with_hint=_mean(play["with"]),
        agent_return_without_hint=_mean(play["without"]),
        eval_return=evaluation.get("eval_return"),
        eval_return_se=evaluation.get("eval_return_se"),
        eval_win_rate=evaluation.get("eval_win_rate"),
        eval_plays=evaluation.get("eval_plays"),  # None: no evaluation this iteration
        eval_well_formed=evaluation.get("eval_well_formed"),
        eval_turns=evaluation.get("eval_turns"),
        eval_failed=evaluation.get("eval_failed", 0) + evaluation.get("eval_failed_suites", 0),
    )
    record.update(eval_fields(evaluation))
    for key in ("loss", "loss_agent", "loss_designer", "tokens_agent", "tokens_designer"):
        record[key] = stats[key]
    for key in ("samples_agent", "samples_designer", "grad_norm", "clip_frac", "kl"):
        record[key] = stats[key]
    for key in ("tokens_agent", "tokens_designer", "samples_agent", "samples_designer"):
        record[key] = int(record[key])
    record.update(
        seconds_generate=design.get("seconds_generate", 0.0),
        seconds_validate=design.get("seconds_validate", 0.0),
        seconds_play=play["seconds"],
        seconds_audit=play.get("seconds_audit", 0.0),
        audits=play.get("audits", 0),
        audit_failures=play.get("audit_failures", 0),
        quarantined=len(play.get("quarantined", [])),
        seconds_eval=evaluation.get("seconds_eval", 0.0),
    )
    for field in REJECT_FIELDS:
        record[field] = 0
    for failure, n in design.get("failures", {}).items():
        record[reject_field(failure)] += n
    return record


def suite_held_out(config: Any, view: Any) -> set[str]:
    """What ``eval.suites`` evaluates on, never a training play (a self-play pool draws from
    every validated version, imported suite tasks included): registry IDs, and the bare
    names of the ``seeds`` set's environments (whose every version and scaffolded child is
    then held out, as for ``eval.envs``)."""
    from ..registry.ids import parse_env_id
    from ..suites.evaluation import eval_set

    held: set[str] = set()
    for name in config.eval.suites:
        try:
            tasks = eval_set(name, view).tasks
        except SpadeError:  # nothing imported yet: evaluate_suites says so when it runs
            continue
        for task in tasks:
            held.add(task.env_id)
            if task.env_id.startswith("spade/"):
                # Its name too: an older version of the task (a re-import adds a -v2 and
                # leaves -v1 validated) is the same task and stays out of training.
                held.add(parse_env_id(task.env_id)[0])
    return held


def evaluate_suites(
    config: Any, generator: Any, view: Any, say: Callable[[str], None]
) -> dict[str, Any]:
    """``eval.suites``, played as ``spade-envs evaluate`` plays them: win rates per set and
    category (``suite_<set>_<category>_win_rate``, with ``_wins`` and ``_plays``) and
    ``eval_failed_suites``."""
    from ..suites.evaluation import eval_set, evaluate

    cfg, agent = config.eval, config.agent
    out: dict[str, Any] = {"eval_failed_suites": 0}
    for name in cfg.suites:
        result = evaluate(
            generator,
            eval_set(name, view),
            registry=view,
            episodes=cfg.plays,
            max_turns=cfg.max_turns or None,  # 0: each environment's own turn limit
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            seed=cfg.seed,
            env_seed=cfg.env_seed,
            rollout={
                "isolation": agent.isolation,
                "trust_code": agent.trust_code,
                "max_concurrent": agent.concurrency,
                "step_timeout": agent.step_timeout,
            },
        )
        for score in [*result.categories, result.overall]:
            out[f"suite_{name}_{score.category}_win_rate"] = score.win_rate
            # The counts behind the rate, for an interval (a rate of n plays says little).
            out[f"suite_{name}_{score.category}_wins"] = score.wins
            out[f"suite_{name}_{score.category}_plays"] = score.plays
        out["eval_failed_suites"] += result.failures.failed
        rates = ", ".join(
            f"{c.category} {c.win_rate:.2f}" if c.win_rate is not None else f"{c.category} n/a"
            for c in [*result.categories, result.overall]
        )
        failed = f"; {result.failures.failed} plays failed" if result.failures.failed else ""
        say(f"eval {name}: {rates}{failed}")
    return out
