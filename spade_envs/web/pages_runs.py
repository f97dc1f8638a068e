"""The Runs pages: every self-play run under ``--runs DIR`` and one run's curves.

Each numeric field of a run's ``metrics.jsonl`` is drawn against the iteration as an
SVG line chart; the agent's return with and without the hint also share one chart,
since their gap is the hint gain (which the designer's regret floors at 0). A run page
reloads itself every 30 seconds while the trainer writes.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .charts import line_chart
from .params import Params, query_of
from .render import fmt_num, fmt_time

__all__ = ["run_page", "runs_page"]

_NAME = r"[A-Za-z0-9.][A-Za-z0-9._-]{0,127}"
_KEY_FIELDS = ("mean_regret", "designer_yield", "eval_return", "agent_return_without_hint")


def runs_page(app: Any, request: Request) -> Response:
    """A table of runs, most recently updated first."""
    Params(query_of(request)).done()
    runs = app.runs
    rows = []
    if runs.root is not None:
        for name in runs.names():
            run = runs.get(name)
            last = run.last()
            rows.append(
                [{"href": f"/runs/{name}", "text": name}, f"{len(run.rows):,}",
                 fmt_time(run.modified)] + [fmt_num(last.get(f), 3) for f in _KEY_FIELDS]
            )  # fmt: skip
    return app.render(
        "runs.html",
        "Runs",
        active="/runs",
        refresh_s=60,
        root=None if runs.root is None else str(runs.root),
        heads=["run", "iterations", "updated", *(f.replace("_", " ") for f in _KEY_FIELDS)],
        rows=rows,
    )


#: Chart groups of a run page: a field goes to the first group whose prefix it has.
_GROUPS = (
    ("agent", ("mean_regret", "mean_hint_gain", "win_rate", "agent_", "envs_played", "plays")),
    ("designer", ("designer", "reject_")),
    ("evaluation", ("eval",)),
    ("update", ("loss", "grad", "clip", "kl", "tokens_agent", "tokens_designer", "samples_")),
    ("time and throughput", ("seconds_", "tokens_per", "train_tokens", "generated")),
)


def _group_of(field: str) -> str:
    for name, prefixes in _GROUPS:
        if field.startswith(prefixes):
            return name
    return "other"


def run_page(app: Any, request: Request, name: str) -> Response:
    """One chart per numeric metric of the run against the iteration, grouped by topic."""
    Params(query_of(request)).done()
    run = app.runs.get(name)
    fields = run.fields
    grouped: dict[str, list[Any]] = {g: [] for g, _ in _GROUPS}
    grouped["other"] = []
    pair = ("agent_return_with_hint", "agent_return_without_hint")
    if all(f in fields for f in pair):
        grouped["agent"].append(
            line_chart(
                {"with hint": run.series(pair[0]), "without hint": run.series(pair[1])},
                title="agent return with and without the hint",
                x_label="iteration",
            )
        )
    for field in fields:
        chart = line_chart({field: run.series(field)}, title=field, x_label="iteration")
        grouped[_group_of(field)].append(chart)
    last = run.last()
    return app.render(
        "run.html",
        f"Run {name}",
        active="/runs",
        refresh_s=30,
        name=name,
        run=run,
        modified=fmt_time(run.modified),
        sections=[(group.capitalize(), charts) for group, charts in grouped.items() if charts],
        last=[[k, f"{v:.6g}"] for k, v in last.items()],
    )
