"""Schema versions and in-place upgrades of an existing registry database.

``tables.py`` describes the newest schema; a fresh database is created from it. An
older database is upgraded by the steps below, in one transaction that holds the
database's write lock (SQLite ``BEGIN IMMEDIATE``, PostgreSQL ``LOCK TABLE``), so
two processes opening an old registry at once upgrade it exactly once, and a process
killed mid-upgrade leaves the old version intact. Before upgrading a SQLite file a
copy is kept next to it (``<file>.v<old>.bak``).

A step is plain SQL that both SQLite and PostgreSQL accept, so the same list serves
both backends; new columns carry defaults, so old rows stay valid. A renamed column keeps
its values (``ALTER TABLE ... RENAME COLUMN``, SQLite 3.25+), and its index is dropped and
created again under the name a fresh database gives it, so an upgraded database and a
fresh one have the same schema.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..error import SpadeError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "prepare_schema", "schema_version"]


@dataclass(frozen=True)
class Migration:
    """One upgrade step: from ``version - 1`` to ``version``."""

    version: int
    summary: str
    statements: tuple[str, ...]
    #: The oldest SQLite library that runs the statements (``RENAME COLUMN``: 3.25).
    sqlite_at_least: tuple[int, int, int] = (3, 0, 0)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        2,
        "designer lineage (prompt hash), model-written hints and extras on environments; "
        "validation duration; the text hash each embedding was made from",
        (
            "ALTER TABLE environments ADD COLUMN prompt_sha256 VARCHAR(64) NOT NULL DEFAULT ''",
            "ALTER TABLE environments ADD COLUMN hint TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE environments ADD COLUMN extra_json TEXT NOT NULL DEFAULT '{}'",
            "ALTER TABLE validation_reports ADD COLUMN duration_s FLOAT NOT NULL DEFAULT 0",
            "ALTER TABLE embeddings ADD COLUMN text_sha256 VARCHAR(64) NOT NULL DEFAULT ''",
        ),
    ),
    Migration(
        3,
        "the external suite (reasoning-gym, rlve) an imported version comes from",
        (
            "ALTER TABLE environments ADD COLUMN suite VARCHAR(32) NOT NULL DEFAULT ''",
            "CREATE INDEX ix_environments_suite ON environments (suite)",
        ),
    ),
    Migration(
        4,
        "play_stats.regret renamed hint_gain: it is the unfloored mean return with the hint "
        "minus without it; 'regret' now names only the floored designer reward",
        (
            "ALTER TABLE play_stats RENAME COLUMN regret TO hint_gain",
            # The index followed the column; give it a fresh database's name.
            "DROP INDEX ix_play_stats_regret",
            "CREATE INDEX ix_play_stats_hint_gain ON play_stats (hint_gain)",
        ),
        sqlite_at_least=(3, 25, 0),
    ),
    Migration(
        5,
        "the packaged seeds a registry was given, so that each is registered once (on the "
        "first open by a user-facing entry point) and one its user retired or removed "
        "does not come back",
        ("ALTER TABLE spade_schema ADD COLUMN seeds_json TEXT NOT NULL DEFAULT '[]'",),
    ),
    Migration(
        6,
        "the quarantines table: evidence that a replay of a play diverged (status "
        "'quarantined'), kept as history when the version is validated again",
        # A new table only: prepare_schema's create_all makes it right after the upgrade,
        # exactly as a fresh database gets it (types and index names included).
        (),
    ),
)

#: Version of the schema this code writes.
SCHEMA_VERSION = MIGRATIONS[-1].version


def schema_version(engine: Any) -> int | None:
    """The version recorded in the database, or None for a database without a registry."""
    from sqlalchemy import inspect, text

    if not inspect(engine).has_table("spade_schema"):
        return None
    with engine.connect() as conn:
        row = conn.execute(text("SELECT version FROM spade_schema WHERE id = 1")).first()
    return None if row is None else int(row[0])


def prepare_schema(engine: Any, where: str) -> None:
    """Create a fresh schema, or upgrade an older one in place; refuse a newer one.

    Args:
        engine: The registry's SQLAlchemy engine.
        where: The database location, for messages.

    Raises:
        SpadeError: The database was written by a newer spade-envs, or is not a registry.
    """
    from sqlalchemy import inspect
    from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError
    from sqlmodel import SQLModel

    from . import tables

    tables_here = set(inspect(engine).get_table_names())
    if "spade_schema" not in tables_here and "environments" in tables_here:
        raise SpadeError(
            f"The database at {where} has an 'environments' table but no spade-envs schema "
            "record; it is not a spade-envs registry. Point SPADE_REGISTRY_URL elsewhere."
        )
    if "spade_schema" in tables_here:
        if schema_version(engine) is None:
            _refuse_older_tables(engine, where)
        _upgrade(engine, where)
    for _attempt in range(3):
        try:
            # Creates what is missing: every table on a fresh database, new tables after
            # an upgrade. Another process may be creating the same tables right now.
            SQLModel.metadata.create_all(engine)
            break
        except (OperationalError, ProgrammingError) as exc:
            if "already exists" not in str(exc.orig):
                raise
    from sqlmodel import Session

    with Session(engine) as session:
        if session.get(tables.SchemaRow, 1) is None:
            session.add(tables.SchemaRow(id=1, version=SCHEMA_VERSION))
            try:
                session.commit()
            except IntegrityError:
                session.rollback()  # another process recorded it first


def _refuse_older_tables(engine: Any, where: str) -> None:
    """A ``spade_schema`` table without its row: fine while another process is creating a
    fresh database (its tables are complete), refused when the tables are older than this
    schema, since the version they need upgrading from is unknown.

    Raises:
        SpadeError: Some table lacks columns of the newest schema.
    """
    from sqlalchemy import inspect

    from . import tables

    found = inspect(engine)
    missing = []
    for name in tables.__all__:
        table = getattr(tables, name).__table__
        if found.has_table(table.name):
            have = {column["name"] for column in found.get_columns(table.name)}
            missing += [f"{table.name}.{c.name}" for c in table.columns if c.name not in have]
    if missing:
        raise SpadeError(
            f"The registry at {where} has lost its schema version record (the row of "
            f"spade_schema), and its tables are older than this spade-envs (no "
            f"{', '.join(missing[:4])}{', ...' if len(missing) > 4 else ''}), so it cannot be "
            "upgraded safely. Restore a backup of it (a SQLite file's upgrades keep "
            "<file>.v<N>.bak next to it), or export its versions with the spade-envs that "
            "wrote it and import them into a new registry."
        )


def _upgrade(engine: Any, where: str) -> None:
    current = schema_version(engine)
    if current is None or current == SCHEMA_VERSION:
        return
    if current > SCHEMA_VERSION:
        raise SpadeError(
            f"The registry at {where} has schema version {current}, newer than this "
            f"spade-envs understands ({SCHEMA_VERSION}); upgrade spade-envs."
        )
    if engine.dialect.name == "sqlite":
        _check_sqlite_library(engine, current, where)
        _backup_sqlite(engine, current)
    raw = engine.raw_connection()
    try:
        driver = raw.driver_connection
        cursor = raw.cursor()
        if engine.dialect.name == "sqlite":
            driver.isolation_level = None  # we issue BEGIN ourselves, so DDL is transactional
            cursor.execute("BEGIN IMMEDIATE")
        else:
            cursor.execute("LOCK TABLE spade_schema IN ACCESS EXCLUSIVE MODE")
        cursor.execute("SELECT version FROM spade_schema WHERE id = 1")
        version = int(cursor.fetchone()[0])  # re-read under the lock: someone may have won
        for step in MIGRATIONS:
            if step.version > version:
                for statement in step.statements:
                    cursor.execute(statement)
        cursor.execute(f"UPDATE spade_schema SET version = {SCHEMA_VERSION} WHERE id = 1")
        if engine.dialect.name == "sqlite":
            cursor.execute("COMMIT")
        else:
            raw.commit()
    except BaseException as exc:
        try:
            if engine.dialect.name == "sqlite":
                raw.driver_connection.execute("ROLLBACK")
            else:
                raw.rollback()
        except Exception:
            pass  # the transaction may already be gone; nothing was committed
        if isinstance(exc, Exception):
            raise SpadeError(
                f"Upgrading the registry at {where} from schema version {current} to "
                f"{SCHEMA_VERSION} failed ({exc}); nothing was changed. Report this with "
                "the message above."
            ) from exc
        raise
    finally:
        if engine.dialect.name == "sqlite":
            raw.driver_connection.isolation_level = ""
        raw.close()


def _check_sqlite_library(engine: Any, current: int, where: str) -> None:
    """Refuse, before anything is touched, an upgrade this SQLite library cannot run (it
    would fail halfway with a bare syntax error)."""
    have = tuple(engine.dialect.dbapi.sqlite_version_info)
    for step in MIGRATIONS:
        if step.version > current and have < step.sqlite_at_least:
            need = ".".join(map(str, step.sqlite_at_least))
            raise SpadeError(
                f"Upgrading the registry at {where} to schema version {step.version} needs "
                f"SQLite {need} or newer; this Python's sqlite3 is "
                f"{'.'.join(map(str, have))}. Use a Python built against a newer SQLite; "
                "the database was not changed."
            )


def _backup_sqlite(engine: Any, version: int) -> None:
    path = engine.url.database
    if not path or path == ":memory:":
        return
    backup = Path(f"{path}.v{version}.bak")
    if backup.exists():
        return
    try:
        with closing(sqlite3.connect(path)) as source, closing(sqlite3.connect(backup)) as target:
            source.backup(target)
    except sqlite3.Error as exc:
        raise SpadeError(
            f"Cannot back up {path} before upgrading its schema from version {version}: "
            f"{exc}. Free some space or make the directory writable, then retry."
        ) from exc
