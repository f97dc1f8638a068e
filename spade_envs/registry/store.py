"""The registry store: immutable environment versions in SQLite or PostgreSQL.

Callers see plain :class:`EnvRecord` dataclasses; SQLModel rows stay in this package.
Registration is idempotent by source hash and safe under concurrent writers: the
``(name, version)`` and ``sha256`` unique constraints decide races, and a losing
writer re-reads instead of writing twice. Every write is one transaction, so a writer
killed mid-way leaves nothing behind.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.metadata import KINDS, ORIGINS, EnvMetadata
from ..error import SpadeError, UnknownEnvironmentError
from .ids import check_name, env_id, parse_env_id

__all__ = ["STATUSES", "SCHEMA_VERSION", "EnvRecord", "Registry", "default_url"]

#: Lifecycle of an environment version.
STATUSES = ("candidate", "validated", "rejected", "retired")
#: Version of the schema this code writes; older databases are upgraded in place.
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class EnvRecord:
    """One registered environment version (a plain copy of its row)."""

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
    extra: dict[str, Any] = field(default_factory=dict)


def default_url() -> str:
    """``SPADE_REGISTRY_URL``, else a SQLite file in the user's data directory."""
    url = os.environ.get("SPADE_REGISTRY_URL")
    if url:
        return url
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{base / 'spade-envs' / 'registry.db'}"


def _sha256(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


class Registry:
    """A connection to one registry database.

    Args:
        url: SQLAlchemy URL (``sqlite:///path.db`` or ``postgresql+psycopg://...``);
            defaults to :func:`default_url`.
    """

    def __init__(self, url: str | None = None):
        from sqlalchemy import event
        from sqlalchemy.exc import SQLAlchemyError
        from sqlmodel import create_engine

        self.url = url or default_url()
        kwargs: dict[str, Any] = {}
        if self.url.startswith("sqlite"):
            path = self.url.split("///", 1)[-1]
            if path and path != ":memory:":
                try:
                    Path(path).parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise SpadeError(
                        f"Cannot create the registry directory for {path}: {exc}. "
                        "Set SPADE_REGISTRY_URL to a writable location."
                    ) from exc
            kwargs["connect_args"] = {"timeout": 30}
        try:
            self.engine = create_engine(self.url, **kwargs)
        except (SQLAlchemyError, ImportError, ValueError) as exc:
            raise SpadeError(f"Cannot use registry URL {self.url!r}: {exc}") from exc
        if self.engine.dialect.name == "sqlite":

            @event.listens_for(self.engine, "connect")
            def _sqlite_pragmas(connection: Any, _record: Any) -> None:
                cursor = connection.cursor()
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA foreign_keys=ON")
                cursor.execute("PRAGMA busy_timeout=30000")
                cursor.close()

        self._prepare_schema()

    # ----- schema ---------------------------------------------------------------------------
    def _prepare_schema(self) -> None:
        from sqlalchemy.exc import DatabaseError, OperationalError
        from sqlmodel import Session, SQLModel, select

        from .tables import SchemaRow

        try:
            SQLModel.metadata.create_all(self.engine)
            with Session(self.engine) as session:
                row = session.exec(select(SchemaRow)).first()
                if row is None:
                    session.add(SchemaRow(id=1, version=SCHEMA_VERSION))
                    session.commit()
                elif row.version > SCHEMA_VERSION:
                    raise SpadeError(
                        f"The registry at {self._where()} has schema version {row.version}, "
                        f"newer than this spade-envs understands ({SCHEMA_VERSION}); "
                        "upgrade spade-envs."
                    )
        except OperationalError as exc:
            raise SpadeError(
                f"Cannot open the registry at {self._where()}: {exc.orig}. Check that the "
                "database server is reachable and the location is writable."
            ) from exc
        except DatabaseError as exc:
            raise SpadeError(
                f"The registry at {self._where()} is not a usable database ({exc.orig}); "
                "it may be corrupt. Move it aside and a new one will be created."
            ) from exc

    def _where(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    # ----- writing --------------------------------------------------------------------------
    def register(
        self,
        source: str,
        meta: EnvMetadata,
        *,
        status: str = "candidate",
        document_id: int | None = None,
        model: str = "",
        run_id: str | None = None,
    ) -> EnvRecord:
        """Store ``source`` as the next version of ``meta.name`` and return its record.

        Identical source returns the existing record unchanged (no new version); new
        source under an existing name becomes ``-v<N+1>``.
        """
        from sqlalchemy.exc import IntegrityError
        from sqlmodel import Session, func, select

        from .tables import EnvironmentRow

        check_name(meta.name)
        if status not in STATUSES:
            raise SpadeError(f"status must be one of {STATUSES}, got {status!r}.")
        if meta.kind not in KINDS or meta.origin not in ORIGINS:
            raise SpadeError(f"kind must be in {KINDS} and origin in {ORIGINS}.")
        digest = _sha256(source)
        for _attempt in range(20):
            with Session(self.engine) as session:
                existing = session.exec(
                    select(EnvironmentRow).where(EnvironmentRow.sha256 == digest)
                ).first()
                if existing is not None:
                    return _record(existing)
                latest = session.exec(
                    select(func.max(EnvironmentRow.version)).where(EnvironmentRow.name == meta.name)
                ).one()
                row = EnvironmentRow(
                    name=meta.name,
                    version=(latest or 0) + 1,
                    sha256=digest,
                    source=source,
                    class_name=meta.name,
                    kind=meta.kind,
                    skill=meta.skill,
                    description=meta.description,
                    max_turns=meta.max_turns,
                    origin=meta.origin,
                    status=status,
                    parents_json=json.dumps(list(meta.parents)),
                    document_id=document_id,
                    model=model,
                    run_id=run_id,
                )
                session.add(row)
                try:
                    session.commit()
                except IntegrityError:
                    session.rollback()  # another writer took this version or this source
                    continue
                session.refresh(row)
                return _record(row)
        raise SpadeError(f"Could not register {meta.name}: too many concurrent writers; retry.")

    def set_status(self, id_: str, status: str) -> EnvRecord:
        """Change the status of a version (its source never changes)."""
        from sqlmodel import Session

        if status not in STATUSES:
            raise SpadeError(f"status must be one of {STATUSES}, got {status!r}.")
        with Session(self.engine) as session:
            row = self._row(session, id_)
            row.status = status
            session.add(row)
            session.commit()
            session.refresh(row)
            return _record(row)

    def retire(self, id_: str) -> EnvRecord:
        """Mark a version retired: it stays readable, but is no longer offered."""
        return self.set_status(id_, "retired")

    # ----- reading --------------------------------------------------------------------------
    def _row(self, session: Any, id_: str) -> Any:
        from sqlmodel import select

        from .tables import EnvironmentRow

        name, version = parse_env_id(id_)
        row = session.exec(
            select(EnvironmentRow).where(
                EnvironmentRow.name == name, EnvironmentRow.version == version
            )
        ).first()
        if row is None:
            versions = session.exec(
                select(EnvironmentRow.version).where(EnvironmentRow.name == name)
            ).all()
            if versions:
                known = [env_id(name, v) for v in sorted(versions)]
                raise UnknownEnvironmentError(id_, known, what="environment version")
            names = session.exec(select(EnvironmentRow.name).distinct()).all()
            raise UnknownEnvironmentError(name, names, what="registered environment")
        return row

    def get(self, id_: str) -> EnvRecord:
        """The record of ``spade/<Name>-v<N>``; unknown IDs suggest close matches."""
        from sqlmodel import Session

        with Session(self.engine) as session:
            return _record(self._row(session, id_))

    def versions(self, name: str) -> list[str]:
        """Every registered ID of ``name``, oldest first."""
        from sqlmodel import Session, select

        from .tables import EnvironmentRow

        with Session(self.engine) as session:
            found = session.exec(
                select(EnvironmentRow.version).where(EnvironmentRow.name == name)
            ).all()
        return [env_id(name, v) for v in sorted(found)]

    def names(self) -> list[str]:
        """Every registered environment name, sorted."""
        from sqlmodel import Session, select

        from .tables import EnvironmentRow

        with Session(self.engine) as session:
            return sorted(session.exec(select(EnvironmentRow.name).distinct()).all())

    def list(
        self,
        *,
        skill: str | None = None,
        kind: str | None = None,
        origin: str | None = None,
        status: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[EnvRecord]:
        """Records matching the filters, newest first."""
        from sqlmodel import Session, select

        from .tables import EnvironmentRow

        query = select(EnvironmentRow)
        for column, value in (
            (EnvironmentRow.skill, skill),
            (EnvironmentRow.kind, kind),
            (EnvironmentRow.origin, origin),
            (EnvironmentRow.status, status),
        ):
            if value is not None:
                query = query.where(column == value)
        query = query.order_by(EnvironmentRow.id.desc()).offset(offset).limit(limit)
        with Session(self.engine) as session:
            return [_record(r) for r in session.exec(query).all()]

    def count(self) -> int:
        from sqlmodel import Session, func, select

        from .tables import EnvironmentRow

        with Session(self.engine) as session:
            return int(session.exec(select(func.count()).select_from(EnvironmentRow)).one())

    def export_jsonl(self, path: str | Path) -> int:
        """Write every version as one JSON object per line; returns the count."""
        records = self.list(limit=10**9)
        path = Path(path)
        tmp = path.with_name(path.name + ".partial")
        with tmp.open("w", encoding="utf-8") as out:
            for r in reversed(records):  # oldest first, so versions import in order
                row = {k: v for k, v in r.__dict__.items() if k != "extra"}
                row["parents"] = list(r.parents)
                row["created_at"] = r.created_at.isoformat() if r.created_at else None
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
        tmp.replace(path)  # a reader never sees half a file
        return len(records)

    def import_jsonl(self, path: str | Path) -> list[EnvRecord]:
        """Register every environment of a JSONL export (identical code is skipped).

        The whole file is checked before anything is written, so a malformed file
        imports nothing.
        """
        required = {"name", "source", "kind", "skill", "description", "max_turns", "origin"}
        rows = []
        with Path(path).open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise SpadeError(f"{path}, line {number}: not JSON ({exc}).") from None
                missing = required - set(row) if isinstance(row, dict) else required
                if missing:
                    raise SpadeError(
                        f"{path}, line {number}: missing field(s) {', '.join(sorted(missing))}."
                    )
                check_name(row["name"])
                rows.append(row)
        records = []
        for row in rows:
            meta = EnvMetadata(
                name=row["name"],
                kind=row["kind"],
                skill=row["skill"],
                description=row["description"],
                max_turns=int(row["max_turns"]),
                reward_range=(0.0, 1.0),
                origin="imported",
                parents=tuple(row.get("parents", [])),
            )
            status = row.get("status", "candidate")
            records.append(
                self.register(
                    row["source"],
                    meta,
                    status=status if status in STATUSES else "candidate",
                    model=row.get("model", ""),
                )
            )
        return records

    def close(self) -> None:
        self.engine.dispose()


def _record(row: Any) -> EnvRecord:
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
    )
