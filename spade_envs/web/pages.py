"""The corpus pages: overview, the environment list (with search and export) and the map.

Each page is a function ``(app, request) -> Response`` that reads the catalog snapshot,
checks its parameters with :class:`~spade_envs.web.params.Params` and renders a Jinja2
template (``overview.html``, ``list.html``, ``map.html``) from plain values; the
templates escape everything but the SVG charts, which escape what they embed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import Response

from .catalog import FACETS, Snapshot
from .charts import PALETTE, bar_chart, colour_scale, histogram, scatter
from .export import EXPORT_FORMATS, export_response
from .params import Params, query_of
from .render import env_href, fmt_num, fmt_time, qs
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
_ENV_HEADS = ["ID", "kind", "skill", "status", "origin", "hint gain", "win rate", "created",
              "description"]  # fmt: skip


def env_rows(
    snap: Snapshot, positions: Any, *, novelty: Any = None, scores: Any = None
) -> list[list[Any]]:
    """Table rows of catalog positions for the ``table`` macro: ID (a link), kind, skill,
    status (a badge), origin, hint gain, win rate, [novelty], created, [score], description."""
    rows = []
    for i, pos in enumerate(positions):
        pos = int(pos)
        ident = snap.env_id(pos)
        row: list[Any] = [
            {"href": env_href(ident), "text": ident},
            snap.value("kind", pos),
            snap.value("skill", pos),
            {"badge": snap.value("status", pos)},
            snap.value("origin", pos),
            fmt_num(float(snap.hint_gain[pos])),
            fmt_num(float(snap.win_rate[pos])),
        ]
        if novelty is not None:
            row.append(fmt_num(float(novelty[i]), 3))
        row.append(fmt_time(float(snap.created[pos]), date_only=True))
        if scores is not None:
            row.append(fmt_num(float(scores[i]), 3))
        row.append({"desc": snap.summaries[pos]})
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
    histograms; newest; highest hint gain; runs; how far the embeddings have come."""
    Params(query_of(request)).done()
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
    charts = []
    for facet in FACETS:
        counts = snap.facet_counts(facet)
        items = [
            (v, float(c), "/envs" + qs({facet: v}))
            for v, c in sorted(counts.items(), key=lambda kv: -kv[1])
            if v  # no skill, no suite: nothing to filter by
        ]
        if facet == "suite" and not items:
            continue  # a registry without imported suites: no empty chart
        charts.append(bar_chart(items[:16], title=f"by {facet}"))
    gains = snap.hint_gain[played]
    edges = _edges(gains, 0.1, -0.2, 0.6)
    counts, _ = np.histogram(gains, bins=edges)
    hrefs = [
        "/envs" + qs({"hint_gain_min": f"{edges[i]:g}", "hint_gain_max": f"{edges[i + 1]:g}",
                      "sort": "hint_gain"})
        for i in range(len(counts))
    ]  # fmt: skip
    charts.append(
        histogram(
            counts.tolist(), edges.tolist(),
            title="hint gain: return with hint − without (highest of any checkpoint)",
            x_label="hint gain", hrefs=hrefs,
        )
    )  # fmt: skip
    wins = snap.win_rate[played]
    win_counts, win_edges = np.histogram(wins, bins=10, range=(0.0, 1.0))
    charts.append(
        histogram(
            win_counts.tolist(), win_edges.tolist(),
            title="win rate without hint (latest checkpoint)", x_label="win rate",
        )
    )  # fmt: skip
    newest = np.arange(len(snap) - 1, max(-1, len(snap) - 11), -1)  # keys ascend with age
    top: list[list[Any]] = []
    if played.any():
        candidates = np.flatnonzero(played)
        best = candidates[
            np.argpartition(-snap.hint_gain[candidates], min(9, len(candidates) - 1))[:10]
        ]
        top = env_rows(snap, best[np.lexsort((-snap.keys[best], -snap.hint_gain[best]))])
    return app.render(
        "overview.html",
        "Overview",
        active="/",
        cards=cards,
        charts=charts,
        heads=_ENV_HEADS,
        newest=env_rows(snap, newest),
        top=top,
        runs=_runs_summary(app),
        embedding=_embedding_status(app),
    )


def _embedding_status(app: Any) -> dict[str, Any]:
    """How far the server's background embedding has come."""
    state = app.vectors.embedding_progress()
    return {
        "embedded": state.embedded,
        "total": state.total,
        "running": state.running,
        "error": state.error,
        "percent": 100.0 * state.embedded / state.total if state.total else 100.0,
    }


def _runs_summary(app: Any) -> dict[str, Any]:
    """The newest five runs, or why there are none."""
    if app.runs.root is None:
        return {"missing": "root"}
    names = app.runs.names()[:5]
    if not names:
        return {"missing": "runs", "root": str(app.runs.root)}
    rows = []
    for name in names:
        run = app.runs.get(name)
        last = run.last()
        rows.append(
            [
                {"href": f"/runs/{name}", "text": name},
                f"{len(run.rows):,}",
                fmt_time(run.modified),
                fmt_num(last.get("mean_regret"), 3),
                fmt_num(last.get("designer_yield"), 3),
            ]
        )
    return {"rows": rows, "heads": ["run", "iterations", "updated", "mean regret",
                                    "designer yield"]}  # fmt: skip


# ----- the list -----------------------------------------------------------------------------
def _filter_form(snap: Snapshot, query: ListQuery, facets: dict[str, dict[str, int]]) -> dict:
    """The values the list's filter form shows."""
    selects = [("mode", [(m, f"{m} search") for m in MODES], query.mode, "Match")]
    for facet in FACETS:
        counts = facets.get(facet, {})
        options = [("", "any")] + [(v, f"{v} ({counts.get(v, 0):,})") for v in snap.choices(facet)]
        selects.append((facet, options, query.facet(facet), facet))
    after = [
        ("played", [("", "any"), ("yes", "played"), ("no", "never played")], query.played,
         "played"),
        ("sort", [(s, _SORT_LABELS[s]) for s in SORTS if s != "relevance" or query.q],
         query.sort, "sort by"),
        ("dir", [("desc", "largest first"), ("asc", "smallest first")],
         "desc" if query.descending else "asc", "order"),
        ("size", [(str(s), f"{s} per page") for s in PAGE_SIZES], str(query.size), "page size"),
    ]  # fmt: skip
    return {
        "q": query.q,
        "selects": selects,
        "after": after,
        "low": "" if query.hint_gain_min is None else f"{query.hint_gain_min:g}",
        "high": "" if query.hint_gain_max is None else f"{query.hint_gain_max:g}",
        "name": query.name,
    }


def _pager(query: ListQuery, pages: int) -> dict[str, Any] | None:
    """Links to the first, previous, next and last pages, and a jump form."""
    if pages <= 1:
        return None
    base = query.params()
    links = []
    if query.page > 1:
        links.append({"href": "/envs" + qs(base, page=None), "text": "« first"})
        previous = query.page - 1 if query.page > 2 else None
        links.append({"href": "/envs" + qs(base, page=previous), "text": "‹ previous",
                      "cls": "prev"})  # fmt: skip
    after = []
    if query.page < pages:
        after.append({"href": "/envs" + qs(base, page=query.page + 1), "text": "next ›",
                      "cls": "next"})  # fmt: skip
        after.append({"href": "/envs" + qs(base, page=pages), "text": "last »"})
    return {"before": links, "after": after, "page": query.page, "pages": pages, "base": base}


def _header_link(query: ListQuery, sort: str, label: str) -> dict[str, str]:
    """A column header that sorts by ``sort`` (clicking the current one flips its order)."""
    params = query.params()
    params.pop("page", None)
    if query.sort == sort:
        arrow, descending = (" ▼" if query.descending else " ▲"), not query.descending
    else:
        arrow, descending = "", SORTS[sort]
    params.update(sort=sort, dir="desc" if descending else "asc")
    return {"href": "/envs" + qs(params), "text": label + arrow, "cls": "sort"}


def list_page(app: Any, request: Request) -> Response:
    """Filter, search, sort and page the corpus; export what is shown."""
    snap = app.catalog.snapshot()
    params = Params(query_of(request))
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
    what = f"matching “{query.q}”" if query.q else ""
    summary = f"{result.total:,} environment version{'s' if result.total != 1 else ''} {what}"
    if query.q and query.mode == "semantic":
        summary += f" (the nearest {result.total:,} by meaning)"
    return app.render(
        "list.html",
        "Environments",
        active="/envs",
        query=query.q,
        form=_filter_form(snap, query, result.facets),
        summary=summary,
        notes=list(result.notes),
        export={"filters": query.filters(), "total": result.total, "formats": EXPORT_FORMATS},
        pager=_pager(query, result.pages),
        heads=heads,
        rows=env_rows(snap, result.positions, novelty=result.novelty, scores=result.scores),
    )


def export_page(app: Any, request: Request) -> Response:
    """Download every version the list's filters select (all pages), oldest first."""
    snap = app.catalog.snapshot()
    params = Params(query_of(request))
    fmt = params.choice("format", EXPORT_FORMATS, "jsonl") or "jsonl"
    query = parse_list_query(params, snap, paged=False)
    params.done()
    result = app.searcher.run(snap, query, page_only=False)
    positions = result.matching if result.matching is not None else result.positions
    return export_response(app.registry, snap.keys[positions], fmt, head=request.method == "HEAD")


# ----- the map ------------------------------------------------------------------------------
_COLOURS = ("skill", "kind", "origin", "status", "hint_gain")


def map_page(app: Any, request: Request) -> Response:
    """A 2-D PCA projection of the stored embeddings; colour by a facet or by hint gain."""
    snap = app.catalog.snapshot()
    params = Params(query_of(request))
    colour = params.choice("color", _COLOURS, "skill") or "skill"
    filters = {f: params.choice(f, snap.choices(f) or ["(none yet)"]) for f in FACETS}
    limit = app.config.map_points
    count = params.integer("n", low=10, high=limit, default=min(limit, 2000)) or limit
    params.done()
    keys, xy = app.vectors.projection()
    notes = [app.vectors.problem] if app.vectors.problem else []
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
    selects = [("color", [(c, c.replace("_", " ")) for c in _COLOURS], colour, "colour by")]
    for facet in FACETS:
        selects.append((facet, [("", "any")] + [(v, v) for v in snap.choices(facet)],
                        filters[facet], facet))  # fmt: skip
    shown = f"{len(points):,} of {total:,}" if total > len(points) else f"all {total:,}"
    return app.render(
        "map.html",
        "Map",
        active="/map",
        selects=selects,
        limit=limit,
        count=count,
        notes=notes,
        caption=(
            f"PCA of {len(keys):,} stored {app.vectors.model or 'embedding'} vectors; {shown} "
            "matching versions drawn (a seeded sample when there are more). Each point links "
            "to its page."
        ),
        chart=scatter(
            points, title="embeddings, first two principal components", legend=legend[:14]
        ),
        empty=not len(keys),
    )
