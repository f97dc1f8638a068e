"""Read-only SQL the browser needs beyond the registry's public API.

The registry answers one record, a page of records or counts; a browser over 100,000
versions also needs the light columns of every version at once (to filter, sort and
search in memory), the status column alone (to notice retirements), every play
statistic row, and which embedders have stored vectors. These are plain ``SELECT``
statements over the registry's engine, written for both SQLite and PostgreSQL. Nothing
here writes.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

__all__ = [
    "embedding_models",
    "vector_batch",
    "environment_batch",
    "play_rows",
    "play_signature",
    "status_counts",
    "statuses",
    "to_epoch",
]


def to_epoch(value: Any) -> float:
    """A stored timestamp (naive means UTC, as the registry writes) in epoch seconds."""
    if value is None:
        return float("nan")
    if isinstance(value, str):  # a row written outside SQLAlchemy's DateTime type
        value = dt.datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value.timestamp()


def _rows(engine: Any, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    from sqlalchemy import text

    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql), params)]


def environment_batch(engine: Any, after: int, limit: int) -> list[tuple[Any, ...]]:
    """``(key, name, version, kind, skill, origin, status, created_at, description,
    parents_json, suite)`` of versions with key above ``after``, oldest first (no source)."""
    from sqlalchemy import DateTime, text

    query = text(
        "SELECT id, name, version, kind, skill, origin, status, created_at, description, "
        "parents_json, suite FROM environments WHERE id > :after ORDER BY id LIMIT :limit"
    ).columns(created_at=DateTime())  # typed, so SQLite's text timestamps are parsed
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(query, {"after": after, "limit": limit})]


def statuses(engine: Any) -> list[tuple[int, str]]:
    """``(key, status)`` of every version (a covering-index scan: no code is read)."""
    return [(int(k), str(s)) for k, s in _rows(engine, "SELECT id, status FROM environments")]


def status_counts(engine: Any) -> dict[str, int]:
    """How many versions have each status (counted inside the database)."""
    rows = _rows(engine, "SELECT status, count(*) FROM environments GROUP BY status")
    return {str(status): int(n) for status, n in rows}


def play_signature(engine: Any) -> tuple[Any, ...]:
    """Changes whenever a play statistic is added or replaced."""
    from sqlalchemy import DateTime, text

    query = text("SELECT count(*), max(id), max(updated_at) FROM play_stats").columns(
        updated_at=DateTime()
    )
    with engine.connect() as conn:
        return tuple(conn.execute(query).one())


def play_rows(engine: Any) -> list[tuple[int, str, float, float, float, float]]:
    """``(env key, checkpoint, hint gain, win rate, mean return with hint, without)`` of
    every play statistic, oldest update first (so later rows are the newer checkpoints)."""
    rows = _rows(
        engine,
        "SELECT environment_id, checkpoint, hint_gain, win_rate, mean_return_with_hint, "
        "mean_return_without_hint FROM play_stats ORDER BY updated_at, id",
    )
    return [(int(k), str(c), float(r), float(w), float(a), float(b)) for k, c, r, w, a, b in rows]


def embedding_models(engine: Any) -> dict[str, int]:
    """Embedder model name to how many versions it has embedded."""
    rows = _rows(engine, "SELECT model, count(*) FROM embeddings GROUP BY model")
    return {str(model): int(n) for model, n in rows}


def vector_batch(engine: Any, model: str, after: int, limit: int) -> list[tuple[int, int, bytes]]:
    """``(row id, env key, float32 bytes)`` of ``model``'s embeddings after row ``after``."""
    rows = _rows(
        engine,
        "SELECT id, environment_id, vector FROM embeddings WHERE model = :model AND id > :after "
        "ORDER BY id LIMIT :limit",
        model=model,
        after=after,
        limit=limit,
    )
    return [(int(i), int(k), bytes(v)) for i, k, v in rows]
