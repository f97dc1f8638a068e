"""Read-only lookups of a SQLite registry with the standard library, for ``gym.make``.

Opening a :class:`~spade_envs.registry.store.Registry` imports SQLAlchemy and
SQLModel and checks the schema: about a quarter of a second, paid by every fresh
process (each ``AsyncVectorEnv`` worker, each script) on its first ``gym.make``.
An environment version never changes once stored, so ``gym.make`` only needs two
indexed reads (plus its status, which ``spade-envs revalidate`` may change), which
``sqlite3`` answers in well under a millisecond. Anything these
functions cannot answer (PostgreSQL, a missing database, an unknown or older
schema, an ID not stored yet) returns None and the caller falls back to the
registry, which also creates, upgrades and explains.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from .urls import sqlite_path

__all__ = [
    "read_all_ids",
    "read_env",
    "read_status",
    "read_statuses",
    "read_versions",
    "sqlite_path",
]

_local = threading.local()


def _connection(path: str) -> sqlite3.Connection | None:
    connections = getattr(_local, "connections", None)
    if connections is None:
        connections = _local.connections = {}
    conn = connections.get(path)
    if conn is not None:
        return conn
    if not Path(path).is_file():
        return None
    from .migrations import SCHEMA_VERSION

    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        row = conn.execute("SELECT version FROM spade_schema WHERE id = 1").fetchone()
    except sqlite3.Error:
        return None  # not a registry (yet), or corrupt: the full store explains
    if row is None or row[0] != SCHEMA_VERSION:
        conn.close()
        return None  # the store upgrades older schemas and refuses newer ones
    connections[path] = conn
    return conn


def _query(url: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]] | None:
    """Every row of ``sql`` on the registry at ``url``, or None if this cannot tell (not
    a SQLite registry of this schema, or a read error: the full store explains)."""
    path = sqlite_path(url)
    conn = _connection(path) if path else None
    if conn is None:
        return None
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.Error:
        return None


def read_versions(url: str, name: str) -> list[int] | None:
    """The stored versions of ``name`` (possibly empty), or None if this cannot tell."""
    rows = _query(url, "SELECT version FROM environments WHERE name = ? ORDER BY version", (name,))
    return None if rows is None else [int(v) for (v,) in rows]


def read_env(url: str, name: str, version: int) -> tuple[str, str, str] | None:
    """``(kind, source, status)`` of a stored version, or None if this cannot tell."""
    rows = _query(
        url,
        "SELECT kind, source, status FROM environments WHERE name = ? AND version = ?",
        (name, version),
    )
    if not rows:
        return None
    kind, source, status = rows[0]
    return str(kind), str(source), str(status)


def read_status(url: str, name: str, version: int) -> str | None:
    """The status of a stored version, or None if this cannot tell."""
    rows = _query(
        url, "SELECT status FROM environments WHERE name = ? AND version = ?", (name, version)
    )
    return str(rows[0][0]) if rows else None


def read_statuses(url: str, name: str) -> list[tuple[int, str]] | None:
    """``(version, status)`` of every stored version of ``name``, oldest first, or None
    if this cannot tell."""
    rows = _query(
        url, "SELECT version, status FROM environments WHERE name = ? ORDER BY version", (name,)
    )
    return None if rows is None else [(int(v), str(s)) for v, s in rows]


def read_all_ids(url: str) -> list[tuple[str, int]] | None:
    """``(name, version)`` of every stored version (two small columns of each row, from
    the ``(name, version)`` index), or None if this cannot tell."""
    rows = _query(url, "SELECT name, version FROM environments")
    return None if rows is None else [(str(n), int(v)) for n, v in rows]
