"""Does anything move the agent? Cold start, cold start + fixed pool, cold start + self-play.

Runs (or resumes) the ``cpu-small`` preset twice side by side, one torch thread each:

- ``selfplay``: the cold start, then the scaffolded designer writes environments, the agent
  plays them and the pool, GRPO trains both roles;
- ``fixed-pool``: the same cold start, then the agent trains on the frozen seed pool (seeds
  and their easy rungs, no designer), with about the same plays per iteration;
- ``cold start only``: the evaluation right after the cold start (iteration 0, stage
  ``cold_start``; the two runs must agree: the same steps on the same transcripts), and
  ``untrained``: the evaluation before it (stage ``untrained``).

Then writes ``docs/results.md`` with PNG plots under ``docs/results/``: held-out win rate per
iteration with 95% Wilson intervals, beside the reference solutions' ceiling on the same
instances; win rates per rung (the easy rungs beside today's instances); the share of
actions the environments understood; the share of GRPO groups with unequal returns (the
only ones that teach); the designer's yield, parse failures and the win rates of what it
registered; and the iteration time split. What comes out is reported, a null included,
with its bounds.

    python benchmarks/learning_curve.py [--iterations N] [--report-only]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from spade_envs.agent.rewards import wilson_interval

ROOT = Path(__file__).resolve().parent.parent
# Self-play plays its new environments (up to 3) plus 1 pool environment per iteration;
# the fixed pool plays 3 (about as many), so both conditions see a similar play budget
# (the plays per iteration are tabled with the results).
CONDITIONS = {
    "selfplay": [],
    "fixed-pool": ["--set", "mode=fixed-pool", "--set", "agent.pool_envs=3"],
}
#: The rg-hard subset the model can touch: reasoning-gym's appendix-A.3 configurations of
#: tasks whose answers are at most 7 characters and whose questions at most ~410 (measured
#: on seeds 1-3), chosen among those: math 4 (gcd, count_bits, simple_equations,
#: basic_arithmetic), algorithmic 2, cognition 1 and logic 1 (syllogism, the only logic task
#: that qualifies).
#: Imported into both runs' registries; evaluated every time the held-out envs are
#: (eval.suites) and never trained on (the self-play pool leaves eval.suites out).
RG_HARD_SUBSET = (
    "gcd,count_bits,simple_equations,basic_arithmetic,letter_counting,count_primes,"
    "number_sequence,syllogism"
)
EVAL_SUITES = ["--set", 'eval.suites=["rg-hard"]']
LEARNABLE = (0.15, 0.85)  # the memory's high-hint-gain win-rate band
TIME_FIELDS = (
    "seconds_generate",
    "seconds_validate",
    "seconds_play",
    "seconds_update",
    "seconds_eval",
)


def _import_rg_hard(exe: Path, run_dir: Path) -> None:
    """The rg-hard subset into the run's registry (a rerun skips what is there)."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "SPADE_REGISTRY_URL": f"sqlite:///{run_dir / 'registry.db'}",
    }
    command = [str(exe), "import", "--suite", "reasoning-gym", "--tasks", RG_HARD_SUBSET]
    done = subprocess.run(
        [*command, "--levels", "hard"], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"importing the rg-hard subset failed:\n{done.stdout}{done.stderr}")
    print((done.stdout.strip().splitlines() or ["rg-hard subset imported"])[-1], flush=True)


def _train(run_root: Path, iterations: int | None) -> None:
    exe = Path(sys.executable).with_name("spade-envs")
    jobs = []
    for name, extra in CONDITIONS.items():
        run_dir = run_root / name
        run_dir.mkdir(parents=True, exist_ok=True)
        _import_rg_hard(exe, run_dir)
        command = [
            *(str(exe), "train", "--preset", "cpu-small", "--run-dir", str(run_dir)),
            *extra,
            *EVAL_SUITES,
        ]
        if iterations is not None:
            command += ["--iterations", str(iterations)]
        log = open(run_dir / "train.log", "a", encoding="utf-8")
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        jobs.append((name, subprocess.Popen(command, stdout=log, stderr=log, env=env), log))
        print(f"started {name}: {' '.join(command)} (log {run_dir / 'train.log'})", flush=True)
    started = time.time()
    while any(job.poll() is None for _, job, _ in jobs):
        time.sleep(30)
        done = {name: _progress(run_root / name) for name, _, _ in jobs}
        print(f"[{time.time() - started:6.0f} s] {done}", flush=True)
    for name, job, log in jobs:
        log.close()
        if job.returncode != 0:
            raise SystemExit(f"{name} failed (exit {job.returncode}); see {run_root / name}")


def _records(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _progress(run_dir: Path) -> str:
    records = _records(run_dir)
    if not records:
        return "starting"
    last = records[-1]
    return f"iteration {last.get('iteration')}" + (f" ({last['stage']})" if "stage" in last else "")


def _stage(records: list[dict], stage: str) -> dict | None:
    return next((r for r in records if r.get("stage") == stage), None)


def _training(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("iteration", 0) > 0]


def _rate(k: int, n: int) -> str:
    """``k/n = p [lo, hi]`` with the 95% Wilson interval."""
    if not n:
        return "n/a"
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} = {k / n:.2f} [{lo:.2f}, {hi:.2f}]"


def _wins(record: dict) -> tuple[int, int]:
    return int(record.get("eval_wins") or 0), int(record.get("eval_plays") or 0)


def _formed(record: dict) -> tuple[int, int]:
    return int(record.get("eval_well_formed_turns") or 0), int(record.get("eval_turns") or 0)


def _rate_table(runs: dict, iterations: list[int], pick: Callable, field: str) -> list[str]:
    """A markdown table of one rate (``pick(record) -> (k, n)``): the untrained and cold-start
    points, then each evaluated iteration, one column per condition."""
    lines = ["| point | " + " | ".join(runs) + " |", "|---|" + "---|" * len(runs)]
    for stage in ("untrained", "cold_start"):
        cells = [(_rate(*pick(r)) if (r := _stage(rs, stage)) else "") for rs in runs.values()]
        lines.append(f"| {stage.replace('_', ' ')} | " + " | ".join(cells) + " |")
    for k in iterations:
        cells = []
        for records in runs.values():
            match = [r for r in _training(records) if r["iteration"] == k and r.get(field)]
            cells.append(_rate(*pick(match[0])) if match else "")
        lines.append(f"| iteration {k} | " + " | ".join(cells) + " |")
    return lines


def _env_ids(records: list[dict]) -> list[str]:
    ids = {
        k[len("eval_env_") : -len("_plays")]
        for r in records
        for k in r
        if k.endswith("_plays") and k.startswith("eval_env_")
    }
    return sorted(ids)


def _labels(run_dir: Path) -> dict[str, str]:
    """Registry ID -> a readable name (``NumberGuess@0`` for a rung)."""
    from spade_envs.registry import Registry

    path = run_dir / "registry.db"
    if not path.is_file():
        return {}
    registry = Registry(f"sqlite:///{path}")
    try:
        out = {}
        for record in registry.list(origin="seed", limit=1000):
            ladder = (record.extra or {}).get("ladder")
            out[record.id] = f"{ladder['seed']}@{ladder['level']}" if ladder else record.name
        return out
    finally:
        registry.close()


def _registered_win_rates(run_dir: Path) -> list[tuple[int, str, float, int]]:
    """(iteration registered, id, latest win rate, plays) of the run's synthesized envs."""
    from spade_envs.registry import Registry
    from spade_envs.trainer.report import synthesized
    from spade_envs.trainer.view import tag_iteration

    info = run_dir / "checkpoints" / "run.json"
    if not info.is_file():
        return []
    run_id = json.loads(info.read_text())["run_id"]
    registry = Registry(f"sqlite:///{run_dir / 'registry.db'}")
    out = []
    for record in synthesized(registry, run_id):
        stats = registry.play_stats(record.id)
        if stats:
            k = tag_iteration(record.extra["designer_run"], run_id)
            out.append((k, record.id, stats[0].win_rate, stats[0].plays_without_hint))
    registry.close()
    return sorted(out)


def _integer_iterations(ax, runs: dict) -> None:
    """Iterations 0 (before self-play) .. the last one any condition reached, as integers."""
    from matplotlib.ticker import MaxNLocator

    last = max((r["iteration"] for rs in runs.values() for r in rs), default=0)
    ax.set_xlim(-0.5, max(last, 1) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _errorbar(ax, xs, counts, **kwargs) -> None:
    """Points at k/n with their Wilson intervals as asymmetric error bars."""
    ys, lows, highs = [], [], []
    for k, n in counts:
        lo, hi = wilson_interval(k, n)
        p = k / n if n else float("nan")
        ys.append(p)
        lows.append(p - lo if n else 0)
        highs.append(hi - p if n else 0)
    ax.errorbar(xs, ys, yerr=[lows, highs], marker="o", capsize=3, **kwargs)


def _report(run_root: Path, out: Path, images: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    images.mkdir(parents=True, exist_ok=True)
    runs = {name: _records(run_root / name) for name in CONDITIONS}
    labels = {**_labels(run_root / "fixed-pool"), **_labels(run_root / "selfplay")}
    untrained = _stage(runs["selfplay"], "untrained")
    cold = _stage(runs["selfplay"], "cold_start")
    cold_other = _stage(runs["fixed-pool"], "cold_start")
    ceiling = next(
        (
            r.get("eval_ceiling")
            for rs in runs.values()
            for r in rs
            if r.get("eval_ceiling") is not None
        ),
        None,
    )
    lines = [
        "# Results: cold start, + fixed pool, + self-play (SmolLM2-135M, CPU)",
        "",
        "Produced by `python benchmarks/learning_curve.py` (preset `cpu-small`, seed 0, both runs",
        "side by side on a 2-core machine, one torch thread each). Every rate carries its 95%",
        "Wilson interval: `k/n = p [low, high]`; a rate of 0 over n plays bounds the true rate",
        "only below the interval's upper end.",
        "",
        *_status(run_root, runs),
    ]

    # 1. held-out win rate
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, records in runs.items():
        points = [r for r in _training(records) if r.get("eval_plays")]
        if points:
            _errorbar(ax, [r["iteration"] for r in points], [_wins(r) for r in points], label=name)
    for record, label, style in ((untrained, "untrained", ":"), (cold, "cold start only", "--")):
        if record and record.get("eval_plays"):
            k, n = _wins(record)
            lo, hi = wilson_interval(k, n)
            ax.axhspan(lo, hi, color="grey" if style == ":" else "tab:green", alpha=0.15)
            ax.axhline(
                k / n, color="grey" if style == ":" else "tab:green", linestyle=style, label=label
            )
    for record, label, color in ((untrained, None, "grey"), (cold, None, "tab:green")):
        if record and record.get("eval_plays"):  # iteration 0, as a point with its interval
            _errorbar(ax, [0], [_wins(record)], color=color, label=label)
    if ceiling is not None:
        ax.axhline(ceiling, color="black", linestyle="-.", label="reference solution (ceiling)")
    _integer_iterations(ax, runs)
    ax.set(
        xlabel="iteration",
        ylabel="held-out win rate (unhinted)",
        ylim=(-0.05, 1.05),
        title="Agent on held-out environments and rungs",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(images / "heldout_win_rate.png", dpi=110)
    plt.close(fig)

    # 2. understood actions
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, records in runs.items():
        points = [r for r in _training(records) if r.get("eval_turns")]
        if points:
            _errorbar(
                ax,
                [r["iteration"] for r in points],
                [_formed(r) for r in points],
                label=f"{name} (held-out)",
            )
        train = [r for r in _training(records) if r.get("agent_well_formed") is not None]
        if train:
            ax.plot(
                [r["iteration"] for r in train],
                [r["agent_well_formed"] for r in train],
                linestyle=":",
                marker="x",
                label=f"{name} (training plays)",
            )
    for record, label, color in (
        (untrained, "untrained", "grey"),
        (cold, "cold start only", "tab:green"),
    ):
        if record and record.get("eval_turns"):
            k, n = _formed(record)
            ax.axhline(k / n, color=color, linestyle="--", label=f"{label} (held-out)")
            _errorbar(ax, [0], [(k, n)], color=color)
    _integer_iterations(ax, runs)
    ax.set(
        xlabel="iteration",
        ylabel="share of actions understood",
        ylim=(-0.05, 1.05),
        title="Actions the environments understood",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(images / "well_formed.png", dpi=110)
    plt.close(fig)

    # 3. GRPO signal
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, records in runs.items():
        points = [r for r in _training(records) if r.get("agent_groups_unequal") is not None]
        if points:
            ax.plot(
                [r["iteration"] for r in points],
                [r["agent_groups_unequal"] for r in points],
                marker="o",
                label=name,
            )
    ax.set(
        xlabel="iteration",
        ylabel="share of GRPO groups with unequal returns",
        ylim=(-0.05, 1.05),
        title="Agent groups that teach (unequal returns)",
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(images / "groups.png", dpi=110)
    plt.close(fig)

    # 4. designer
    design = _training(runs["selfplay"])
    rates = _registered_win_rates(run_root / "selfplay")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    if design:
        _errorbar(
            left,
            [r["iteration"] for r in design],
            [
                (int(r.get("designer_registered") or 0), int(r.get("designer_requested") or 0))
                for r in design
            ],
        )
    left.set(
        xlabel="iteration",
        ylabel="registered / attempted",
        ylim=(-0.05, 1.05),
        title="Designer yield",
    )
    if rates:
        right.hist([r[2] for r in rates], bins=[i / 10 for i in range(11)], color="tab:orange")
    right.axvspan(*LEARNABLE, color="green", alpha=0.1, label="learnable band")
    right.set(
        xlabel="win rate without hint (latest)",
        ylabel="environments",
        title="What the designer registered",
    )
    right.legend()
    fig.tight_layout()
    fig.savefig(images / "designer.png", dpi=110)
    plt.close(fig)

    # 5. time split
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.38
    for offset, (name, records) in zip((-width / 2, width / 2), runs.items()):
        its = _training(records)
        bottom = [0.0] * len(its)
        for field in TIME_FIELDS:
            values = [r.get(field) or 0.0 for r in its]
            ax.bar(
                [r["iteration"] + offset for r in its],
                values,
                width,
                bottom=bottom,
                label=f"{name}: {field.removeprefix('seconds_')}" if its else None,
            )
            bottom = [b + v for b, v in zip(bottom, values)]
    ax.set(xlabel="iteration", ylabel="seconds", title="Iteration time split")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(images / "time_split.png", dpi=110)
    plt.close(fig)

    # tables
    lines += ["## Held-out win rate", "", "![held-out win rate](results/heldout_win_rate.png)", ""]
    iterations = sorted(
        {r["iteration"] for rs in runs.values() for r in _training(rs) if r.get("eval_plays")}
    )
    lines += _rate_table(runs, iterations, _wins, "eval_plays")
    if ceiling is not None:
        lines += [
            "",
            f"The reference solutions win {ceiling:.2f} of the same instances under the same "
            "turn limits (the ceiling).",
        ]
    if cold and cold_other:
        same = _wins(cold) == _wins(cold_other)
        lines += [
            "",
            f"The cold-start evaluations of the two runs {'agree' if same else 'DIFFER'} "
            "(the same steps on the same transcripts).",
        ]
    if cold:
        lines += [
            "",
            f"Cold start: {cold.get('cold_start_steps')} steps on "
            f"{cold.get('cold_start_samples')} turns of {cold.get('cold_start_transcripts')} "
            f"winning reference transcripts; loss {cold.get('cold_start_first_loss') or 0:.3f} "
            f"-> {cold.get('cold_start_last_loss') or 0:.3f} in "
            f"{cold.get('seconds_cold_start') or 0:.0f} s.",
        ]

    ids = _env_ids([r for rs in runs.values() for r in rs])
    finals = {
        name: ([r for r in _training(rs) if r.get("eval_plays")] or [None])[-1]
        for name, rs in runs.items()
    }
    lines += [
        "",
        "## Per environment (rungs beside today's instances)",
        "",
        "| environment | untrained | cold start | "
        + " | ".join(f"{n} (last)" for n in runs)
        + " |",
        "|---|---|---|" + "---|" * len(runs),
    ]
    for env_id in ids:

        def cell(record: dict | None, env_id: str = env_id) -> str:
            if not record:
                return ""
            return _rate(
                int(record.get(f"eval_env_{env_id}_wins") or 0),
                int(record.get(f"eval_env_{env_id}_plays") or 0),
            )

        lines.append(
            f"| {labels.get(env_id, env_id)} | {cell(untrained)} | {cell(cold)} | "
            + " | ".join(cell(finals[n]) for n in runs)
            + " |"
        )

    lines += ["", "## rg-hard subset (reasoning-gym appendix A.3, held out)", ""]
    lines += [
        f"Tasks: {RG_HARD_SUBSET.replace(',', ', ')}; 4 plays each, each allowing 2 answers "
        "(`eval.max_turns = 0`: every environment to its own limit, 2 answers per suite task).",
        "",
    ]
    lines += _suite_table(runs, "rg-hard")

    lines += [
        "",
        "## Actions the environments understood",
        "",
        "An action counts when the environment reported it understood it "
        '(`info["action_parsed"]`), or, where it does not say, when the reply is in the '
        "answer format.",
        "",
        "![understood actions](results/well_formed.png)",
        "",
        *_rate_table(runs, iterations, _formed, "eval_turns"),
    ]

    lines += ["", "## GRPO signal", "", "![groups](results/groups.png)", ""]
    for name, records in runs.items():
        shares = [
            r["agent_groups_unequal"]
            for r in _training(records)
            if r.get("agent_groups_unequal") is not None
        ]
        if shares:
            lines.append(
                f"- {name}: groups with unequal returns, per iteration: "
                f"{', '.join(f'{s:.2f}' for s in shares)} (mean {sum(shares) / len(shares):.2f})."
            )

    lines += [
        "",
        "## Designer (self-play)",
        "",
        "![designer](results/designer.png)",
        "",
        "| iteration | attempts | registered (Wilson) | parse failures | broke a relation | "
        "reward ± se |",
        "|---|---|---|---|---|---|",
    ]
    for r in design:
        reward = r.get("designer_reward")
        attempts = int(r.get("designer_requested") or 0)
        registered = _rate(int(r.get("designer_registered") or 0), attempts)
        lines.append(
            f"| {r['iteration']} | {attempts} | {registered} | {r.get('reject_bad_filling', 0)} | "
            f"{r.get('reject_broken_relation', '')} | "
            + (
                f"{reward:.3f} ± {r.get('designer_reward_se') or 0:.3f}"
                if reward is not None
                else "n/a"
            )
            + " |"
        )
    if any("reject_broken_relation" not in r for r in design):
        lines += [
            "",
            'A blank "broke a relation" cell: that iteration was written before fillings '
            "that break a relation between holes (which a JSON Schema cannot express, so "
            "constrained decoding can produce them) were counted apart; they are among its "
            "parse failures.",
        ]
    if rates:
        inside = sum(LEARNABLE[0] <= r[2] <= LEARNABLE[1] for r in rates)
        lines += [
            "",
            f"{len(rates)} played synthesized environments; {inside} in the learnable band "
            f"{LEARNABLE}; {sum(r[2] == 0 for r in rates)} never won without the hint.",
        ]

    lines += [
        "",
        "## Iteration time",
        "",
        "![time split](results/time_split.png)",
        "",
        "| condition | iterations | plays per iteration | "
        + " | ".join(f.removeprefix("seconds_") for f in TIME_FIELDS)
        + " | total (s) |",
        "|---|---|---|" + "---|" * (len(TIME_FIELDS) + 1),
    ]
    for name, records in runs.items():
        its = _training(records)
        if its:
            means = [sum(r.get(f) or 0 for r in its) / len(its) for f in TIME_FIELDS]
            total = sum(r.get("seconds_iteration") or 0 for r in its) / len(its)
            plays = sum(r.get("plays") or 0 for r in its) / len(its)
            lines.append(
                f"| {name} | {len(its)} | {plays:.1f} | "
                + " | ".join(f"{m:.0f}" for m in means)
                + f" | {total:.0f} |"
            )
    lines += ["", "## Reading", "", *_reading(runs, untrained, cold)]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out} and {len(list(images.glob('*.png')))} plots in {images}")


def _status(run_root: Path, runs: dict) -> list[str]:
    """How far each condition got: a stopped run is reported as such (resume it with the
    same command), so a partial curve never reads as a finished one."""
    import tomllib

    out = []
    for name, records in runs.items():
        config = run_root / name / "config.toml"
        planned = tomllib.loads(config.read_text())["iterations"] if config.is_file() else None
        done = len(_training(records))
        if planned is not None and done < planned:
            out.append(
                f"- **{name}: {done} of {planned} iterations done** (the run was stopped; "
                "`python benchmarks/learning_curve.py` resumes it from its last checkpoint)."
            )
    if out:
        out = ["**Status: partial.**", "", *out, ""]
    return out


def _suite_table(runs: dict, name: str) -> list[str]:
    """Wins per category of the suite set ``name`` at the untrained, cold-start and last
    evaluated points of each condition, with Wilson intervals."""
    prefix = f"suite_{name}_"
    categories = sorted(
        {
            f[len(prefix) : -len("_plays")]
            for rs in runs.values()
            for r in rs
            for f in r
            if f.startswith(prefix) and f.endswith("_plays")
        },
        key=lambda c: (c == "overall", c),
    )
    if not categories:
        return ["(no suite evaluation was recorded)"]
    points: dict[str, dict | None] = {
        "untrained": _stage(runs["selfplay"], "untrained"),
        "cold start": _stage(runs["selfplay"], "cold_start"),
    }
    for cond, records in runs.items():
        evaluated = [r for r in _training(records) if f"{prefix}overall_plays" in r]
        points[f"{cond} (last)"] = evaluated[-1] if evaluated else None
    lines = ["| category | " + " | ".join(points) + " |", "|---|" + "---|" * len(points)]
    for category in categories:
        cells = []
        for record in points.values():
            if not record or f"{prefix}{category}_plays" not in record:
                cells.append("")
                continue
            cells.append(
                _rate(
                    int(record.get(f"{prefix}{category}_wins") or 0),
                    int(record.get(f"{prefix}{category}_plays") or 0),
                )
            )
        lines.append(f"| {category} | " + " | ".join(cells) + " |")
    return lines


def _reading(runs: dict, untrained: dict | None, cold: dict | None) -> list[str]:
    """What the numbers say, computed from them (so the text cannot drift from the data)."""
    out = []
    if untrained and cold:
        for what, pick in (("wins", _wins), ("understood actions", _formed)):
            (k0, n0), (k1, n1) = pick(untrained), pick(cold)
            lo0, hi0 = wilson_interval(k0, n0)
            lo1, hi1 = wilson_interval(k1, n1)
            verdict = (
                "intervals do not overlap: the cold start moved it"
                if lo1 > hi0
                else "intervals overlap: no measurable change"
            )
            out.append(
                f"- Held-out {what}, untrained -> cold start: {_rate(k0, n0)} -> "
                f"{_rate(k1, n1)} ({verdict})."
            )
    for name, records in runs.items():
        points = [r for r in _training(records) if r.get("eval_plays")]
        if points and cold:
            (k0, n0), (k1, n1) = _wins(cold), _wins(points[-1])
            lo0, hi0 = wilson_interval(k0, n0)
            lo1, hi1 = wilson_interval(k1, n1)
            if lo1 > hi0:
                verdict = "above the cold start's interval"
            elif hi1 < lo0:
                verdict = "below the cold start's interval"
            else:
                verdict = "within the noise of the cold start (intervals overlap)"
            out.append(f"- {name}, last evaluation: {_rate(k1, n1)}, {verdict}.")
    plays = {name: sum(r.get("plays") or 0 for r in rs) for name, rs in runs.items()}
    out.append(f"- Plays in all (the budget each condition used): {plays}.")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-root", default=str(ROOT / "runs" / "curve"))
    parser.add_argument("--iterations", type=int, help="override the preset's iterations")
    parser.add_argument("--out", default=str(ROOT / "docs" / "results.md"))
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    run_root = Path(args.run_root)
    if not args.report_only:
        _train(run_root, args.iterations)
    out = Path(args.out)
    _report(run_root, out, out.parent / "results")


if __name__ == "__main__":
    main()
