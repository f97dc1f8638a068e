"""The Runs pages: every self-play run under ``--runs DIR`` and one run's curves.

Each numeric field of a run's ``metrics.jsonl`` is drawn against the iteration as an
SVG line chart; the agent's return with and without the hint also share one chart,
since their gap is the hint gain (which the designer's regret floors at 0). A run page
reloads itself every 30 seconds while the trainer writes.
"""

from __future__ import annotations

from typing import Any

from .charts import line_chart
from .html import esc, fmt_num, fmt_time, link, table
from .http import Params, Request, Response

__all__ = ["run_page", "runs_page"]

_NAME = r"[A-Za-z0-9.][A-Za-z0-9._-]{0,127}"
_KEY_FIELDS = ("mean_regret", "designer_yield", "eval_return", "agent_return_without_hint")


def runs_page(app: Any, request: Request) -> Response:
    """A table of runs, most recently updated first."""
    Params(request.query).done()
    runs = app.runs
    if runs.root is None:
        body = (
            "<h1>Runs</h1><p>No runs directory was given. Start the server with "
            "<code>spade-envs serve --runs DIR</code>, where DIR holds run directories "
            "(each with a <code>metrics.jsonl</code> the trainer writes).</p>"
        )
        return app.page("Runs", body, active="/runs")
    rows = []
    for name in runs.names():
        run = runs.get(name)
        last = run.last()
        rows.append(
            [link(f"/runs/{name}", name), f"{len(run.rows):,}", fmt_time(run.modified)]
            + [fmt_num(last.get(f), 3) for f in _KEY_FIELDS]
        )
    body = f'<h1>Runs</h1><p class="muted">Runs under <code>{esc(runs.root)}</code>.</p>' + str(
        table(
            ["run", "iterations", "updated", *(f.replace("_", " ") for f in _KEY_FIELDS)],
            rows,
            empty="No run directory with a metrics.jsonl here yet.",
        )
    )
    return app.page("Runs", body, active="/runs", refresh_s=60)


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
    Params(request.query).done()
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
    sections = "".join(
        f'<h2>{esc(group.capitalize())}</h2><div class="charts">{"".join(map(str, charts))}</div>'
        for group, charts in grouped.items()
        if charts
    )
    notes = ""
    if run.skipped:
        notes = (
            f'<p class="note">{run.skipped:,} line(s) of metrics.jsonl were not JSON objects '
            "and are left out.</p>"
        )
    last = run.last()
    last_table = table(["metric", "last value"], [[k, f"{v:.6g}"] for k, v in last.items()])
    config = ""
    if run.config:
        config = (
            f"<details><summary>{esc(run.config_name)}</summary>"
            f'<pre class="json">{esc(run.config)}</pre></details>'
        )
    body = (
        f"<h1>Run {esc(name)}</h1>"
        f'<p class="muted">{len(run.rows):,} iterations · updated {fmt_time(run.modified)} · '
        "this page reloads every 30 s</p>"
        + notes
        + (sections or "<p>No numeric metrics yet.</p>")
        + "<h2>Latest</h2>"
        + str(last_table)
        + config
    )
    return app.page(f"Run {name}", body, active="/runs", refresh_s=30)
