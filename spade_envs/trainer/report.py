"""Curves of a training run: PNG plots from ``metrics.jsonl``, and a summary table.

``spade-envs report RUN_DIR`` writes ``RUN_DIR/plots/``:

- ``returns.png``: agent return with and without the hint, evaluation return, win rate;
- ``regret.png``: mean regret (floored, the designer's reward) and mean hint gain (return
  with the hint minus without it, not floored);
- ``designer.png``: designer yield and the mean designer reward;
- ``losses.png``: the GRPO loss, per role;
- ``throughput.png``: generated tokens per second and trained tokens per second;
- ``time.png``: where each iteration's time went (generate, validate, play, update, eval);
- ``failures.png``: the failed plays of each iteration, stacked by outcome (env_error,
  timeout, sandbox_crashed, model_error), and the failed evaluation plays.

matplotlib (with its non-interactive Agg backend) is imported only here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..error import SpadeError
from .metrics import read_metrics

__all__ = ["PLOTS", "STACKED_PLOTS", "draw_report", "stack_heights", "summary_table"]

#: Each plot: file name, title, y label, and the (field, label) curves it draws.
PLOTS: tuple[tuple[str, str, str, tuple[tuple[str, str], ...]], ...] = (
    (
        "returns.png",
        "Agent returns",
        "mean return",
        (
            ("agent_return_with_hint", "with hint"),
            ("agent_return_without_hint", "without hint"),
            ("eval_return", "held-out evaluation"),
            ("win_rate", "win rate (no hint)"),
        ),
    ),
    (
        "regret.png",
        "Regret and hint gain",
        "return difference",
        (
            ("mean_regret", "mean regret (floored: the designer's reward)"),
            ("mean_hint_gain", "mean hint gain (with − without hint)"),
        ),
    ),
    (
        "designer.png",
        "Designer",
        "share / reward",
        (("designer_yield", "yield (registered / requested)"), ("designer_reward", "reward")),
    ),
    (
        "losses.png",
        "GRPO loss",
        "loss",
        (("loss", "total"), ("loss_agent", "agent"), ("loss_designer", "designer")),
    ),
    (
        "throughput.png",
        "Throughput",
        "tokens / s",
        (("tokens_per_s", "generated"), ("train_tokens_per_s", "trained")),
    ),
)
#: Stacked bars per iteration: file name, title, y label, and the (field, label) layers.
STACKED_PLOTS: tuple[tuple[str, str, str, tuple[tuple[str, str], ...]], ...] = (
    (
        "time.png",
        "Time per iteration",
        "seconds",
        (
            ("seconds_generate", "generate"),
            ("seconds_validate", "validate"),
            ("seconds_play", "play"),
            ("seconds_update", "update"),
            ("seconds_eval", "eval"),
        ),
    ),
    (
        "failures.png",
        "Failed plays",
        "plays",
        (
            ("failed_env_error", "env_error"),
            ("failed_timeout", "timeout"),
            ("failed_sandbox_crashed", "sandbox_crashed"),
            ("failed_model_error", "model_error"),
            ("eval_failed", "evaluation (any outcome)"),
        ),
    ),
)


def _series(records: Sequence[dict[str, Any]], field: str) -> tuple[list[int], list[float]]:
    xs, ys = [], []
    for record in records:
        value = record.get(field)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if math.isfinite(value):
                xs.append(int(record.get("iteration", len(xs) + 1)))
                ys.append(float(value))
    return xs, ys


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise SpadeError(
            "Plots need matplotlib: pip install 'spade-envs[train]' (or pip install matplotlib)."
        ) from None
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    return plt


def draw_report(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Draw the curves of ``RUN_DIR/metrics.jsonl`` as PNG files.

    Args:
        run_dir: A run directory written by ``spade-envs train``.
        out_dir: Where the PNGs go (default ``RUN_DIR/plots``).

    Returns:
        The files written.

    Raises:
        SpadeError: No metrics, or matplotlib is missing.
    """
    records = read_metrics(run_dir)
    if not records:
        raise SpadeError(f"{run_dir} has no metrics yet: train at least one iteration first.")
    plt = _pyplot()
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / "plots"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, title, ylabel, curves in PLOTS:
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        for field, label in curves:
            xs, ys = _series(records, field)
            if xs:
                ax.plot(xs, ys, marker="o", label=label)
        _finish(ax, title, ylabel)
        written.append(_save(fig, out / name, plt))
    suite_fields = sorted(
        {f for r in records for f in r if f.startswith("suite_") and f.endswith("_win_rate")}
    )
    if suite_fields:  # eval.suites: one curve per evaluation set and category
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        for field in suite_fields:
            xs, ys = _series(records, field)
            if xs:
                label = field[len("suite_") : -len("_win_rate")].replace("_", " ")
                ax.plot(xs, ys, marker="o", label=label)
        _finish(ax, "Suite evaluation (win rate)", "win rate")
        written.append(_save(fig, out / "suites.png", plt))
    iterations = [int(r.get("iteration", i + 1)) for i, r in enumerate(records)]
    for name, title, ylabel, layers in STACKED_PLOTS:
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        bottom = [0.0] * len(records)
        for label, heights in stack_heights(records, layers):
            ax.bar(iterations, heights, bottom=bottom, label=label)
            bottom = [b + h for b, h in zip(bottom, heights)]
        if not any(bottom):
            recorded = any(field in r for r in records for field, _ in layers)
            note = f"no {title.lower()}" if recorded else "not recorded in this run"
            ax.set_ylim(0, 1)
            ax.text(0.5, 0.6, note, ha="center", va="center", transform=ax.transAxes)
        _finish(ax, title, ylabel)
        written.append(_save(fig, out / name, plt))
    return written


def stack_heights(
    records: Sequence[dict[str, Any]], layers: Sequence[tuple[str, str]]
) -> list[tuple[str, list[float]]]:
    """The bars of a stacked plot: ``(label, height per record)`` for each layer."""
    return [(label, [_height(r.get(field)) for r in records]) for field, label in layers]


def _height(value: Any) -> float:
    """A bar's height: a finite number >= 0, else 0 (a missing field draws nothing)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value) if math.isfinite(value) and value > 0 else 0.0


def _finish(ax: Any, title: str, ylabel: str) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # iterations are whole numbers
    ax.set_title(title)
    ax.set_xlabel("iteration")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    handles, _labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=ax.transAxes)


def _save(fig: Any, path: Path, plt: Any) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _cell(value: Any, spec: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    return format(round(value) if spec == "d" else value, spec)


def _rate(k: int, n: int) -> str:
    from ..agent.rewards import wilson_interval

    if not n:
        return "n/a"
    low, high = wilson_interval(k, n)
    return f"{k}/{n} [{low:.2f}, {high:.2f}]"


def before_after(records: Sequence[dict[str, Any]]) -> str:
    """The run's closing summary: the held-out agent before training, after the cold start
    and at the last evaluation (understood actions and wins, with 95% Wilson intervals),
    the reference solutions' ceiling, and the designer's attempts and parse failures."""
    evaluated = [r for r in records if r.get("eval_plays")]
    points = [
        ("untrained", next((r for r in evaluated if r.get("stage") == "untrained"), None)),
        ("cold start", next((r for r in evaluated if r.get("stage") == "cold_start"), None)),
        ("last", next((r for r in reversed(evaluated) if r.get("iteration", 0) > 0), None)),
    ]
    points = [(name, r) for name, r in points if r is not None]
    lines = []
    if points:
        formed = " -> ".join(
            f"{name} "
            + _rate(int(r.get("eval_well_formed_turns") or 0), int(r.get("eval_turns") or 0))
            for name, r in points
        )
        wins = " -> ".join(
            f"{name} {_rate(int(r.get('eval_wins') or 0), int(r.get('eval_plays') or 0))}"
            for name, r in points
        )
        lines += [f"held-out actions understood: {formed}", f"held-out wins: {wins}"]
        ceiling = next((r["eval_ceiling"] for r in evaluated if "eval_ceiling" in r), None)
        if ceiling is not None:
            lines.append(f"reference solutions on the same instances win {ceiling:.2f}")
    training = [r for r in records if r.get("iteration", 0) > 0]
    attempts = sum(int(r.get("designer_requested") or 0) for r in training)
    if attempts:
        parse = sum(int(r.get("reject_bad_filling") or 0) for r in training)
        relation = sum(int(r.get("reject_broken_relation") or 0) for r in training)
        registered = sum(int(r.get("designer_registered") or 0) for r in training)
        lines.append(
            f"designer: {attempts} attempts, {registered} registered, {parse} parse failures, "
            f"{relation} broke a hole relation"
        )
    return "\n".join(lines)


def summary_table(records: Sequence[dict[str, Any]]) -> str:
    """One row per iteration: yield, regret, returns, evaluation, loss, tokens, time."""
    columns = (
        ("iter", "iteration", "d", 4),
        ("yield", "designer_yield", ".2f", 5),
        ("regret", "mean_regret", ".3f", 6),
        ("ret+hint", "agent_return_with_hint", ".3f", 8),
        ("ret-hint", "agent_return_without_hint", ".3f", 8),
        ("eval", "eval_return", ".3f", 6),
        ("failed", "plays_failed", "d", 6),
        ("loss", "loss", ".4f", 8),
        ("tok agent", "tokens_agent", "d", 9),
        ("tok design", "tokens_designer", "d", 10),
        ("seconds", "seconds_iteration", ".0f", 7),
    )
    head = " ".join(f"{title:>{width}}" for title, _, _, width in columns)
    lines = [head, "-" * len(head)]
    for record in records:
        lines.append(
            " ".join(
                f"{_cell(record.get(field), spec):>{width}}" for _, field, spec, width in columns
            )
        )
    if not records:
        lines.append("(no iterations recorded)")
    return "\n".join(lines)


def synthesized(registry: Any, run_id: str) -> list[Any]:
    """The environments this run's designer registered (every iteration), oldest first."""
    from .view import tag_iteration

    found = [
        record
        for record in registry.iter_records()
        if record.origin == "designer"
        and tag_iteration((record.extra or {}).get("designer_run", ""), run_id) is not None
    ]
    return sorted(found, key=lambda r: r.key)


def closing_summary(records: Sequence[dict[str, Any]], envs: Sequence[Any], run_dir: Path) -> str:
    """What a finished run produced, for people: synthesized IDs, yield, failures, plots.

    Args:
        records: The run's metrics (``read_metrics``).
        envs: Its synthesized environments (:func:`synthesized`).
        run_dir: The run directory.
    """
    from .metrics import FAILURE_FIELDS, REJECT_FIELDS

    requested = sum(int(r.get("designer_requested") or 0) for r in records)
    registered = sum(int(r.get("designer_registered") or 0) for r in records)
    parse = sum(int(r.get("reject_bad_filling") or 0) for r in records)
    relation = sum(int(r.get("reject_broken_relation") or 0) for r in records)
    lines = [
        f"designer: {registered} of {requested} attempts registered"
        + (
            f" (yield {registered / requested:.0%}), {parse} parse failures, "
            f"{relation} broke a hole relation"
            if requested
            else ""
        )
    ]
    rejected = {f: sum(int(r.get(f) or 0) for r in records) for f in REJECT_FIELDS}
    if any(rejected.values()):
        lines.append(
            "  rejected: "
            + ", ".join(f"{n} {f.removeprefix('reject_')}" for f, n in rejected.items() if n)
        )
    failed = {f: sum(int(r.get(f) or 0) for r in records) for f in FAILURE_FIELDS}
    plays = sum(int(r.get("plays") or 0) for r in records)
    lines.append(
        f"plays: {plays}, failed {sum(failed.values())}"
        + (
            " ("
            + ", ".join(f"{n} {f.removeprefix('failed_')}" for f, n in failed.items() if n)
            + ")"
            if any(failed.values())
            else ""
        )
    )
    held_out = [
        line for line in before_after(records).splitlines() if line.startswith(("held", "ref"))
    ]
    lines += held_out
    if envs:
        lines.append("synthesized environments (gym.make with this run's registry):")
        for record in envs:
            parent = f" from {record.parents[0]}" if record.parents else ""
            filled = (record.extra or {}).get("scaffold", {}).get("filled")
            what = f", filled {json.dumps(filled, ensure_ascii=False)[:80]}" if filled else ""
            lines.append(f"  {record.id}{parent}{what}")
    else:
        lines.append("synthesized environments: none (every designer attempt was rejected)")
    lines.append(f"plots: {run_dir / 'plots'} (spade-envs report {run_dir})")
    return "\n".join(lines)


def write_synthesized(envs: Sequence[Any], run_dir: Path) -> Path:
    """``RUN_DIR/synthesized.json``: the synthesized IDs (``make demo`` opens the first)."""
    path = Path(run_dir) / "synthesized.json"
    path.write_text(json.dumps([record.id for record in envs], indent=1) + "\n", encoding="utf-8")
    return path
