"""Plain records the registry hands out; SQLModel rows never leave ``spade_envs.registry``."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from dataclasses import dataclass, field
from typing import Any

from ..error import SpadeError
from .ids import env_id

__all__ = [
    "EVIDENCE_FIELDS",
    "Document",
    "EnvRecord",
    "PlayStats",
    "QuarantineEvidence",
    "Registered",
    "ValidationRecord",
]

#: What a replay audit compares, step by step: the value that diverged (``error``: one run
#: raised or crashed where the other did not).
#: What a replay audit can find different: a field of a step, an error, or (``counterfactual``)
#: that wrong answers in place of the winning one won as well.
EVIDENCE_FIELDS = ("reward", "terminated", "truncated", "observation", "error", "counterfactual")
#: Seeds and steps are stored as 64-bit signed integers (SQLite INTEGER, PostgreSQL BIGINT).
_INT64 = 2**63


@dataclass(frozen=True)
class EnvRecord:
    """One registered environment version (a plain copy of its row).

    ``key`` is the row's integer key: stable within one database (the vector index
    uses it), meaningless across databases; ``id`` is what people and Gymnasium use.
    """

    id: str
    name: str
    version: int
    sha256: str
    source: str
    class_name: str
    kind: str
    skill: str
    description: str
    max_turns: int
    origin: str
    status: str
    parents: tuple[str, ...] = ()
    document_id: int | None = None
    model: str = ""
    run_id: str | None = None
    created_at: dt.datetime | None = None
    prompt_sha256: str = ""
    hint: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    key: int = 0
    suite: str = ""

    def to_dict(self, *, source: bool = True) -> dict[str, Any]:
        """A JSON-ready dict (``parents`` as a list, ``created_at`` in ISO 8601)."""
        data = {k: v for k, v in self.__dict__.items() if k != "key"}
        if not source:
            data.pop("source")
        data["parents"] = list(self.parents)
        data["created_at"] = self.created_at.isoformat() if self.created_at else None
        return data


@dataclass(frozen=True)
class Registered:
    """What ``Registry.register_with_outcome`` did: the version's record, and whether
    this call stored it.

    ``new`` is False when identical code (the same SHA-256) was already registered, under
    this name or another: nothing changed and ``record`` is the existing version (with its
    own name, version and status).
    """

    record: EnvRecord
    new: bool

    @property
    def id(self) -> str:
        """The version's ID, ``spade/<Name>-v<N>``."""
        return self.record.id


@dataclass(frozen=True)
class PlayStats:
    """How one policy checkpoint does on one environment version.

    ``hint_gain`` is the mean return with the hint minus the mean return without it, not
    floored: negative when the hint hurts. (The designer's *regret* reward floors it at
    0 and penalises failed plays; see :func:`spade_envs.agent.rewards.regret`.)
    """

    env_id: str
    checkpoint: str
    plays_with_hint: int
    plays_without_hint: int
    mean_return_with_hint: float
    mean_return_without_hint: float
    win_rate: float
    hint_gain: float
    updated_at: dt.datetime | None = None

    @property
    def regret(self) -> float:
        """Deprecated name of :attr:`hint_gain` (it was never floored like the regret)."""
        warnings.warn(
            "PlayStats.regret is deprecated: it is the unfloored hint gain (mean return with "
            "the hint minus without it); use PlayStats.hint_gain.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.hint_gain


@dataclass(frozen=True)
class ValidationRecord:
    """A stored validation report of one version (``report`` is its JSON form)."""

    env_id: str
    passed: bool
    budget: str
    validator_version: str
    duration_s: float
    report: dict[str, Any]
    created_at: dt.datetime | None = None


@dataclass(frozen=True)
class Document:
    """A grounding document an environment was written from."""

    id: int
    sha256: str
    source: str
    text: str
    created_at: dt.datetime | None = None


@dataclass(frozen=True)
class QuarantineEvidence:
    """Why a version is quarantined: a replay of one of its plays diverged from the play.

    The texts come from the environment (untrusted): whoever shows them escapes and
    shortens them; the registry stores at most :data:`EVIDENCE_TEXT_CHARS` of each.

    Attributes:
        env_id: The version, ``spade/<Name>-v<N>``.
        seed: The episode seed of the play that was replayed.
        step: Where the runs parted: 0 is the reset, k the k-th step.
        field: What differed, one of :data:`EVIDENCE_FIELDS`.
        played: What the play saw (short text).
        replayed: What the replay in a fresh worker saw.
        detail: Anything else worth knowing (the action sent, an error's message).
        at: When it was recorded (ISO 8601, UTC); empty when unknown.

    Raises:
        SpadeError: ``field`` is not one of :data:`EVIDENCE_FIELDS`, or ``seed`` or
            ``step`` is not an integer that fits in 64 bits (``step`` not negative).
    """

    env_id: str
    seed: int
    step: int
    field: str
    played: str
    replayed: str
    detail: str = ""
    at: str = ""

    def __post_init__(self) -> None:
        if self.field not in EVIDENCE_FIELDS:
            raise SpadeError(
                f"Quarantine evidence field must be one of {', '.join(EVIDENCE_FIELDS)}, got "
                f"{str(self.field)[:40]!r}: name what differed between the play and its replay."
            )
        for name, low in (("seed", -_INT64), ("step", 0)):
            value = getattr(self, name)
            # bool is an int subclass: True is not a seed.
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value < _INT64:
                raise SpadeError(
                    f"Quarantine evidence {name} must be an integer in [{low}, 2**63), got "
                    f"{str(value)[:40]!r}."
                )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return {
            "env_id": self.env_id,
            "seed": self.seed,
            "step": self.step,
            "field": self.field,
            "played": self.played,
            "replayed": self.replayed,
            "detail": self.detail,
            "at": self.at,
        }

    @classmethod
    def from_dict(cls, data: Any) -> QuarantineEvidence | None:
        """Evidence read back from stored data; None when it is not usable evidence.

        Stored rows may be old or hostile, and a page that shows them must not fail: a
        value that is not a dict, a missing or mistyped ``env_id``, ``seed``, ``step`` or
        ``field``, or an unknown ``field`` give None. Text fields that are not strings
        become their ``str()``; missing ones are empty.
        """
        if not isinstance(data, dict):
            return None
        env_id_ = data.get("env_id")
        if not isinstance(env_id_, str):
            return None

        def text(key: str) -> str:
            value = data.get(key)
            return "" if value is None else value if isinstance(value, str) else str(value)

        try:
            return cls(
                env_id=env_id_,
                seed=data.get("seed"),  # type: ignore[arg-type]  (checked in __post_init__)
                step=data.get("step"),  # type: ignore[arg-type]
                field=str(data.get("field")),
                played=text("played"),
                replayed=text("replayed"),
                detail=text("detail"),
                at=text("at"),
            )
        except SpadeError:
            return None

    def summary(self, width: int = 80) -> str:
        """One line: where the runs parted and what each saw, texts shortened to ``width``.

        Example:
            ``seed 7, step 2: reward played '1.0', replayed '0.0'``
        """
        where = "the reset" if self.step == 0 else f"step {self.step}"
        return (
            f"seed {self.seed}, {where}: {self.field} played {one_line(self.played, width)!r}, "
            f"replayed {one_line(self.replayed, width)!r}"
        )


#: The most characters of each evidence text the registry stores.
EVIDENCE_TEXT_CHARS = 4_000


def one_line(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` characters (cut with an ellipsis).

    Whitespace runs become one space and other control characters are dropped, so
    evidence from an environment cannot move a terminal's cursor or fake more lines.
    """
    flat = " ".join(text.split())
    flat = "".join(c for c in flat if c.isprintable())
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def env_record(row: Any) -> EnvRecord:
    return EnvRecord(
        id=env_id(row.name, row.version),
        name=row.name,
        version=row.version,
        sha256=row.sha256,
        source=row.source,
        class_name=row.class_name,
        kind=row.kind,
        skill=row.skill,
        description=row.description,
        max_turns=row.max_turns,
        origin=row.origin,
        status=row.status,
        parents=tuple(json.loads(row.parents_json or "[]")),
        document_id=row.document_id,
        model=row.model,
        run_id=row.run_id,
        created_at=row.created_at,
        prompt_sha256=row.prompt_sha256 or "",
        hint=row.hint or "",
        extra=json.loads(row.extra_json or "{}"),
        key=row.id,
        suite=row.suite or "",
    )


def play_stats(row: Any, id_: str) -> PlayStats:
    return PlayStats(
        env_id=id_,
        checkpoint=row.checkpoint,
        plays_with_hint=row.plays_with_hint,
        plays_without_hint=row.plays_without_hint,
        mean_return_with_hint=row.mean_return_with_hint,
        mean_return_without_hint=row.mean_return_without_hint,
        win_rate=row.win_rate,
        hint_gain=row.hint_gain,
        updated_at=row.updated_at,
    )
