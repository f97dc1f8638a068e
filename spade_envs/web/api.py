"""The corpus browser's JSON API under ``/api/v1``, described at ``/openapi.json``.

The same data as the HTML pages, for scripts: the list with the list page's filters and
sorts (:func:`~spade_envs.web.search.parse_list_query`, so a parameter means the same
thing in both and an unknown one is a 400 naming the close matches), text and semantic
search, everything stored about one version, export in the formats of
``spade-envs export``, and play sessions that run in the sandbox
(:class:`~spade_envs.web.play.PlaySessions`, owner ``"api"``).

Every endpoint but the play calls is a plain ``def`` (FastAPI runs it in its thread
pool: registry calls block). The play calls are ``async``: they hand the environment
call to :class:`~spade_envs.web.play_runner.PlayRunner` (its own threads, a deadline,
caps per client: 429, 504 and 410 below), so a stalled environment never holds a thread
the other routes need. Bad input raises :class:`~spade_envs.web.params.HTTPError`
(400 with a message saying what to change); unknown versions raise the registry's
:class:`~spade_envs.error.UnknownEnvironmentError`; the application's exception handlers
turn both into ``{"error": {"status": ..., "message": ...}}``. Host, token, Origin and
Content-Type checks are the application's middleware; POST bodies are also checked
here to be JSON objects.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import PlainTextResponse, Response
from pydantic import BaseModel, ValidationError

from ..core.dialect import detect_dialect
from ..error import SpadeError
from ..registry.ids import parse_env_id
from .api_models import (
    EMPTY_BODY,
    EXPORT_PARAMS,
    FILTER_PARAMS,
    ORDER_PARAMS,
    Closed,
    Document,
    EnvDetail,
    EnvItem,
    EnvList,
    ErrorOut,
    HintOut,
    Lineage,
    ParentRef,
    PlayStart,
    PlayState,
    PlayStatsOut,
    SearchOut,
    Similar,
    SimilarItem,
    SolutionOut,
    Stats,
    StepIn,
    StepOut,
    api_url,
    body_doc,
    enum_schema,
    env_item,
    iso_time,
    number_or_none,
    play_state,
    quarantine_out,
    query_param,
    text_schema,
    validation_out,
)
from .catalog import FACETS, Snapshot
from .middleware import read_body
from .pages import export_page
from .params import HTTPError, Params, query_of
from .params import parse_slug as slug_to_id
from .play import PlaySession
from .play_runner import play_client
from .search import MODES, ListQuery, parse_list_query

if TYPE_CHECKING:
    from .app import App

__all__ = ["OWNER", "router", "spade"]

#: The owner of every play session started through the API.
OWNER = "api"
#: Largest JSON body read (an action is at most 4,000 characters).
#: Most results of GET /api/v1/search.
MAX_K = 200
_DOCUMENT_CHARS = 20_000
_SIMILAR = 6
_SESSION = re.compile(r"[A-Za-z0-9_-]{20,40}")
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {
        "model": ErrorOut,
        "description": "A parameter or the body is wrong (the message says how).",
    },
    404: {"model": ErrorOut, "description": "No such version or play session."},
}
_PLAY_ERRORS: dict[int | str, dict[str, Any]] = {
    410: {"model": ErrorOut, "description": "The session was ended: its environment stalled."},
    429: {"model": ErrorOut, "description": "Too many environment calls running; retry."},
    504: {
        "model": ErrorOut,
        "description": "The environment did not answer in time; the session was closed.",
    },
}

router = APIRouter(prefix="/api/v1", tags=["api"], responses=_ERRORS)


def spade(request: Request) -> App:
    """The server's :class:`~spade_envs.web.app.App` (``request.app.state.spade``)."""
    return request.app.state.spade


# Typed as Any at run time: app.py imports this module, so App cannot be imported here.
Spade = Annotated[Any, Depends(spade)]


# ----- helpers ------------------------------------------------------------------------------
def parse_slug(slug: str) -> str:
    """``Name-v3`` as the ID ``spade/Name-v3``; 400 when it is not one."""
    return slug_to_id(slug, "/api/v1/envs/NumberGuess-v1")


def _items(snap: Snapshot, result: Any) -> list[EnvItem]:
    scores = result.scores
    return [
        env_item(snap, int(pos), result.novelty[i], None if scores is None else scores[i])
        for i, pos in enumerate(result.positions)
    ]


def _unavailable_reason(session: PlaySession) -> str:
    for turn in reversed(session.transcript):
        if turn.kind == "error":
            return turn.text
    return ""


# ----- the corpus ---------------------------------------------------------------------------
@router.get(
    "/envs",
    summary="List environment versions",
    description="Filter, search, sort and page the corpus with the parameters of the HTML "
    "list page (/envs). Unknown or malformed parameters are a 400 naming the close matches.",
    openapi_extra={"parameters": FILTER_PARAMS + ORDER_PARAMS},
)
def list_envs(request: Request, app: Spade) -> EnvList:
    """One page of the list."""
    snap = app.catalog.snapshot()
    params = Params(query_of(request))
    query = parse_list_query(params, snap)
    params.done()
    result = app.searcher.run(snap, query)
    return EnvList(
        total=result.total,
        page=query.page,
        pages=result.pages,
        size=query.size,
        items=_items(snap, result),
        facets=result.facets,
        notes=list(result.notes),
    )


@router.get(
    "/search",
    summary="Search by words or by meaning",
    description="The best k matches of q, best first, with their scores; a shortcut for "
    "GET /api/v1/envs?q=...&sort=relevance.",
    openapi_extra={
        "parameters": [
            query_param("q", text_schema(), "What to look for (required)."),
            query_param("mode", enum_schema(MODES, "text"), "text or semantic."),
            query_param(
                "k",
                {"type": "integer", "minimum": 1, "maximum": MAX_K, "default": 10},
                "How many results.",
            ),
        ]
    },
)
def search(request: Request, app: Spade) -> SearchOut:
    """The best ``k`` matches of ``q``."""
    snap = app.catalog.snapshot()
    params = Params(query_of(request))
    q = params.text("q", max_chars=200)
    mode = params.choice("mode", MODES, "text") or "text"
    k = params.integer("k", low=1, high=MAX_K, default=10) or 10
    params.done()
    if not q:
        raise HTTPError(400, "q is missing: what should be searched for? e.g. ?q=maze")
    query = ListQuery(q=q, mode=mode, sort="relevance", descending=True, page=1, size=k)
    result = app.searcher.run(snap, query)
    return SearchOut(
        q=q, mode=mode, total=result.total, items=_items(snap, result), notes=list(result.notes)
    )


@router.get(
    "/stats",
    summary="Corpus overview",
    description="How many versions, names, played and embedded versions, and counts by facet.",
)
def stats(request: Request, app: Spade) -> Stats:
    """Counts over the whole corpus."""
    Params(query_of(request)).done()
    snap = app.catalog.snapshot()
    app.vectors.refresh()
    return Stats(
        versions=len(snap),
        names=app.searcher.distinct_names(snap),
        played=int((snap.checkpoints > 0).sum()),
        embedded=len(app.vectors),
        embedding_model=app.vectors.model or "",
        facets={f: {v: c for v, c in snap.facet_counts(f).items() if v} for f in FACETS},
        play_sessions=len(app.sessions),
    )


def _lineage(app: Any, record: Any, snap: Snapshot) -> Lineage:
    names = snap.name_set
    parents = []
    for ref in record.parents:
        try:
            name, _ = parse_env_id(ref)
        except SpadeError:  # a name (every version of it) or free text
            parents.append(ParentRef(ref=ref, known=ref in names, url=None))
        else:
            known = ref in app.registry.versions(name)
            parents.append(ParentRef(ref=ref, known=known, url=api_url(ref) if known else None))
    document, problem = None, None
    if record.document_id is not None:
        try:
            doc = app.registry.document(record.document_id)
        except SpadeError as exc:
            problem = str(exc)
        else:
            document = Document(
                id=doc.id, source=doc.source, chars=len(doc.text), text=doc.text[:_DOCUMENT_CHARS]
            )
    return Lineage(
        parents=parents,
        children=[snap.env_id(p) for p in snap.children_of(record.id, record.name)],
        model=record.model or "",
        run_id=record.run_id,
        prompt_sha256=record.prompt_sha256 or "",
        document=document,
        document_error=problem,
    )


def _similar(app: Any, record: Any, snap: Snapshot) -> Similar:
    model = app.vectors.model or ""
    hits = app.vectors.neighbours(record.key, _SIMILAR)
    if hits is None:
        return Similar(model=model, novelty=None, items=None)
    items = []
    for key, score in hits:
        pos = snap.position(key)
        if pos is not None:
            ident = snap.env_id(pos)
            items.append(
                SimilarItem(
                    id=ident,
                    skill=snap.value("skill", pos),
                    similarity=float(score),
                    description=snap.summaries[pos],
                    url=api_url(ident),
                )
            )
    return Similar(model=model, novelty=app.vectors.novelty_of(record.key), items=items)


def _unproven(record: Any) -> str:
    """Why an unvalidated version is unproven (stored at import), or ""."""
    if record.status != "unvalidated":
        return ""
    # extra["suite"] is the suite importer's only on versions it stored (record.suite).
    suite = record.extra.get("suite") if record.suite else None
    for found in (
        record.extra.get("unproven"),
        suite.get("unproven") if isinstance(suite, dict) else None,
    ):
        if isinstance(found, str) and found:
            return found
    return ""


@router.get(
    "/envs/{slug}",
    summary="One environment version",
    description="Metadata, source, play statistics per checkpoint, validation reports, "
    "lineage (parents, children, grounding document) and the nearest versions by embedding. "
    "slug is Name-vN, as in the HTML page /env/Name-vN; the ID itself works too "
    "(/api/v1/envs/spade/Name-vN).",
)
# The ID as printed everywhere else (spade/Name-vN) has a slash: a route of its own, the
# same answer, so copying an ID from the CLI or gym.make into the address just works.
@router.get("/envs/spade/{slug}", include_in_schema=False)
def get_env(slug: str, request: Request, app: Spade) -> EnvDetail:
    """Everything stored about one version (read from the registry, never stale)."""
    Params(query_of(request)).done()
    ident = parse_slug(slug)
    registry = app.registry
    record = registry.get(ident)
    snap = app.catalog.snapshot()
    return EnvDetail(
        id=record.id,
        name=record.name,
        version=record.version,
        sha256=record.sha256,
        class_name=record.class_name,
        kind=record.kind,
        dialect=detect_dialect(record.source).value,
        skill=record.skill,
        description=record.description,
        max_turns=record.max_turns,
        origin=record.origin,
        status=record.status,
        unproven=_unproven(record),
        quarantine=quarantine_out(
            registry.quarantine_evidence(ident) if record.status == "quarantined" else None
        ),
        suite=record.suite or "",
        hint=record.hint or "",
        created=iso_time(record.created_at),
        extra=json.loads(json.dumps(record.extra, default=str)),
        versions=registry.versions(record.name),
        gym_make=f"import spade_envs, gymnasium as gym; env = gym.make({record.id!r})",
        source=record.source,
        source_url=api_url(record.id) + "/source",
        stats=[
            PlayStatsOut(
                checkpoint=s.checkpoint,
                plays_with_hint=s.plays_with_hint,
                plays_without_hint=s.plays_without_hint,
                mean_return_with_hint=number_or_none(s.mean_return_with_hint),
                mean_return_without_hint=number_or_none(s.mean_return_without_hint),
                win_rate=number_or_none(s.win_rate),
                hint_gain=number_or_none(s.hint_gain),
                updated=iso_time(s.updated_at),
            )
            for s in registry.play_stats(ident)
        ],
        validations=[validation_out(r) for r in registry.validations(ident)],
        lineage=_lineage(app, record, snap),
        similar=_similar(app, record, snap),
    )


@router.get(
    "/envs/{slug}/source",
    summary="One version's source",
    response_class=PlainTextResponse,
    responses={200: {"content": {"text/x-python": {}}, "description": "The Python source."}},
)
@router.get("/envs/spade/{slug}/source", include_in_schema=False, response_class=PlainTextResponse)
def get_source(slug: str, request: Request, app: Spade) -> Response:
    """The source as ``text/x-python`` (shown inline, not as a download)."""
    Params(query_of(request)).done()
    record = app.registry.get(parse_slug(slug))
    return Response(
        record.source.encode("utf-8", "surrogatepass"),
        media_type="text/x-python; charset=utf-8",
    )


@router.get(
    "/export",
    summary="Export the filtered versions",
    description="Every version the filters select (all pages), oldest first, in a format of "
    "`spade-envs export`: jsonl (one record a line, streamed), parquet, or package (a zip of "
    "a pip-installable package). Re-import with `spade-envs import`.",
    openapi_extra={"parameters": EXPORT_PARAMS},
    response_class=Response,
    responses={
        200: {
            "description": "The file, as an attachment.",
            "content": {
                "application/x-ndjson": {},
                "application/vnd.apache.parquet": {},
                "application/zip": {},
            },
        }
    },
)
def export(request: Request, app: Spade) -> Any:
    """A download of the selection (what the list page's Export button sends)."""
    return export_page(app, request)


# ----- play ---------------------------------------------------------------------------------
async def _json_object(request: Request) -> dict[str, Any]:
    """The POST body as a JSON object (an empty body counts as ``{}``); 400 else.

    The guard (:mod:`~spade_envs.web.middleware`) already refused a body that is not
    JSON, comes from another origin or is over ``MAX_BODY``, and hands the body on.
    """
    body = await read_body(request)
    if not body.strip():
        return {}
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HTTPError(400, f"The body is not valid JSON ({exc}); send a JSON object.") from None
    if not isinstance(data, dict):
        raise HTTPError(400, f"The body must be a JSON object, not {type(data).__name__}.")
    return data


async def _no_fields(request: Request) -> None:
    """A POST that takes nothing: an empty body or ``{}``."""
    data = await _json_object(request)
    if data:
        raise HTTPError(400, f"This call takes no fields; got {', '.join(sorted(data))[:200]}.")


JSONBody = Annotated[dict[str, Any], Depends(_json_object)]
NoFields = Annotated[None, Depends(_no_fields)]


def _checked(model: type[BaseModel], data: dict[str, Any], example: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        raise HTTPError(400, f"The body is wrong: {problems}. Send e.g. {example}.") from None


def _session(app: Any, sid: str) -> PlaySession:
    if not _SESSION.fullmatch(sid):
        raise HTTPError(404, "There is no play session with that ID; start one: POST /api/v1/play.")
    return app.sessions.get(sid, OWNER)


@router.post(
    "/play",
    summary="Start a play session",
    description="Opens the version in a sandbox worker and resets it; answers the session "
    "and its first observation. Sessions close after the server's idle time without a request.",
    status_code=201,
    openapi_extra=body_doc(PlayStart),
    responses={
        503: {"model": ErrorOut, "description": "Too many sessions are open."},
        **_PLAY_ERRORS,
    },
)
async def play_start(request: Request, data: JSONBody, app: Spade) -> PlayState:
    """Start a session."""
    start = _checked(PlayStart, data, '{"env": "spade/NumberGuess-v1", "seed": 0}')
    try:
        parse_env_id(start.env)
    except SpadeError as exc:
        raise HTTPError(400, f"env: {exc}") from None
    session = await app.play.start(
        play_client(request), start.env, OWNER, start.seed, start.opponent
    )
    return play_state(session)


@router.get("/play/{sid}", summary="A play session's state and transcript")
def play_get(sid: str, request: Request, app: Spade) -> PlayState:
    """Where the episode stands."""
    Params(query_of(request)).done()
    return play_state(_session(app, sid))


@router.post(
    "/play/{sid}/step",
    summary="Play one action",
    description="Sends the action to the environment's step(); refused (400) once the "
    "episode is over (POST .../reset starts it again).",
    openapi_extra=body_doc(StepIn),
    responses=_PLAY_ERRORS,
)
async def play_step(sid: str, request: Request, data: JSONBody, app: Spade) -> StepOut:
    """One step."""
    session = _session(app, sid)
    step = _checked(StepIn, data, '{"action": "\\\\boxed{42}"}')
    if "\x00" in step.action:
        raise HTTPError(400, "action contains a NUL character; remove it.")
    before = session.dropped + len(session.transcript)
    await app.play.step(play_client(request), session, step.action)
    new = session.transcript[max(0, before - session.dropped) :]
    observation = next((t for t in new if t.kind == "observation"), None)
    error = next((t.text for t in new if t.kind == "error"), None)
    return StepOut(
        observation=observation.text if observation else "",
        reward=(observation.reward or 0.0) if observation else 0.0,
        terminated=session.terminated,
        truncated=session.truncated,
        done=session.done,
        won=session.won,
        total_return=session.total,
        turn=session.turns,
        error=error,
    )


@router.post(
    "/play/{sid}/hint",
    summary="Ask for the hint",
    description="The environment's hint (else the registry's model-written one), added to "
    "the transcript.",
    openapi_extra=EMPTY_BODY,
    responses=_PLAY_ERRORS,
)
async def play_hint(sid: str, request: Request, _: NoFields, app: Spade) -> HintOut:
    """The hint."""
    session = _session(app, sid)
    await app.play.hint(play_client(request), session)
    return HintOut(hint=session.transcript[-1].text)


@router.post(
    "/play/{sid}/solution",
    summary="Ask for the reference solution",
    description="The actions that win from the start of this episode (seed); 409 when the "
    "environment offers none.",
    openapi_extra=EMPTY_BODY,
    responses={
        409: {"model": ErrorOut, "description": "No solution is available."},
        **_PLAY_ERRORS,
    },
)
async def play_solution(sid: str, request: Request, _: NoFields, app: Spade) -> SolutionOut:
    """The solution."""
    session = _session(app, sid)
    await app.play.solution(play_client(request), session)
    if session.solution is None:
        raise HTTPError(409, _unavailable_reason(session) or "No solution is available.")
    return SolutionOut(actions=list(session.solution), next=session.turns)


@router.post(
    "/play/{sid}/reset",
    summary="Restart the episode",
    description="The same seed again (a fresh sandbox worker when the old one failed).",
    openapi_extra=EMPTY_BODY,
    responses=_PLAY_ERRORS,
)
async def play_reset(sid: str, request: Request, _: NoFields, app: Spade) -> PlayState:
    """Restart."""
    session = _session(app, sid)
    await app.play.reset(play_client(request), session)
    return play_state(session)


def _close(app: Any, sid: str) -> Closed:
    session = _session(app, sid)
    app.sessions.close(session.id, OWNER, wait=False)  # its worker stops in the background
    return Closed(id=session.id, env_id=session.env_id)


@router.post("/play/{sid}/close", summary="End a play session", openapi_extra=EMPTY_BODY)
def play_close(sid: str, _: NoFields, app: Spade) -> Closed:
    """Close the session and its sandbox worker."""
    return _close(app, sid)


@router.delete("/play/{sid}", summary="End a play session (as DELETE)")
def play_delete(sid: str, app: Spade) -> Closed:
    """Close the session and its sandbox worker."""
    return _close(app, sid)
