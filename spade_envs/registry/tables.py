"""The SQL schema (SQLModel). These rows never leave ``spade_envs.registry``.

This module describes the newest schema (``migrations.SCHEMA_VERSION``); a fresh
database is created from it, an older one is upgraded in place by ``migrations``.
A change here needs a new migration step and a new version number.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, Column, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = [
    "DocumentRow",
    "EmbeddingRow",
    "EnvironmentRow",
    "PlayStatsRow",
    "QuarantineRow",
    "RunRow",
    "SchemaRow",
    "ValidationRow",
]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class SchemaRow(SQLModel, table=True):
    """The registry's own metadata: one row (``id`` 1)."""

    __tablename__ = "spade_schema"
    id: int = Field(default=1, primary_key=True)
    version: int
    # Added in schema version 5: the names of the packaged seeds this registry was given
    # (a JSON list), so each is registered once and a retired or removed one stays away.
    seeds_json: str = Field(default="[]", sa_column=Column(Text, nullable=False))


class DocumentRow(SQLModel, table=True):
    """A grounding document an environment was written from."""

    __tablename__ = "documents"
    id: int | None = Field(default=None, primary_key=True)
    sha256: str = Field(index=True, unique=True, max_length=64)
    source: str = Field(default="", max_length=512)
    text: str = Field(sa_column=Column(Text, nullable=False))
    created_at: dt.datetime = Field(default_factory=_now)


class RunRow(SQLModel, table=True):
    """A self-play or generation run."""

    __tablename__ = "runs"
    id: str = Field(primary_key=True, max_length=64)
    kind: str = Field(default="", max_length=32)
    config_json: str = Field(default="{}", sa_column=Column(Text, nullable=False))
    started_at: dt.datetime = Field(default_factory=_now)
    finished_at: dt.datetime | None = None


class EnvironmentRow(SQLModel, table=True):
    """One immutable environment version."""

    __tablename__ = "environments"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_environment_version"),)
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, max_length=64)
    version: int
    sha256: str = Field(index=True, unique=True, max_length=64)
    source: str = Field(sa_column=Column(Text, nullable=False))
    class_name: str = Field(max_length=128)
    kind: str = Field(index=True, max_length=16)
    skill: str = Field(default="", index=True, max_length=64)
    description: str = Field(default="", sa_column=Column(Text, nullable=False))
    max_turns: int = 1
    origin: str = Field(index=True, max_length=16)
    status: str = Field(index=True, max_length=16)
    parents_json: str = Field(default="[]", sa_column=Column(Text, nullable=False))
    document_id: int | None = Field(default=None, foreign_key="documents.id")
    model: str = Field(default="", max_length=256)
    run_id: str | None = Field(default=None, foreign_key="runs.id", max_length=64)
    created_at: dt.datetime = Field(default_factory=_now, index=True)
    # Added in schema version 2.
    prompt_sha256: str = Field(default="", max_length=64)
    hint: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    extra_json: str = Field(
        default="{}", sa_column=Column(Text, nullable=False, server_default="{}")
    )
    # Added in schema version 3: the external suite an imported version comes from.
    suite: str = Field(default="", index=True, max_length=32)


class ValidationRow(SQLModel, table=True):
    """A validation report of one environment version."""

    __tablename__ = "validation_reports"
    id: int | None = Field(default=None, primary_key=True)
    environment_id: int = Field(foreign_key="environments.id", index=True)
    passed: bool
    budget: str = Field(default="", max_length=16)
    validator_version: str = Field(default="", max_length=16)
    report_json: str = Field(sa_column=Column(Text, nullable=False))
    created_at: dt.datetime = Field(default_factory=_now)
    duration_s: float = 0.0  # added in schema version 2


class PlayStatsRow(SQLModel, table=True):
    """How a policy checkpoint does on an environment, with and without the hint."""

    __tablename__ = "play_stats"
    __table_args__ = (UniqueConstraint("environment_id", "checkpoint", name="uq_play_stats"),)
    id: int | None = Field(default=None, primary_key=True)
    environment_id: int = Field(foreign_key="environments.id", index=True)
    checkpoint: str = Field(max_length=256)
    plays_with_hint: int = 0
    plays_without_hint: int = 0
    mean_return_with_hint: float = 0.0
    mean_return_without_hint: float = 0.0
    win_rate: float = 0.0
    # Mean return with the hint minus without it, not floored (called ``regret`` before
    # schema version 4; the floored designer reward is not stored here).
    hint_gain: float = Field(default=0.0, index=True)
    updated_at: dt.datetime = Field(default_factory=_now)


class EmbeddingRow(SQLModel, table=True):
    """An embedding of an environment by one embedder model (float32 bytes)."""

    __tablename__ = "embeddings"
    __table_args__ = (UniqueConstraint("environment_id", "model", name="uq_embedding"),)
    id: int | None = Field(default=None, primary_key=True)
    environment_id: int = Field(foreign_key="environments.id", index=True)
    model: str = Field(max_length=256)
    dim: int
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    text_sha256: str = Field(default="", max_length=64)  # added in schema version 2


class QuarantineRow(SQLModel, table=True):
    """Evidence that a replay of a play diverged (added in schema version 6).

    Rows are kept as history: clearing a quarantine (the version validated again) sets
    ``cleared_at`` instead of deleting the evidence.
    """

    __tablename__ = "quarantines"
    id: int | None = Field(default=None, primary_key=True)
    environment_id: int = Field(foreign_key="environments.id", index=True)
    # Episode seeds may use all 64 bits; PostgreSQL's INTEGER has 32.
    seed: int = Field(sa_column=Column(BigInteger, nullable=False))
    step: int = Field(sa_column=Column(BigInteger, nullable=False))
    field: str = Field(max_length=16)
    played: str = Field(default="", sa_column=Column(Text, nullable=False))
    replayed: str = Field(default="", sa_column=Column(Text, nullable=False))
    detail: str = Field(default="", sa_column=Column(Text, nullable=False))
    at: str = Field(default="", max_length=64)  # when the audit recorded it (ISO 8601)
    created_at: dt.datetime = Field(default_factory=_now)
    cleared_at: dt.datetime | None = None
