"""Bulk "light rows" for catalogs: every version's small columns, read fast.

The registry's record API answers one record or a page of them; a catalog over 100,000
versions (the corpus browser) needs the light columns of every version at once (to
filter, sort and search in memory), the statuses alone (to notice retirements), every
play statistic, and which embedders have stored vectors. These reads skip the ORM and
never touch the ``source`` column (on SQLite it is stored before the description, so
reading it would read the code). They are plain ``SELECT`` statements, written for
SQLite and PostgreSQL alike. Nothing here writes.

A mixin of :class:`~spade_envs.registry.store.Registry`; it relies on ``engine``.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, NamedTuple

__all__ = ["LightRow", "LightRows", "PlayRow", "to_epoch"]


class LightRow(NamedTuple):
    """The light columns of one environment version (no source).

    Attributes:
        key: The version's integer key (:attr:`EnvRecord.key`); keys grow with time.
        name: Environment name.
        version: Version number (``spade/<name>-v<version>``).
        kind: ``text``, ``tool`` or ``game``.
        skill: Skill label (``""`` when none).
        origin: ``seed``, ``designer`` or ``imported``.
        status: One of :data:`~spade_envs.registry.store.STATUSES`.
        created_at: Registration time in epoch seconds (NaN when unknown).
        description: The description (``""`` when none).
        parents: IDs or names of the parent environments.
        suite: The external suite it was imported from (``""`` when none).
    """

    key: int
    name: str
    version: int
    kind: str
    skill: str
    origin: str
    status: str
    created_at: float
    description: str
    parents: tuple[str, ...]
    suite: str


class PlayRow(NamedTuple):
    """One play statistic (a checkpoint on a version).

    Attributes:
        key: The version's key.
        checkpoint: The policy checkpoint that played.
        hint_gain: Mean return with the hint minus without it.
        win_rate: Fraction of episodes without the hint that were won.
        mean_return_with_hint: Mean return of the episodes with the hint.
        mean_return_without_hint: Mean return of those without it.
    """

    key: int
    checkpoint: str
    hint_gain: float
    win_rate: float
    mean_return_with_hint: float
    mean_return_without_hint: float


def to_epoch(value: Any) -> float:
    """A stored timestamp (naive means UTC, as the registry writes) in epoch seconds."""
    if value is None:
        return float("nan")
    if isinstance(value, str):  # a row written outside SQLAlchemy's DateTime type
        value = dt.datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value.timestamp()


def _parents(text: str | None) -> tuple[str, ...]:
    if not text or text == "[]":
        return ()
    try:
        listed = json.loads(text)
    except ValueError:
        return ()
    if not isinstance(listed, list):
        return ()
    return tuple(str(p) for p in listed if isinstance(p, str) and p)


class LightRows:
    """Bulk reads of light columns (see the module docstring)."""

    engine: Any

    def _select(self, sql: str, columns: dict[str, Any] | None = None, **params: Any) -> list[Any]:
        from sqlalchemy import text

        query = text(sql)
        if columns:
            query = query.columns(**columns)  # typed: SQLite's text timestamps are parsed
        with self.engine.connect() as conn:
            return list(conn.execute(query, params))

    def light_rows(self, after: int = 0, limit: int = 5000) -> list[LightRow]:
        """The light columns of up to ``limit`` versions with key above ``after``, by key.

        Walk a whole corpus in batches by passing the last key read as ``after``.
        """
        from sqlalchemy import DateTime

        rows = self._select(
            "SELECT id, name, version, kind, skill, origin, status, created_at, description, "
            "parents_json, suite FROM environments WHERE id > :after ORDER BY id LIMIT :limit",
            {"created_at": DateTime()},
            after=int(after),
            limit=int(limit),
        )
        out = []
        for key, name, version, kind, skill, origin, status, made, text, parents, suite in rows:
            row = (int(key), name, int(version), kind, skill or "", origin, status)
            out.append(LightRow(*row, to_epoch(made), text or "", _parents(parents), suite or ""))
        return out

    def statuses(self) -> list[tuple[int, str]]:
        """``(key, status)`` of every version (a covering-index scan: no code is read)."""
        return [(int(k), str(s)) for k, s in self._select("SELECT id, status FROM environments")]

    def status_counts(self) -> dict[str, int]:
        """How many versions have each status (counted inside the database)."""
        rows = self._select("SELECT status, count(*) FROM environments GROUP BY status")
        return {str(status): int(n) for status, n in rows}

    def play_signature(self) -> tuple[Any, ...]:
        """A value that changes whenever a play statistic is added or replaced."""
        from sqlalchemy import DateTime

        rows = self._select(
            "SELECT count(*), max(id), max(updated_at) FROM play_stats",
            {"updated_at": DateTime()},
        )
        return tuple(rows[0])

    def play_rows(self) -> list[PlayRow]:
        """Every play statistic, oldest update first (later rows: newer checkpoints)."""
        rows = self._select(
            "SELECT environment_id, checkpoint, hint_gain, win_rate, mean_return_with_hint, "
            "mean_return_without_hint FROM play_stats ORDER BY updated_at, id"
        )
        return [
            PlayRow(int(k), str(c), float(g), float(w), float(a), float(b))
            for k, c, g, w, a, b in rows
        ]

    def embedding_models(self) -> dict[str, int]:
        """Embedder model name to how many versions it has embedded."""
        rows = self._select("SELECT model, count(*) FROM embeddings GROUP BY model")
        return {str(model): int(n) for model, n in rows}
