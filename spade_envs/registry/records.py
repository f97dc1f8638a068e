"""Plain records the registry hands out; SQLModel rows never leave ``spade_envs.registry``."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from dataclasses import dataclass, field
from typing import Any

from .ids import env_id

__all__ = ["Document", "EnvRecord", "PlayStats", "Registered", "ValidationRecord"]


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
