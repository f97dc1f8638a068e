"""One environment's page, its source download, and playing it in the browser.

The environment page reads the registry directly (never the catalog's snapshot), so
it is always current. At its top is the card (:mod:`.pages_card`: example episode,
knobs, tags, licence and origin, snippet, version history); below it the description,
the suite an imported version comes from, play statistics per checkpoint as charts,
validation reports check by check, lineage (parents, children, the grounding
document), similar versions, the highlighted source and any extra metadata. The play
pages drive a :class:`~spade_envs.web.play.PlaySessions` session; only POSTs that
pass the CSRF check reach it. The two POST handlers are ``async``: their environment
calls go through :class:`~spade_envs.web.play_runner.PlayRunner` (its own threads, a
deadline, caps per browser), never through the threads that serve the other pages.

Handlers hand plain data to the templates (``env.html``, ``play_form.html``,
``play.html``), which escape everything; the SVG charts and the highlighted source
are the only markup built here, and they escape what they embed.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..error import SpadeError
from ..registry.ids import parse_env_id
from .charts import grouped_bars
from .examples import examples_of
from .highlight import highlight_python
from .pages_card import card, diff_page, package_download, parse_slug, source_facts
from .params import HTTPError, Params, local_redirect, query_of
from .play import MAX_ACTION_CHARS
from .play_runner import play_client
from .render import env_href, fmt_num, fmt_time, qs

__all__ = [
    "diff_page",
    "env_page",
    "package_download",
    "parse_slug",
    "play_action",
    "play_form",
    "play_start",
    "play_view",
    "source_download",
]

_DOCUMENT_CHARS = 20_000
#: The most characters of each quarantine evidence text shown (an environment chose them).
_EVIDENCE_CHARS = 1_000
_STATS_HEADS = ["checkpoint", "plays with hint", "return with hint", "plays without",
                "return without", "win rate", "hint gain", "updated"]  # fmt: skip
_SESSION = r"[A-Za-z0-9_-]{20,40}"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _stats(stats: list[Any]) -> dict[str, Any]:
    """Charts and table rows of the play statistics (newest checkpoint first in the table)."""
    if not stats:
        return {"charts": [], "rows": []}
    ordered = list(reversed(stats))  # oldest checkpoint first
    names = [s.checkpoint for s in ordered]
    returns = grouped_bars(
        names,
        {
            "with hint": [s.mean_return_with_hint for s in ordered],
            "without hint": [s.mean_return_without_hint for s in ordered],
        },
        title="mean return per checkpoint",
    )
    rates = grouped_bars(
        names,
        {
            "hint gain": [s.hint_gain for s in ordered],
            "win rate": [s.win_rate for s in ordered],
        },
        title="hint gain (return with hint − without) and win rate per checkpoint",
        y_range=(min(0.0, *(s.hint_gain for s in ordered)), 1.0),
    )
    rows = [
        [
            s.checkpoint,
            f"{s.plays_with_hint:,}",
            fmt_num(s.mean_return_with_hint, 3),
            f"{s.plays_without_hint:,}",
            fmt_num(s.mean_return_without_hint, 3),
            fmt_num(s.win_rate, 3),
            fmt_num(s.hint_gain, 3),
            fmt_time(s.updated_at),
        ]
        for s in stats
    ]
    return {"charts": [returns, rates], "rows": rows}


def _reports(reports: list[Any]) -> list[dict[str, Any]]:
    """Validation reports, newest first, each with its checks."""
    out = []
    for report in reversed(reports):
        data = report.report
        checks = []
        for check in data.get("checks", []) if isinstance(data, dict) else []:
            if not isinstance(check, dict):
                continue
            mark = "skip" if check.get("skipped") else ("ok" if check.get("passed") else "FAIL")
            details = check.get("details") or {}
            try:
                seconds = float(check.get("seconds") or 0)
            except (TypeError, ValueError):
                seconds = 0.0
            checks.append(
                {
                    "mark": mark,
                    "kind": {"ok": "passed", "FAIL": "failed", "skip": "skipped"}[mark],
                    "name": str(check.get("name", "?")),
                    "time": f"{seconds * 1000:,.1f} ms",
                    "reason": str(check.get("reason", "")),
                    "details": _json(details) if details else "",
                }
            )
        out.append(
            {
                "passed": report.passed,
                "summary": (
                    f"budget {report.budget or '?'} · validator {report.validator_version or '?'}"
                    f" · {report.duration_s:.1f} s · {fmt_time(report.created_at)}"
                ),
                "checks": checks,
            }
        )
    return out


def _ref(ref: str, names: frozenset[str]) -> dict[str, str]:
    """A parent reference: an ID (a link), a name in this registry, or unknown text."""
    try:
        parse_env_id(ref)
        return {"href": env_href(ref), "text": ref, "note": ""}
    except SpadeError:
        pass
    if ref in names:
        return {"href": "/envs" + qs({"name": ref}), "text": f"{ref} (every version)", "note": ""}
    return {"href": "", "text": ref, "note": "(not in this registry)"}


def _similar(app: Any, record: Any) -> dict[str, Any]:
    """The nearest stored versions by embedding, and this version's novelty."""
    hits = app.vectors.neighbours(record.key, 6)
    if hits is None:
        return {"model": app.vectors.model or "stored", "rows": None, "novelty": ""}
    snap = app.catalog.snapshot()
    rows = []
    for key, score in hits:
        pos = snap.position(key)
        if pos is not None:
            ident = snap.env_id(pos)
            rows.append(
                [
                    {"href": env_href(ident), "text": ident},
                    snap.value("skill", pos),
                    fmt_num(score, 3),
                    {"desc": snap.summaries[pos]},
                ]
            )
    value = app.vectors.novelty_of(record.key)
    novelty = "still being computed" if value is None else fmt_num(value, 3)
    return {"model": app.vectors.model, "rows": rows, "novelty": novelty}


def _lineage(app: Any, record: Any) -> dict[str, Any]:
    snap = app.catalog.snapshot()
    names = snap.name_set
    children = [snap.env_id(p) for p in snap.children_of(record.id, record.name)]
    made = [(k, v) for k, v in (("model", record.model), ("run", record.run_id),
                                ("prompt sha256", record.prompt_sha256)) if v]  # fmt: skip
    document: dict[str, Any] | None = None
    if record.document_id is not None:
        try:
            doc = app.registry.document(record.document_id)
        except SpadeError as exc:
            document = {"id": record.document_id, "error": str(exc)}
        else:
            document = {
                "id": doc.id,
                "error": "",
                "source": doc.source,
                "chars": len(doc.text),
                "cut": len(doc.text) > _DOCUMENT_CHARS,
                "shown": _DOCUMENT_CHARS,
                "text": doc.text[:_DOCUMENT_CHARS],
            }
    return {
        "parents": [_ref(p, names) for p in record.parents],
        "children": [{"href": env_href(c), "text": c} for c in children],
        "made": made,
        "document": document,
    }


def _suite(record: Any) -> dict[str, Any] | None:
    """Where an imported version comes from (``record.suite`` and ``extra["suite"]``):
    the suite linked to its homepage, package and version, task, level, licence, and why
    it is unproven or rejected. Every value is stored data, escaped like model text."""
    if not record.suite:
        return None
    info = record.extra.get("suite")
    info = info if isinstance(info, dict) else {}

    def text(key: str) -> str:
        value = info.get(key)
        return "" if value is None else str(value)

    homepage = text("homepage")
    package = " ".join(v for v in (text("distribution"), text("version")) if v)
    facts = [(key, text(key)) for key in ("task", "level", "category", "family", "licence")]
    return {
        "name": record.suite,
        "homepage": homepage if re.match(r"https?://[^\s]+\Z", homepage, re.IGNORECASE) else "",
        "package": package,
        "facts": [(k, v) for k, v in facts if v],
        "href": "/envs" + qs({"suite": record.suite}),
        "notes": [
            (key, label, text(key))
            for key, label in (("unproven", "Unproven"), ("rejected", "Rejected"))
            if text(key)
        ],
    }


def _quarantine(registry: Any, record: Any) -> dict[str, Any] | None:
    """The quarantine box of a quarantined version: where its replay diverged, what the
    play and the replay saw (cut to :data:`_EVIDENCE_CHARS`; the template escapes them),
    when, and how to clear it. None for any other status."""
    if record.status != "quarantined":
        return None

    def cut(text: str) -> str:
        return text if len(text) <= _EVIDENCE_CHARS else text[: _EVIDENCE_CHARS - 1] + "…"

    evidence = registry.quarantine_evidence(record.id)
    box: dict[str, Any] = {"command": f"spade-envs revalidate {record.id}", "evidence": None}
    if evidence is not None:
        box["evidence"] = {
            "seed": str(evidence.seed),
            "step": "the reset (step 0)" if evidence.step == 0 else f"step {evidence.step}",
            "field": evidence.field,
            "played": cut(evidence.played),
            "replayed": cut(evidence.replayed),
            "detail": cut(evidence.detail),
            "at": cut(evidence.at)[:64],
        }
    return box


def env_page(app: Any, request: Request, slug: str) -> Response:
    """Everything stored about one version, under its card.

    A first view queues the version's example episode before anything else and waits
    for it last (what is left of the examples' ``wait_s``): the episode plays in a
    sandbox worker while this thread reads the registry, highlights the source and
    finds the neighbours, so the page costs the longer of the two, not their sum.
    """
    Params(query_of(request)).done()
    ident = parse_slug(slug)
    registry = app.registry
    record = registry.get(ident)
    client = play_client(request)
    examples = examples_of(app)
    started = time.monotonic()
    examples.get(record, wait_s=0, client=client)  # queued now (or kept): never waits here
    versions = [
        {"id": v, "number": v.rsplit("-v", 1)[1], "href": env_href(v), "current": v == ident}
        for v in registry.versions(record.name)
    ]
    facts = [
        ("kind", record.kind), ("dialect", source_facts(record)[0]),
        ("skill", record.skill), ("origin", record.origin),
        ("max turns", str(record.max_turns)), ("created", fmt_time(record.created_at)),
    ]  # fmt: skip
    sections = {
        "suite": _suite(record),
        "quarantine": _quarantine(registry, record),
        "stats": _stats(registry.play_stats(ident)),
        "reports": _reports(registry.validations(ident)),
        "lineage": _lineage(app, record),
        "similar": _similar(app, record),
        "source_html": highlight_python(record.source),
    }
    # The card last: its example has had the time the sections above took to be played.
    left = max(0.0, examples.wait_s - (time.monotonic() - started))
    env_card = card(app, record, client, wait_s=left)
    return app.render(
        "env.html",
        ident,
        active="/envs",
        refresh_s=env_card["reload_s"] if env_card["example"] is None else None,
        record=record,
        base=env_href(ident),
        make_line=f"gym.make({ident!r})",
        facts=facts,
        versions=versions,
        card=env_card,
        stats_heads=_STATS_HEADS,
        source_lines=record.source.count("\n") + 1,
        extra=_json(record.extra) if record.extra else "",
        **sections,
    )


def source_download(app: Any, request: Request, slug: str) -> Response:
    """The version's source as a ``.py`` attachment."""
    Params(query_of(request)).done()
    record = app.registry.get(parse_slug(slug))
    return Response(
        record.source.encode("utf-8", "surrogatepass"),
        media_type="text/x-python; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{record.name}_v{record.version}.py"'
        },
    )


# ----- play -----------------------------------------------------------------------------------
def play_form(app: Any, request: Request, slug: str) -> Response:
    """Start a play session: seed and, for games, the opponent."""
    Params(query_of(request)).done()
    ident = parse_slug(slug)
    record = app.registry.get(ident)
    return app.render(
        "play_form.html",
        f"Play {ident}",
        active="/envs",
        record=record,
        csrf=request.state.csrf,
        idle_minutes=f"{app.config.play_idle_s / 60:g}",
    )


async def play_start(app: Any, request: Request) -> Response:
    """POST /play: open the session and go to its page."""
    owner = request.state.owner
    params = Params(request.state.form, ignore=("csrf",))
    ident = params.text("env", max_chars=80)
    if not ident:
        raise HTTPError(400, "env is missing: which environment should be played?")
    try:
        parse_env_id(ident)
    except SpadeError as exc:
        raise HTTPError(400, str(exc)) from None
    seed = params.integer("seed", low=0, high=2**31 - 1)
    opponent = params.choice("opponent", ("best", "random"), "best") or "best"
    params.done()
    session = await app.play.start(play_client(request), ident, owner, seed, opponent)
    return local_redirect(f"/play/{session.id}")


def _session_id(sid: str) -> str:
    if not re.fullmatch(_SESSION, sid):
        raise HTTPError(404, "There is no play session with that address.")
    return sid


def play_view(app: Any, request: Request, sid: str) -> Response:
    """The session's transcript and what can be done next."""
    Params(query_of(request)).done()
    session = app.sessions.get(_session_id(sid), request.state.owner)
    return app.render(
        "play.html",
        f"Playing {session.env_id}",
        active="/envs",
        session=session,
        csrf=request.state.csrf,
        tools=_json(session.tools) if session.tools else "",
        max_action_chars=MAX_ACTION_CHARS,
    )


async def play_action(app: Any, request: Request, sid: str) -> Response:
    """POST /play/<sid>: step, hint, solution, reset or close."""
    owner = request.state.owner
    session = app.sessions.get(_session_id(sid), owner)
    params = Params(request.state.form, ignore=("csrf",))
    op = params.choice("op", ("step", "hint", "solution", "reset", "close"))
    if op is None:
        raise HTTPError(400, "op is missing: one of step, hint, solution, reset, close.")
    action = params.raw("action", max_chars=MAX_ACTION_CHARS) if op == "step" else ""
    params.done()
    if op == "close":
        app.sessions.close(session.id, owner, wait=False)
        return local_redirect(env_href(session.env_id))
    play, client = app.play, play_client(request)
    if op == "step":
        await play.step(client, session, action)
    elif op == "hint":
        await play.hint(client, session)
    elif op == "solution":
        await play.solution(client, session)
    else:
        await play.reset(client, session)
    return local_redirect(f"/play/{session.id}#end")


def spade_form(app: Any, request: Request, rest: str) -> Response:
    """``/env/spade/Name-vN[/...]``, the ID as printed everywhere else: a permanent
    redirect to the page's own path (``/env/Name-vN[/...]``), query string kept."""
    del app
    from .params import local_redirect

    # The query goes on as sent, except what a local path may not hold (a raw backslash).
    query = urllib.parse.quote(request.url.query, safe="=&%+;,/?:@!$'()*~-._")
    return local_redirect(f"/env/{rest}" + (f"?{query}" if query else ""), status=308)
