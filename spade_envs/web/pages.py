"""The corpus pages: overview, the environment list (with search and export) and the map.

Each page is a function ``(app, request) -> Response`` that reads the catalog snapshot,
checks its parameters with :class:`~spade_envs.web.http.Params` and renders escaped
HTML through :mod:`~spade_envs.web.html`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .catalog import FACETS, Snapshot
from .charts import PALETTE, bar_chart, colour_scale, histogram, scatter
from .export import EXPORT_FORMATS, export_response
from .html import Raw, badge, env_href, esc, fmt_num, fmt_time, link, qs, table
from .http import Params, Request, Response
from .search import MODES, PAGE_SIZES, SORTS, ListQuery, parse_list_query

__all__ = ["env_rows", "export_page", "list_page", "map_page", "overview_page"]

_SORT_LABELS = {
    "relevance": "relevance",
    "created": "newest",
    "hint_gain": "hint gain",
    "novelty": "novelty",
    "win_rate": "win rate",
    "name": "name",
}


def env_rows(
    snap: Snapshot, positions: Any, *, novelty: Any = None, scores: Any = None
) -> list[list[Any]]:
    """Table rows of catalog positions: ID, kind, skill, status, hint gain, win rate, ..."""
    rows = []
    for i, pos in enumerate(positions):
        pos = int(pos)
        ident = snap.env_id(pos)
        row: list[Any] = [
            link(env_href(ident), ident),
            snap.value("kind", pos),
            snap.value("skill", pos),
            badge(snap.value("status", pos)),
            snap.value("origin", pos),
            fmt_num(float(snap.hint_gain[pos])),
            fmt_num(float(snap.win_rate[pos])),
        ]
        if novelty is not None:
            row.append(fmt_num(float(novelty[i]), 3))
        row.append(fmt_time(float(snap.created[pos]), date_only=True))
        if scores is not None:
            row.append(fmt_num(float(scores[i]), 3))
        row.append(Raw(f'<span class="desc">{esc(snap.summaries[pos])}</span>'))
        rows.append(row)
    return rows


def _edges(values: np.ndarray, step: float, low: float, high: float) -> np.ndarray:
    if len(values):
        low = min(low, math.floor(float(values.min()) / step) * step)
        high = max(high, math.ceil(float(values.max()) / step) * step)
    count = max(1, round((high - low) / step))
    return np.linspace(low, low + count * step, count + 1)


def overview_page(app: Any, request: Request) -> Response:
    """Counts by facet (skill, kind, origin, status, suite); hint-gain and win-rate
    histograms; newest; runs."""
    Params(request.query).done()
    snap = app.catalog.snapshot()
    app.vectors.refresh()
    played = snap.checkpoints > 0
    cards = [
        ("versions", f"{len(snap):,}"),
        ("names", f"{app.searcher.distinct_names(snap):,}"),
        ("played", f"{int(played.sum()):,}"),
        (
            "embedded",
            f"{len(app.vectors):,}" + (f" ({app.vectors.model})" if app.vectors.model else ""),
        ),
    ]
    parts = ['<h1>Corpus overview</h1><section class="cards">']
    parts += [f'<div class="card"><b>{esc(v)}</b><span>{esc(k)}</span></div>' for k, v in cards]
    parts.append('</section><section class="charts">')
    for facet in FACETS:
        counts = snap.facet_counts(facet)
        items = [
            (v, float(c), "/envs" + qs({facet: v}))
            for v, c in sorted(counts.items(), key=lambda kv: -kv[1])
            if v  # no skill, no suite: nothing to filter by
        ]
        if facet == "suite" and not items:
            continue  # a registry without imported suites: no empty chart
        parts.append(str(bar_chart(items[:16], title=f"by {facet}")))
    gains = snap.hint_gain[played]
    edges = _edges(gains, 0.1, -0.2, 0.6)
    counts, _ = np.histogram(gains, bins=edges)
    hrefs = [
        "/envs"
        + qs(
            {
                "hint_gain_min": f"{edges[i]:g}",
                "hint_gain_max": f"{edges[i + 1]:g}",
                "sort": "hint_gain",
            }
        )
        for i in range(len(counts))
    ]
    parts.append(
        str(
            histogram(
                counts.tolist(), edges.tolist(),
                title="hint gain: return with hint − without (highest of any checkpoint)",
                x_label="hint gain", hrefs=hrefs,
            )
        )
    )  # fmt: skip
    wins = snap.win_rate[played]
    win_counts, win_edges = np.histogram(wins, bins=10, range=(0.0, 1.0))
    parts.append(
        str(
            histogram(
                win_counts.tolist(), win_edges.tolist(),
                title="win rate without hint (latest checkpoint)", x_label="win rate",
            )
        )
    )  # fmt: skip
    parts.append("</section>")
    newest = np.arange(len(snap) - 1, max(-1, len(snap) - 11), -1)  # keys ascend with age
    head = [
        "ID",
        "kind",
        "skill",
        "status",
        "origin",
        "hint gain",
        "win rate",
        "created",
        "description",
    ]
    parts.append('<h2>Newest</h2><p><a href="/envs">All environments →</a></p>')
    parts.append(table(head, env_rows(snap, newest), empty="The registry is empty."))
    if played.any():
        candidates = np.flatnonzero(played)
        top = candidates[
            np.argpartition(-snap.hint_gain[candidates], min(9, len(candidates) - 1))[:10]
        ]
        order = top[np.lexsort((-snap.keys[top], -snap.hint_gain[top]))]
        parts.append('<h2>Highest hint gain</h2><p><a href="/envs?sort=hint_gain">More →</a></p>')
        parts.append(table(head, env_rows(snap, order)))
    parts.append("<h2>Runs</h2>")
    parts.append(_runs_summary(app))
    return app.page("Overview", "".join(parts), active="/")


def _runs_summary(app: Any) -> str:
    names = app.runs.names()[:5]
    if app.runs.root is None:
        return (
            '<p class="muted">No runs directory: start the server with <code>--runs DIR</code>.</p>'
        )
    if not names:
        return f'<p class="muted">No run with a metrics.jsonl in {esc(app.runs.root)} yet.</p>'
    rows = []
    for name in names:
        run = app.runs.get(name)
        last = run.last()
        rows.append(
            [
                link(f"/runs/{name}", name),
                f"{len(run.rows):,}",
                fmt_time(run.modified),
                fmt_num(last.get("mean_regret"), 3),
                fmt_num(last.get("designer_yield"), 3),
            ]
        )
    return str(table(["run", "iterations", "updated", "mean regret", "designer yield"], rows))


# ----- the list -----------------------------------------------------------------------------
def _select(name: str, options: list[tuple[str, str]], chosen: str | None, label: str) -> str:
    opts = "".join(
        f'<option value="{esc(v)}"{" selected" if v == (chosen or "") else ""}>{esc(t)}</option>'
        for v, t in options
    )
    return f'<label>{esc(label)}<select name="{esc(name)}">{opts}</select></label>'


def _filter_form(snap: Snapshot, query: ListQuery, facets: dict[str, dict[str, int]]) -> str:
    parts = ['<form class="filters" method="get" action="/envs" id="filters">']
    parts.append(
        f'<label>Search<input type="search" name="q" value="{esc(query.q)}" maxlength="200" '
        'placeholder="words or &quot;a phrase&quot;"></label>'
    )
    parts.append(_select("mode", [(m, f"{m} search") for m in MODES], query.mode, "Match"))
    for facet in FACETS:
        counts = facets.get(facet, {})
        options = [("", "any")] + [(v, f"{v} ({counts.get(v, 0):,})") for v in snap.choices(facet)]
        parts.append(_select(facet, options, query.facet(facet), facet))
    low = "" if query.hint_gain_min is None else f"{query.hint_gain_min:g}"
    high = "" if query.hint_gain_max is None else f"{query.hint_gain_max:g}"
    parts.append(
        '<fieldset><legend title="mean return with the hint minus without it">hint gain</legend>'
        f'<input type="number" step="any" name="hint_gain_min" value="{esc(low)}" '
        'placeholder="min" aria-label="lowest hint gain">'
        f'<input type="number" step="any" name="hint_gain_max" value="{esc(high)}" '
        'placeholder="max" aria-label="highest hint gain"></fieldset>'
    )
    parts.append(
        _select(
            "played",
            [("", "any"), ("yes", "played"), ("no", "never played")],
            query.played,
            "played",
        )
    )
    sorts = [(s, _SORT_LABELS[s]) for s in SORTS if s != "relevance" or query.q]
    parts.append(_select("sort", sorts, query.sort, "sort by"))
    parts.append(
        _select("dir", [("desc", "largest first"), ("asc", "smallest first")],
                "desc" if query.descending else "asc", "order")
    )  # fmt: skip
    parts.append(
        _select(
            "size", [(str(s), f"{s} per page") for s in PAGE_SIZES], str(query.size), "page size"
        )
    )
    if query.name:
        parts.append(f'<input type="hidden" name="name" value="{esc(query.name)}">')
    parts.append(
        '<div class="buttons"><button type="submit">Apply</button> '
        '<a href="/envs">reset</a></div></form>'
    )
    return "".join(parts)


def _pager(query: ListQuery, pages: int) -> str:
    base = query.params()
    if pages <= 1:
        return ""
    items = []
    if query.page > 1:
        items.append(link("/envs" + qs(base, page=None), "« first"))
        items.append(
            link(
                "/envs" + qs(base, page=query.page - 1 if query.page > 2 else None),
                "‹ previous",
                "prev",
            )
        )
    items.append(f"<span>page {query.page:,} of {pages:,}</span>")
    if query.page < pages:
        items.append(link("/envs" + qs(base, page=query.page + 1), "next ›", "next"))
        items.append(link("/envs" + qs(base, page=pages), "last »"))
    hidden = "".join(
        f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">' for k, v in base.items()
    )
    items.append(
        f'<form method="get" action="/envs" class="jump">{hidden}'
        '<input type="number" name="page" min="1" '
        f'max="{pages}" value="{query.page}" aria-label="page">'
        '<button type="submit">go</button></form>'
    )
    return '<nav class="pager">' + " ".join(items) + "</nav>"


def _export_form(query: ListQuery, total: int) -> str:
    hidden = "".join(
        f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">'
        for k, v in query.filters().items()
    )
    options = "".join(f'<option value="{f}">{f}</option>' for f in EXPORT_FORMATS)
    return (
        f'<form class="export" method="get" action="/export" id="export">{hidden}'
        f'<label>Export these {total:,} as <select name="format">{options}</select></label> '
        '<button type="submit">Download</button></form>'
    )


def _header_link(query: ListQuery, sort: str, label: str) -> Raw:
    """A column header that sorts by ``sort`` (clicking the current one flips its order)."""
    params = query.params()
    params.pop("page", None)
    if query.sort == sort:
        arrow, descending = (" ▼" if query.descending else " ▲"), not query.descending
    else:
        arrow, descending = "", SORTS[sort]
    params.update(sort=sort, dir="desc" if descending else "asc")
    return link("/envs" + qs(params), label + arrow, "sort")


def list_page(app: Any, request: Request) -> Response:
    """Filter, search, sort and page the corpus; export what is shown."""
    snap = app.catalog.snapshot()
    params = Params(request.query)
    query = parse_list_query(params, snap)
    params.done()
    result = app.searcher.run(snap, query)
    heads: list[Any] = [
        _header_link(query, "name", "ID"), "kind", "skill", "status", "origin",
        _header_link(query, "hint_gain", "hint gain"),
        _header_link(query, "win_rate", "win rate"),
        _header_link(query, "novelty", "novelty"), _header_link(query, "created", "created"),
    ]  # fmt: skip
    if query.q:
        heads.append(_header_link(query, "relevance", "score"))
    heads.append("description")
    rows = env_rows(snap, result.positions, novelty=result.novelty, scores=result.scores)
    what = f"matching “{query.q}”" if query.q else ""
    summary = f"{result.total:,} environment version{'s' if result.total != 1 else ''} {what}"
    if query.q and query.mode == "semantic":
        summary += f" (the nearest {result.total:,} by meaning)"
    notes = "".join(f'<p class="note">{esc(n)}</p>' for n in result.notes)
    body = (
        '<div class="listing"><aside>'
        + _filter_form(snap, query, result.facets)
        + "</aside><section>"
        + f'<h1>Environments</h1><p class="summary" id="summary">{esc(summary)}</p>{notes}'
        + _export_form(query, result.total)
        + _pager(query, result.pages)
        + str(table(heads, rows, cls="grid envs", empty="Nothing matches: loosen the filters."))
        + _pager(query, result.pages)
        + "</section></div>"
    )
    return app.page("Environments", body, active="/envs", query=query.q)


def export_page(app: Any, request: Request) -> Response:
    """Download every version the list's filters select (all pages), oldest first."""
    snap = app.catalog.snapshot()
    params = Params(request.query)
    fmt = params.choice("format", EXPORT_FORMATS, "jsonl") or "jsonl"
    query = parse_list_query(params, snap, paged=False)
    params.done()
    result = app.searcher.run(snap, query, page_only=False)
    positions = result.matching if result.matching is not None else result.positions
    return export_response(app.registry, snap.keys[positions], fmt)


# ----- the map ------------------------------------------------------------------------------
def map_page(app: Any, request: Request) -> Response:
    """A 2-D PCA projection of the stored embeddings; colour by a facet or by hint gain."""
    snap = app.catalog.snapshot()
    params = Params(request.query)
    colour = (
        params.choice("color", ("skill", "kind", "origin", "status", "hint_gain"), "skill")
        or "skill"
    )
    filters = {f: params.choice(f, snap.choices(f) or ["(none yet)"]) for f in FACETS}
    limit = app.config.map_points
    count = params.integer("n", low=10, high=limit, default=min(limit, 2000)) or limit
    params.done()
    keys, xy = app.vectors.projection()
    notes = []
    if app.vectors.problem:
        notes.append(app.vectors.problem)
    positions = np.searchsorted(snap.keys, keys) if len(snap.keys) else np.zeros(0, np.int64)
    known = positions < len(snap.keys)
    known[known] = snap.keys[positions[known]] == keys[known]
    for facet, value in filters.items():
        if value is not None:
            code = snap.vocab[facet].index(value)
            known[known] = snap.codes[facet][positions[known]] == code
    chosen = np.flatnonzero(known)
    total = len(chosen)
    if total > count:
        rng = np.random.default_rng(app.config.seed)
        chosen = np.sort(rng.choice(chosen, size=count, replace=False))
    legend: list[tuple[str, str]] = []
    if colour == "hint_gain":
        legend = [
            ("hint gain −1", colour_scale(-1)),
            ("hint gain 0", colour_scale(0)),
            ("hint gain +1", colour_scale(1)),
            ("not played", colour_scale(float("nan"))),
        ]
    else:
        legend = [(v, PALETTE[i % len(PALETTE)]) for i, v in enumerate(snap.vocab[colour])]
    points = []
    for i in chosen:
        pos = int(positions[i])
        ident = snap.env_id(pos)
        if colour == "hint_gain":
            fill = colour_scale(float(snap.hint_gain[pos]))
        else:
            fill = PALETTE[int(snap.codes[colour][pos]) % len(PALETTE)]
        gain = fmt_num(float(snap.hint_gain[pos]))
        label = (
            f"{ident} · {snap.value('skill', pos)} · hint gain {gain}\n{snap.summaries[pos][:160]}"
        )
        points.append((float(xy[i, 0]), float(xy[i, 1]), fill, env_href(ident), label))
    controls = ['<form class="mapform" method="get" action="/map">']
    controls.append(
        _select(
            "color",
            [(c, c.replace("_", " ")) for c in ("skill", "kind", "origin", "status", "hint_gain")],
            colour,
            "colour by",
        )
    )
    for facet in FACETS:
        options = [("", "any")] + [(v, v) for v in snap.choices(facet)]
        controls.append(_select(facet, options, filters[facet], facet))
    controls.append(
        f'<label>points<input type="number" name="n" min="10" max="{limit}" '
        f'value="{count}"></label>'
    )
    controls.append('<button type="submit">Draw</button></form>')
    shown = f"{len(points):,} of {total:,}" if total > len(points) else f"all {total:,}"
    caption = (
        f"PCA of {len(keys):,} stored {esc(app.vectors.model or 'embedding')} vectors; "
        f"{shown} matching "
        "versions drawn (a seeded sample when there are more). Each point links to its page."
    )
    body = (
        "<h1>Map of the corpus</h1>"
        + "".join(controls)
        + "".join(f'<p class="note">{esc(n)}</p>' for n in notes)
        + f'<p class="muted">{caption}</p>'
        + str(
            scatter(points, title="embeddings, first two principal components", legend=legend[:14])
        )
    )
    if not len(keys):
        body += (
            '<p class="note">No embeddings are stored yet: '
            '<code>spade-envs search "..."</code> embeds the corpus.</p>'
        )
    return app.page("Map", body, active="/map")
