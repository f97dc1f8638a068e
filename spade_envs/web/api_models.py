"""The JSON shapes of the corpus browser's API (``/api/v1``), as pydantic models.

They are what ``/openapi.json`` describes. Every text an environment or a model wrote
(descriptions, observations, hints, source) goes out as a plain JSON string, never as
HTML. Numbers that are unknown (a version never played, no embedding yet) are ``null``.
The models live at module level so that FastAPI can resolve them although this package
uses postponed annotations.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .catalog import FACETS
from .export import EXPORT_FORMATS
from .play import MAX_ACTION_CHARS
from .search import MODES, PAGE_SIZES, SORTS

if TYPE_CHECKING:
    from .catalog import Snapshot
    from .play import PlaySession

__all__ = [
    "EMPTY_BODY",
    "EXPORT_PARAMS",
    "FILTER_PARAMS",
    "ORDER_PARAMS",
    "Check",
    "Closed",
    "Document",
    "EnvDetail",
    "EnvItem",
    "EnvList",
    "ErrorBody",
    "ErrorOut",
    "HintOut",
    "Lineage",
    "ParentRef",
    "PlayStart",
    "PlayState",
    "PlayStatsOut",
    "QuarantineOut",
    "SearchOut",
    "Similar",
    "SimilarItem",
    "SolutionOut",
    "Stats",
    "StepIn",
    "StepOut",
    "TurnOut",
    "Validation",
    "api_url",
    "body_doc",
    "enum_schema",
    "env_item",
    "iso_time",
    "number_or_none",
    "play_state",
    "query_param",
    "quarantine_out",
    "text_schema",
    "validation_out",
]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(_Out):
    """What went wrong."""

    status: int = Field(description="The HTTP status, repeated.")
    message: str = Field(description="What was wrong and what to do about it.")


class ErrorOut(_Out):
    """The body of every error answer under ``/api/``."""

    error: ErrorBody


# ----- lists ----------------------------------------------------------------------------------
class EnvItem(_Out):
    """One version in a list (the light columns of the catalog)."""

    id: str = Field(
        description="Gymnasium ID, e.g. spade/NumberGuess-v1.", examples=["spade/Nim-v1"]
    )
    name: str
    version: int
    kind: str = Field(description="text, tool or game.")
    skill: str
    status: str = Field(
        description="candidate, validated, rejected, retired, unvalidated or quarantined (a "
        "replay audit diverged: see quarantine in GET /api/v1/envs/{slug})."
    )
    origin: str = Field(description="seed, designer or imported.")
    suite: str = Field(description="The external suite of an imported version, else empty.")
    hint_gain: float | None = Field(
        description="Highest mean return with the hint minus without it, over checkpoints "
        "(null: never played)."
    )
    win_rate: float | None = Field(
        description="Win rate of the latest checkpoint (null: never played)."
    )
    novelty: float | None = Field(
        description="1 - cosine similarity to the nearest other version (null: not embedded yet)."
    )
    created: str | None = Field(description="When it was registered (ISO 8601, UTC).")
    description: str = Field(
        description="The description on one line, cut at 240 characters (the whole text is in "
        "GET /api/v1/envs/{slug})."
    )
    score: float | None = Field(
        default=None,
        description="Relevance when searching: words matched (a word in the name counts "
        "twice) for text search, cosine similarity for semantic search; null otherwise.",
    )
    url: str = Field(description="This version in the API: /api/v1/envs/<Name>-v<N>.")


class EnvList(_Out):
    """One page of the filtered, sorted list."""

    total: int = Field(description="How many versions match (semantic: of the nearest 1,000).")
    page: int
    pages: int
    size: int
    items: list[EnvItem]
    facets: dict[str, dict[str, int]] = Field(
        description="For each facet (skill, kind, origin, status, suite): counts of its values "
        "under every other filter."
    )
    notes: list[str] = Field(description="Things to know about these results.")


class SearchOut(_Out):
    """The best matches of a search, best first."""

    q: str
    mode: Literal["text", "semantic"]
    total: int = Field(description="How many versions match in all.")
    items: list[EnvItem]
    notes: list[str]


class Stats(_Out):
    """Counts over the whole corpus."""

    versions: int
    names: int = Field(description="Distinct environment names.")
    played: int = Field(description="Versions with play statistics.")
    embedded: int = Field(description="Versions with a stored embedding of `embedding_model`.")
    embedding_model: str
    facets: dict[str, dict[str, int]] = Field(
        description="For each facet, how many versions have each value."
    )
    play_sessions: int = Field(description="Play sessions open on this server.")


# ----- one version ----------------------------------------------------------------------------
class PlayStatsOut(_Out):
    """How one policy checkpoint does on this version."""

    checkpoint: str
    plays_with_hint: int
    plays_without_hint: int
    mean_return_with_hint: float | None
    mean_return_without_hint: float | None
    win_rate: float | None
    hint_gain: float | None = Field(description="Mean return with the hint minus without it.")
    updated: str | None


class Check(_Out):
    """One check of a validation report."""

    name: str
    passed: bool
    skipped: bool
    seconds: float
    reason: str
    details: dict[str, Any]


class Validation(_Out):
    """One stored validation report."""

    passed: bool
    budget: str
    validator_version: str
    duration_s: float
    created: str | None
    checks: list[Check]
    report: dict[str, Any] = Field(description="The whole stored report.")


class ParentRef(_Out):
    """A parent as stored: a version ID or a name, and whether this registry knows it."""

    ref: str
    known: bool
    url: str | None = Field(description="The parent in the API when it is a known version.")


class Document(_Out):
    """The grounding document the version was written from."""

    id: int
    source: str
    chars: int
    text: str = Field(description="The text, cut at 20,000 characters (see `chars`).")


class Lineage(_Out):
    """Where a version comes from and what was derived from it."""

    parents: list[ParentRef]
    children: list[str] = Field(description="IDs of versions that name this one as a parent.")
    model: str
    run_id: str | None
    prompt_sha256: str
    document: Document | None
    document_error: str | None = None


class SimilarItem(_Out):
    """A near neighbour by embedding."""

    id: str
    skill: str
    similarity: float = Field(description="Cosine similarity of the stored embeddings.")
    description: str
    url: str


class Similar(_Out):
    """The nearest stored versions; ``items`` is null when this version has no embedding."""

    model: str
    novelty: float | None = Field(
        description="1 - cosine similarity to the nearest other version that is not rejected "
        "(the list's novelty; null until computed)."
    )
    items: list[SimilarItem] | None


#: The most characters of each evidence text the API and the page show (the registry
#: keeps more; an environment chose these texts).
EVIDENCE_SHOWN_CHARS = 1_000


class QuarantineOut(_Out):
    """Why a version is quarantined: where a replay of one of its plays diverged."""

    seed: int = Field(description="The episode seed of the play that was replayed.")
    step: int = Field(description="Where the runs parted: 0 is the reset, k the k-th step.")
    field: str = Field(
        description="What differed: reward, terminated, truncated, observation or error."
    )
    played: str = Field(description="What the play saw (first 1,000 characters).")
    replayed: str = Field(
        description="What the replay in a fresh worker saw (first 1,000 characters)."
    )
    detail: str = Field(description="Anything else recorded (first 1,000 characters).")
    at: str = Field(description="When it was recorded (ISO 8601, UTC), or empty.")


def quarantine_out(evidence: Any) -> QuarantineOut | None:
    """A :class:`~spade_envs.registry.QuarantineEvidence` as JSON (texts shortened)."""
    if evidence is None:
        return None

    def cut(text: str) -> str:
        return text if len(text) <= EVIDENCE_SHOWN_CHARS else text[: EVIDENCE_SHOWN_CHARS - 1] + "…"

    texts = {k: cut(getattr(evidence, k)) for k in ("played", "replayed", "detail")}
    return QuarantineOut(
        seed=evidence.seed, step=evidence.step, field=evidence.field, at=evidence.at[:64], **texts
    )


class EnvDetail(_Out):
    """Everything stored about one version."""

    id: str
    name: str
    version: int
    sha256: str
    class_name: str
    kind: str
    dialect: str = Field(
        description="The dialect the source is read as: native (spade_envs protocol) or "
        "spade (SPADE's code: predefined names, the first *Env class, SPADE's rewards and wins)."
    )
    skill: str
    description: str
    max_turns: int
    origin: str
    status: str
    unproven: str = Field(
        description="Status unvalidated: why no win could be shown possible (a SPADE game "
        "without solution()); empty otherwise."
    )
    quarantine: QuarantineOut | None = Field(
        description="Status quarantined: the evidence of the replay that diverged (null "
        "otherwise, or when none readable is stored)."
    )
    suite: str
    hint: str = Field(description="The model-written hint (privileged information), or empty.")
    created: str | None
    extra: dict[str, Any]
    versions: list[str] = Field(description="Every version of this name, oldest first.")
    gym_make: str = Field(description="A line of Python that makes this environment.")
    source: str
    source_url: str = Field(description="The source alone, as text/x-python.")
    stats: list[PlayStatsOut] = Field(description="Per checkpoint, most recently updated first.")
    validations: list[Validation] = Field(description="Stored reports, oldest first.")
    lineage: Lineage
    similar: Similar


# ----- play -----------------------------------------------------------------------------------
class PlayStart(BaseModel):
    """What to play."""

    model_config = ConfigDict(extra="forbid")

    env: str = Field(description="The version to play, e.g. spade/NumberGuess-v1.", max_length=80)
    seed: int | None = Field(
        default=None, ge=0, le=2**31 - 1, description="Episode seed (null: a random one)."
    )
    opponent: Literal["best", "random"] = Field(
        default="best", description="Games only: the reference player or a random one."
    )


class StepIn(BaseModel):
    """One action."""

    model_config = ConfigDict(extra="forbid")

    action: str = Field(
        description="The text sent to the environment's step().", max_length=MAX_ACTION_CHARS
    )


class TurnOut(_Out):
    """One transcript entry."""

    kind: Literal["observation", "action", "hint", "solution", "error", "end"]
    text: str
    reward: float | None = None
    actions: list[str] = Field(default_factory=list, description="A solution's actions.")


class PlayState(_Out):
    """A play session: where the episode stands and its transcript."""

    id: str = Field(description="The session ID (unguessable; keep it to yourself).")
    env_id: str
    kind: str
    seed: int
    opponent: str = Field(description="Games: best or random; empty otherwise.")
    turn: int = Field(description="Steps played.")
    max_turns: int
    total_return: float
    done: bool
    won: bool
    failed: bool = Field(description="The environment raised or its worker died.")
    observation: str = Field(description="The latest observation.")
    tools: list[dict[str, Any]] = Field(description="Tool schemas of a tool environment.")
    dropped: int = Field(description="Early transcript entries no longer kept.")
    transcript: list[TurnOut]


class StepOut(_Out):
    """What one step did."""

    observation: str
    reward: float
    terminated: bool
    truncated: bool = Field(description="The episode ran out of turns.")
    done: bool
    won: bool
    total_return: float
    turn: int
    error: str | None = Field(description="The environment's failure, if it failed.")


class HintOut(_Out):
    """The hint now added to the transcript."""

    hint: str


class SolutionOut(_Out):
    """The reference solution: actions that win from the start of this episode."""

    actions: list[str]
    next: int = Field(description="Index of the action to play next (steps already played).")


class Closed(_Out):
    """A closed session."""

    id: str
    env_id: str
    closed: bool = True


# ----- from records to shapes ----------------------------------------------------------------
def number_or_none(value: Any) -> float | None:
    """A float for JSON: NaN and infinities (unknown) become None."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def iso_time(value: Any) -> str | None:
    """ISO 8601 in UTC from epoch seconds or a datetime (naive means UTC)."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        stamp = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        return stamp.astimezone(dt.timezone.utc).isoformat()
    number = number_or_none(value)
    if number is None:
        return None
    return dt.datetime.fromtimestamp(number, tz=dt.timezone.utc).isoformat()


def api_url(ident: str) -> str:
    """The API address of the version ``ident`` (``spade/Name-vN``)."""
    return "/api/v1/envs/" + ident.split("/", 1)[1]


def env_item(snap: Snapshot, pos: int, novelty: Any, score: Any) -> EnvItem:
    """The list entry of the version at catalog position ``pos``."""
    ident = snap.env_id(pos)
    return EnvItem(
        id=ident,
        name=snap.names[pos],
        version=int(snap.versions[pos]),
        kind=snap.value("kind", pos),
        skill=snap.value("skill", pos),
        status=snap.value("status", pos),
        origin=snap.value("origin", pos),
        suite=snap.value("suite", pos),
        hint_gain=number_or_none(snap.hint_gain[pos]),
        win_rate=number_or_none(snap.win_rate[pos]),
        novelty=number_or_none(novelty),
        created=iso_time(snap.created[pos]),
        description=snap.summaries[pos],
        score=number_or_none(score),
        url=api_url(ident),
    )


def validation_out(record: Any) -> Validation:
    """A stored :class:`~spade_envs.registry.ValidationRecord` as JSON."""
    data = record.report if isinstance(record.report, dict) else {}
    checks = []
    for check in data.get("checks", []):
        if not isinstance(check, dict):
            continue
        details = check.get("details")
        checks.append(
            Check(
                name=str(check.get("name", "?")),
                passed=bool(check.get("passed")),
                skipped=bool(check.get("skipped")),
                seconds=number_or_none(check.get("seconds")) or 0.0,
                reason=str(check.get("reason") or ""),
                details=details if isinstance(details, dict) else {},
            )
        )
    return Validation(
        passed=record.passed,
        budget=record.budget or "",
        validator_version=record.validator_version or "",
        duration_s=number_or_none(record.duration_s) or 0.0,
        created=iso_time(record.created_at),
        checks=checks,
        report=json.loads(json.dumps(data, default=str)),
    )


def play_state(session: PlaySession) -> PlayState:
    """Where a play session stands, with its transcript."""
    observation = next(
        (t.text for t in reversed(session.transcript) if t.kind == "observation"), ""
    )
    return PlayState(
        id=session.id,
        env_id=session.env_id,
        kind=session.kind,
        seed=session.seed,
        opponent=session.opponent,
        turn=session.turns,
        max_turns=session.max_turns,
        total_return=session.total,
        done=session.done,
        won=session.won,
        failed=session.failed,
        observation=observation,
        tools=list(session.tools),
        dropped=session.dropped,
        transcript=[
            TurnOut(kind=t.kind, text=t.text, reward=t.reward, actions=list(t.actions))
            for t in session.transcript
        ],
    )


# ----- OpenAPI text for what is read by hand (Params, a JSON body), not by FastAPI ---------
def query_param(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    """An optional OpenAPI query parameter."""
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": schema,
        "description": description,
    }


def text_schema(max_length: int = 200) -> dict[str, Any]:
    """A string of at most ``max_length`` characters."""
    return {"type": "string", "maxLength": max_length}


def enum_schema(values: Any, default: Any = None) -> dict[str, Any]:
    """One of ``values``."""
    schema: dict[str, Any] = {"type": "string", "enum": list(values)}
    if default is not None:
        schema["default"] = default
    return schema


#: The list's filters (the parameters of the HTML list page that choose versions).
FILTER_PARAMS = [
    query_param("q", text_schema(), 'Search words or "a quoted phrase" (every one must match).'),
    query_param(
        "mode",
        enum_schema(MODES, "text"),
        "text: words in the ID, name, skill and description; semantic: nearest by embedding.",
    ),
    *(
        query_param(facet, text_schema(), f"Only this {facet} (GET /api/v1/stats lists them).")
        for facet in FACETS
    ),
    query_param("name", text_schema(64), "Only the versions of this environment name."),
    query_param("hint_gain_min", {"type": "number"}, "Lowest hint gain (with hint - without)."),
    query_param("hint_gain_max", {"type": "number"}, "Highest hint gain."),
    query_param("played", enum_schema(("yes", "no")), "With (yes) or without (no) play stats."),
]
#: The list's order and page.
ORDER_PARAMS = [
    query_param(
        "sort",
        enum_schema(SORTS),
        "Sort key (default: relevance with q, else created; relevance needs q).",
    ),
    query_param(
        "dir",
        enum_schema(("asc", "desc")),
        "Order (default: the sort key's own; name ascends, the others descend).",
    ),
    query_param("page", {"type": "integer", "minimum": 1, "default": 1}, "Page number, from 1."),
    query_param("size", {"type": "integer", "enum": list(PAGE_SIZES), "default": 50}, "Page size."),
]


def body_doc(model: type[BaseModel], required: bool = True) -> dict[str, Any]:
    """An OpenAPI request body of ``model`` as JSON (the body is read and checked by hand)."""
    schema = model.model_json_schema()
    return {
        "requestBody": {
            "required": required,
            "content": {"application/json": {"schema": schema}},
        }
    }


#: A POST that takes no fields (an empty body or {}).
EMPTY_BODY = {
    "requestBody": {
        "required": False,
        "content": {"application/json": {"schema": {"type": "object", "maxProperties": 0}}},
    }
}

#: The export's parameters: the format, the filters and the order (no page).
EXPORT_PARAMS = [
    query_param("format", enum_schema(EXPORT_FORMATS, "jsonl"), "File format."),
    *FILTER_PARAMS,
    *ORDER_PARAMS[:2],
]
