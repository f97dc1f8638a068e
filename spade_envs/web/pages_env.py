"""One environment's page, its source download, and playing it in the browser.

The environment page reads the registry directly (never the catalog's snapshot), so
it is always current: description, the suite an imported version comes from,
validation reports check by check, play statistics per checkpoint as charts, lineage
(parents, children, the grounding document), the highlighted source, a download link
and a copyable ``gym.make`` line. The play pages drive a
:class:`~spade_envs.web.play.PlaySessions` session; only POSTs that pass the
CSRF check reach it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..error import SpadeError
from ..registry.ids import parse_env_id
from .charts import grouped_bars
from .highlight import highlight_python
from .html import Raw, badge, env_href, esc, fmt_num, fmt_time, link, qs, table
from .http import HTTPError, Params, Request, Response
from .play import MAX_ACTION_CHARS, PlaySession

__all__ = ["env_page", "play_action", "play_form", "play_start", "play_view", "source_download"]

_DOCUMENT_CHARS = 20_000
_SESSION = r"[A-Za-z0-9_-]{20,40}"


def parse_slug(slug: str) -> str:
    """``Name-v3`` (from ``/env/Name-v3``) as the ID ``spade/Name-v3``; 400 when malformed."""
    ident = "spade/" + slug
    try:
        parse_env_id(ident)
    except SpadeError:
        raise HTTPError(
            400, f"{slug!r} is not an environment version; pages look like /env/NumberGuess-v1."
        ) from None
    return ident


def _json_block(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return f'<pre class="json">{esc(text)}</pre>'


def _stats_section(stats: list[Any]) -> str:
    if not stats:
        return (
            '<p class="muted">Never played. <code>spade-envs regret ID --model ...</code> '
            "measures it.</p>"
        )
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
    head = [
        "checkpoint",
        "plays with hint",
        "return with hint",
        "plays without",
        "return without",
        "win rate",
        "hint gain",
        "updated",
    ]
    return f'<div class="charts">{returns}{rates}</div>' + str(table(head, rows))


def _validation_section(reports: list[Any]) -> str:
    if not reports:
        return '<p class="muted">No validation report is stored for this version.</p>'
    parts = []
    for i, report in enumerate(reversed(reports)):  # newest first
        data = report.report
        verdict = "passed" if report.passed else "FAILED"
        summary = (
            f"budget {report.budget or '?'} · "
            f"validator {report.validator_version or '?'} "
            f"· {report.duration_s:.1f} s · {fmt_time(report.created_at)}"
        )
        rows = []
        for check in data.get("checks", []) if isinstance(data, dict) else []:
            if not isinstance(check, dict):
                continue
            mark = "skip" if check.get("skipped") else ("ok" if check.get("passed") else "FAIL")
            details = check.get("details") or {}
            rows.append(
                [
                    badge(mark, {"ok": "passed", "FAIL": "failed", "skip": "skipped"}[mark]),
                    str(check.get("name", "?")),
                    f"{float(check.get('seconds') or 0) * 1000:,.1f} ms",
                    str(check.get("reason", "")),
                    Raw(f"<details><summary>evidence</summary>{_json_block(details)}</details>")
                    if details
                    else "",
                ]
            )
        checks = table(
            ["", "check", "time", "reason", "details"], rows, empty="The report lists no checks."
        )
        opened = " open" if i == 0 else ""
        parts.append(
            f'<details class="report"{opened}><summary>'
            f"{badge(verdict, 'passed' if report.passed else 'failed')} "
            f"{esc(summary)}</summary>{checks}</details>"
        )
    return "".join(parts)


def _ref_link(ref: str, snap: Any) -> Raw:
    try:
        parse_env_id(ref)
        return link(env_href(ref), ref)
    except SpadeError:
        pass
    if ref in set(snap.names):
        return link(f"/envs?name={ref}", f"{ref} (every version)")
    return Raw(esc(ref) + ' <span class="muted">(not in this registry)</span>')


def _similar_section(app: Any, record: Any) -> str:
    """The nearest stored versions by embedding, and this version's novelty."""
    hits = app.vectors.neighbours(record.key, 6)
    if hits is None:
        return (
            f'<p class="muted">No {esc(app.vectors.model or "stored")} embedding of this version '
            "yet (<code>spade-envs search ...</code> embeds what is missing).</p>"
        )
    snap = app.catalog.snapshot()
    rows = []
    for key, score in hits:
        pos = snap.position(key)
        if pos is not None:
            ident = snap.env_id(pos)
            rows.append(
                [
                    link(env_href(ident), ident),
                    snap.value("skill", pos),
                    fmt_num(score, 3),
                    Raw(f'<span class="desc">{esc(snap.summaries[pos])}</span>'),
                ]
            )
    novelty = fmt_num(1.0 - hits[0][1], 3) if hits else "1.000"
    return (
        f'<p>Novelty <b id="novelty">{novelty}</b>: 1 − cosine similarity to the nearest other '
        f"version ({esc(app.vectors.model)} embeddings).</p>"
        + str(table(["nearest", "skill", "similarity", "description"], rows, empty="none"))
    )


def _lineage_section(app: Any, record: Any) -> str:
    snap = app.catalog.snapshot()
    parents = ", ".join(_ref_link(p, snap) for p in record.parents) or "none (written from scratch)"
    children = [
        link(env_href(snap.env_id(p)), snap.env_id(p))
        for p in snap.children_of(record.id, record.name)
    ]
    parts = [
        f"<p><b>Parents:</b> {parents}</p>",
        f"<p><b>Children:</b> {', '.join(children) or 'none yet'}</p>",
    ]
    made = [
        ("model", record.model),
        ("run", record.run_id),
        ("prompt sha256", record.prompt_sha256),
    ]
    made_text = " · ".join(f"{k} <code>{esc(v)}</code>" for k, v in made if v)
    if made_text:
        parts.append(f"<p><b>Made by:</b> {made_text}</p>")
    if record.document_id is not None:
        try:
            doc = app.registry.document(record.document_id)
        except SpadeError as exc:
            parts.append(f'<p class="note">Grounding document {record.document_id}: {esc(exc)}</p>')
        else:
            cut = len(doc.text) > _DOCUMENT_CHARS
            text = doc.text[:_DOCUMENT_CHARS]
            more = f" (first {_DOCUMENT_CHARS:,} of {len(doc.text):,} characters)" if cut else ""
            parts.append(
                f'<details class="doc"><summary><b>Grounding document</b> #{doc.id} '
                f"{esc(doc.source)} · {len(doc.text):,} characters{more}</summary>"
                f'<pre class="text">{esc(text)}</pre></details>'
            )
    else:
        parts.append(
            '<p class="muted">No grounding document (a seed, an import, or written '
            "without one).</p>"
        )
    return "".join(parts)


def _suite_section(record: Any) -> str:
    """Where an imported version comes from (``record.suite`` and ``extra["suite"]``):
    the suite linked to its homepage, package and version, task, level, licence, and why
    it is unproven or rejected. Every value is stored data, escaped like model text."""
    if not record.suite:
        return ""
    info = record.extra.get("suite")
    info = info if isinstance(info, dict) else {}

    def text(key: str) -> str:
        value = info.get(key)
        return "" if value is None else str(value)

    homepage = text("homepage")
    name = (
        link(homepage, record.suite)
        if re.match(r"https?://[^\s]+\Z", homepage, re.IGNORECASE)
        else esc(record.suite)
    )
    package = " ".join(v for v in (text("distribution"), text("version")) if v)
    shown = [f"suite <b>{name}</b>"]
    if package:
        shown.append(f"package <b>{esc(package)}</b>")
    for key in ("task", "level", "category", "family", "licence"):
        if text(key):
            shown.append(f"{key} <b>{esc(text(key))}</b>")
    shown.append(str(link("/envs" + qs({"suite": record.suite}), "every version of the suite")))
    parts = ['<p class="facts" id="suite">' + " · ".join(shown) + "</p>"]
    for key, label in (("unproven", "Unproven"), ("rejected", "Rejected")):
        if text(key):
            parts.append(f'<p class="note" id="suite-{key}">{label}: {esc(text(key))}</p>')
    return "".join(parts)


def env_page(app: Any, request: Request, slug: str) -> Response:
    """Everything stored about one version."""
    Params(request.query).done()
    ident = parse_slug(slug)
    registry = app.registry
    record = registry.get(ident)
    versions = registry.versions(record.name)
    stats = registry.play_stats(ident)
    reports = registry.validations(ident)
    base = env_href(ident)
    make_line = f"gym.make({ident!r})"
    version_links = " ".join(
        f"<b>v{v.rsplit('-v', 1)[1]}</b>"
        if v == ident
        else str(link(env_href(v), "v" + v.rsplit("-v", 1)[1]))
        for v in versions
    )
    facts = [
        ("kind", record.kind), ("skill", record.skill), ("origin", record.origin),
        ("max turns", str(record.max_turns)), ("created", fmt_time(record.created_at)),
    ]  # fmt: skip
    parts = [
        f'<h1 class="envid">{esc(ident)} {badge(record.status)}</h1>',
        '<p class="facts">' + " · ".join(f"{esc(k)} <b>{esc(v)}</b>" for k, v in facts) + "</p>",
        _suite_section(record),
        f'<p class="versions">Versions of {esc(record.name)}: {version_links}</p>',
        '<div class="actions">'
        f'<input class="copy" id="gymmake" readonly value="{esc(make_line)}" '
        'aria-label="gym.make line">'
        '<button type="button" data-copy="gymmake">Copy</button>'
        f'<a class="button" href="{esc(base)}/source.py" id="download">Download source</a>'
        f'<a class="button primary" href="{esc(base)}/play" id="play">Play</a></div>',
        "<section><h2>Description</h2>"
        f'<div class="text" id="description">{esc(record.description)}</div>',
    ]
    if record.hint:
        parts.append(
            "<details><summary>Model-written hint (privileged)</summary>"
            f'<div class="text hint">{esc(record.hint)}</div></details>'
        )
    parts.append("</section>")
    parts.append(f"<section><h2>Play statistics</h2>{_stats_section(stats)}</section>")
    parts.append(f"<section><h2>Validation</h2>{_validation_section(reports)}</section>")
    parts.append(f"<section><h2>Lineage</h2>{_lineage_section(app, record)}</section>")
    parts.append(f"<section><h2>Similar environments</h2>{_similar_section(app, record)}</section>")
    lines = record.source.count("\n") + 1
    parts.append(
        f'<section><h2>Source</h2><p class="muted">{lines:,} lines · sha256 '
        f"<code>{esc(record.sha256)}</code></p>{highlight_python(record.source)}</section>"
    )
    if record.extra:
        parts.append(f"<section><h2>Extra metadata</h2>{_json_block(record.extra)}</section>")
    return app.page(ident, "".join(parts), active="/envs")


def source_download(app: Any, request: Request, slug: str) -> Response:
    """The version's source as a ``.py`` attachment."""
    Params(request.query).done()
    ident = parse_slug(slug)
    record = app.registry.get(ident)
    return Response(
        record.source.encode("utf-8", "surrogatepass"),
        content_type="text/x-python; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{record.name}_v{record.version}.py"'
        },
    )


# ----- play -----------------------------------------------------------------------------------
def play_form(app: Any, request: Request, slug: str) -> Response:
    """Start a play session: seed and, for games, the opponent."""
    Params(request.query).done()
    ident = parse_slug(slug)
    record = app.registry.get(ident)
    csrf = request.csrf
    opponent = ""
    if record.kind == "game":
        opponent = (
            '<label>opponent<select name="opponent"><option value="best">reference player</option>'
            '<option value="random">random player</option></select></label>'
        )
    body = (
        f"<h1>Play {link(env_href(ident), ident)}</h1>"
        f'<div class="text">{esc(record.description)}</div>'
        '<form method="post" action="/play" class="start" id="start">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
        f'<input type="hidden" name="env" value="{esc(ident)}">'
        '<label>seed <input type="number" name="seed" min="0" max="2147483647" '
        'placeholder="random"></label>'
        f'{opponent}<button type="submit" class="primary">Start</button></form>'
        f'<p class="muted">The environment runs in a sandbox worker on the server (no network, '
        f"limited memory and time). A session belongs to this browser tab's page and closes "
        f"after {app.config.play_idle_s / 60:g} minutes without a move.</p>"
    )
    return app.page(f"Play {ident}", body, active="/envs")


def play_start(app: Any, request: Request) -> Response:
    """POST /play: open the session and go to its page."""
    owner = request.owner
    params = Params(request.form, ignore=("csrf",))
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
    session = app.sessions.start(ident, owner, seed, opponent)
    return Response.redirect(f"/play/{session.id}")


def _session_id(sid: str) -> str:
    if not re.fullmatch(_SESSION, sid):
        raise HTTPError(404, "There is no play session with that address.")
    return sid


def _transcript(session: PlaySession, csrf: str) -> str:
    items = []
    if session.dropped:
        items.append(f'<li class="muted">({session.dropped:,} earlier entries not shown)</li>')
    for turn in session.transcript:
        if turn.kind == "observation":
            reward = (
                "" if turn.reward is None else f'<span class="reward">reward {turn.reward:g}</span>'
            )
            items.append(f'<li class="obs">{reward}<pre class="text">{esc(turn.text)}</pre></li>')
        elif turn.kind == "action":
            items.append(f'<li class="act"><pre class="text">&gt; {esc(turn.text)}</pre></li>')
        elif turn.kind == "hint":
            items.append(
                f'<li class="hint"><b>Hint:</b> <pre class="text">{esc(turn.text)}</pre></li>'
            )
        elif turn.kind == "solution":
            rows = []
            for i, action in enumerate(turn.actions):
                button = ""
                if not session.done:
                    button = (
                        f'<form method="post" action="/play/{esc(session.id)}" class="inline">'
                        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
                        '<input type="hidden" name="op" value="step">'
                        f'<input type="hidden" name="action" value="{esc(action)}">'
                        f'<button type="submit" class="use" data-step="{i}">play it</button></form>'
                    )
                mark = " next" if i == session.turns else ""
                rows.append(f'<li class="sol{mark}"><code>{esc(action)}</code> {button}</li>')
            marked = "" if session.done else f"; step {session.turns + 1} is marked"
            listed = "".join(rows) or "<li>(no actions)</li>"
            items.append(
                '<li class="solution"><b>Solution</b> (from the start of this episode'
                f"{marked}):<ol>{listed}</ol></li>"
            )
        elif turn.kind == "error":
            items.append(f'<li class="error">{esc(turn.text)}</li>')
        elif turn.kind == "end":
            won = " won" if session.won else ""
            items.append(f'<li class="end{won}" id="outcome">{esc(turn.text)}</li>')
    return '<ol class="transcript" id="transcript">' + "".join(items) + "</ol>"


def _op_button(session: PlaySession, csrf: str, op: str, label: str, cls: str = "") -> str:
    return (
        f'<form method="post" action="/play/{esc(session.id)}" class="inline">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
        f'<input type="hidden" name="op" value="{op}">'
        f'<button type="submit" id="op-{op}" class="{cls}">{esc(label)}</button></form>'
    )


def play_view(app: Any, request: Request, sid: str) -> Response:
    """The session's transcript and what can be done next."""
    Params(request.query).done()
    session = app.sessions.get(_session_id(sid), request.owner)
    csrf = request.csrf
    state = "over" if session.done else "in play"
    outcome = (
        badge("won", "passed") if session.won else (badge("over", "failed") if session.done else "")
    )
    head = (
        f"<h1>Playing {link(env_href(session.env_id), session.env_id)} {outcome}</h1>"
        f'<p class="facts">seed <b>{session.seed}</b> · turn <b>{session.turns}</b> '
        f"of {session.max_turns} "
        f'· return <b id="return">{session.total:g}</b> · {state}'
        + (f" · opponent {esc(session.opponent)}" if session.opponent else "")
        + " · sandboxed</p>"
    )
    tools = ""
    if session.tools:
        tools = (
            "<details><summary>Tools this environment offers</summary>"
            f"{_json_block(session.tools)}</details>"
        )
    act = ""
    if not session.done:
        act = (
            f'<form method="post" action="/play/{esc(session.id)}" class="act" id="actform">'
            f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
            '<input type="hidden" name="op" value="step">'
            f'<textarea name="action" id="action" rows="2" maxlength="{MAX_ACTION_CHARS}" '
            'placeholder="Your action (Enter sends, Shift+Enter for a new line)" autofocus>'
            "</textarea>"
            '<button type="submit" class="primary" id="send">Act</button></form>'
        )
    buttons = (
        '<div class="actions">'
        + _op_button(session, csrf, "hint", "Hint")
        + _op_button(session, csrf, "solution", "Solution")
        + _op_button(session, csrf, "reset", "Restart")
        + _op_button(session, csrf, "close", "End session", "danger")
        + "</div>"
    )
    body = head + tools + _transcript(session, csrf) + act + buttons + '<a id="end"></a>'
    return app.page(f"Playing {session.env_id}", body, active="/envs")


def play_action(app: Any, request: Request, sid: str) -> Response:
    """POST /play/<sid>: step, hint, solution, reset or close."""
    session = app.sessions.get(_session_id(sid), request.owner)
    params = Params(request.form, ignore=("csrf",))
    op = params.choice("op", ("step", "hint", "solution", "reset", "close"))
    if op is None:
        raise HTTPError(400, "op is missing: one of step, hint, solution, reset, close.")
    action = params.raw("action", max_chars=MAX_ACTION_CHARS) if op == "step" else ""
    params.done()
    sessions = app.sessions
    if op == "close":
        sessions.close(session.id, request.owner)
        return Response.redirect(env_href(session.env_id))
    if op == "step":
        sessions.step(session, action)
    elif op == "hint":
        sessions.hint(session)
    elif op == "solution":
        sessions.solution(session)
    else:
        sessions.reset(session)
    return Response.redirect(f"/play/{session.id}#end")
