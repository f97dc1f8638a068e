"""The registry store: immutable environment versions in SQLite or PostgreSQL.

Callers see plain :class:`EnvRecord` dataclasses; SQLModel rows stay in this package.
Registration is idempotent by source hash and safe under concurrent writers: the
``(name, version)`` and ``sha256`` unique constraints decide races, and a losing
writer re-reads instead of writing twice. Every write is one transaction, so a writer
killed mid-way leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..core.metadata import EnvMetadata
from ..error import MissingExtraError, SpadeError, UnknownEnvironmentError
from .attachments import Attachments, _chunks, renamed_regret
from .ids import env_id, parse_env_id
from .light import LightRows
from .migrations import SCHEMA_VERSION, prepare_schema
from .quarantine import QUARANTINED, Quarantines
from .records import EnvRecord, Registered, env_record
from .urls import default_url, prepare_location, resolve_url
from .writes import STATUSES, register_items

__all__ = [
    "SCHEMA_VERSION",
    "SORTS",
    "STATUSES",
    "EnvRecord",
    "Registered",
    "Registry",
    "default_url",
]

#: Orders :meth:`Registry.list` accepts (``regret``, the old name of ``hint_gain``, still
#: works with a DeprecationWarning).
SORTS = ("created", "hint_gain", "name")


class Registry(Attachments, LightRows, Quarantines):
    """A connection to one registry database.

    Args:
        url: SQLAlchemy URL (``sqlite:///path.db`` or ``postgresql+psycopg://...``) or a
            SQLite file path (``reg.db``, ``~/reg.db``); defaults to :func:`default_url`
            (see :func:`~spade_envs.registry.urls.resolve_url`). A SQLite file's directory
            must exist, except the per-user data directory, which is created.
        seeds: Register the packaged seeds this registry was never given (once per seed
            name, recorded in the registry: a seed retired or removed later is not
            registered again; see :mod:`~spade_envs.registry.seeding`). User-facing
            entry points pass True (the CLI, ``spade-envs serve``, ``gym.make``); the
            default False opens the database as it is, as tests and tools that count
            versions want.

    Raises:
        RegistryLocationError: A SQLite file's directory does not exist.
        MissingExtraError: A PostgreSQL URL without psycopg installed (the
            ``[postgres]`` extra).
        SpadeError: The URL is not usable, or the database not a registry.
    """

    def __init__(self, url: str | None = None, *, seeds: bool = False):
        from sqlalchemy import event
        from sqlalchemy.exc import SQLAlchemyError
        from sqlmodel import create_engine

        self.url = resolve_url(url)
        prepare_location(self.url)
        kwargs: dict[str, Any] = {}
        if self.url.startswith("sqlite"):
            kwargs["connect_args"] = {"timeout": 30}
        try:
            self.engine = create_engine(self.url, **kwargs)
        except ModuleNotFoundError as exc:
            if self.url.startswith("postgres") and (exc.name or "").startswith("psycopg"):
                raise MissingExtraError(
                    "A PostgreSQL registry", [exc.name or "psycopg"], "postgres"
                ) from exc
            raise SpadeError(f"Cannot use registry URL {self.url!r}: {exc}") from exc
        except (SQLAlchemyError, ImportError, ValueError) as exc:
            raise SpadeError(
                f"Cannot use registry URL {self.url!r}: {exc}. Give a SQLite file path "
                "(registry.db), a sqlite:///PATH URL or a postgresql+psycopg://USER@HOST/DB "
                "URL."
            ) from exc
        if self.engine.dialect.name == "sqlite":

            @event.listens_for(self.engine, "connect")
            def _sqlite_pragmas(connection: Any, _record: Any) -> None:
                cursor = connection.cursor()
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA foreign_keys=ON")
                cursor.execute("PRAGMA busy_timeout=30000")
                cursor.close()

        self._prepare_schema()
        if seeds:
            self.register_seeds(once=True)

    # ----- schema ---------------------------------------------------------------------------
    def _prepare_schema(self) -> None:
        from sqlalchemy.exc import DatabaseError, OperationalError

        try:
            prepare_schema(self.engine, self._where())
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

    # ----- registering ----------------------------------------------------------------------
    def register(
        self,
        source: str,
        meta: EnvMetadata,
        *,
        status: str = "candidate",
        document_id: int | None = None,
        model: str = "",
        run_id: str | None = None,
        prompt_sha256: str = "",
        hint: str = "",
        extra: dict[str, Any] | None = None,
        report: Any = None,
        suite: str = "",
    ) -> EnvRecord:
        """Store ``source`` as the next version of ``meta.name`` and return its record.

        Identical source returns the existing record unchanged (no new version); new
        source under an existing name becomes ``-v<N+1>``. A seed's name (in any letter
        case) is reserved for that seed's exact packaged source.

        Args:
            source: The environment's code; it never changes once stored.
            meta: Name, kind, skill, description, max_turns, origin and parents.
            status: One of :data:`STATUSES`.
            document_id: The grounding document (see :meth:`add_document`).
            model: The model that wrote the code.
            run_id: The run that created it.
            prompt_sha256: Hash of the designer prompt, for lineage.
            hint: A model-written hint for the agent.
            extra: Any further JSON-ready metadata.
            report: A validation report (anything with ``passed``, ``budget``,
                ``validator_version``, ``timings`` and ``to_json()``), stored in the
                same transaction as a new version.
            suite: The external suite an imported version comes from (``list`` and the
                browser filter by it).

        Raises:
            ReservedNameError: ``meta.name`` is a seed's name but ``source`` is not that
                seed's packaged module; rename the class.
        """
        return self.register_with_outcome(
            source,
            meta,
            status=status,
            document_id=document_id,
            model=model,
            run_id=run_id,
            prompt_sha256=prompt_sha256,
            hint=hint,
            extra=extra,
            report=report,
            suite=suite,
        ).record

    def register_with_outcome(
        self,
        source: str,
        meta: EnvMetadata,
        *,
        status: str = "candidate",
        document_id: int | None = None,
        model: str = "",
        run_id: str | None = None,
        prompt_sha256: str = "",
        hint: str = "",
        extra: dict[str, Any] | None = None,
        report: Any = None,
        suite: str = "",
    ) -> Registered:
        """:meth:`register`, also saying whether this call stored a new version.

        Takes the same arguments and follows the same rules. ``Registered.new`` is False
        when identical code was already registered (then nothing was written, not even
        ``status`` or ``report``, and the record is the existing version's), so a caller
        can say "already registered as spade/X-v2" instead of "registered".

        Example:
            >>> outcome = registry.register_with_outcome(source, meta)  # doctest: +SKIP
            >>> print(("registered " if outcome.new else "already registered ") + outcome.id)
        """
        ((record, new),) = register_items(
            self.engine,
            [(source, meta)],
            status=status,
            document_id=document_id,
            model=model,
            run_id=run_id,
            prompt_sha256=prompt_sha256,
            hint=hint,
            extra=extra,
            reports=[report],
            suite=suite,
        )
        return Registered(record, new)

    def register_many(
        self,
        items: Sequence[tuple[str, EnvMetadata]],
        *,
        status: str = "candidate",
        document_id: int | None = None,
        model: str = "",
        run_id: str | None = None,
        prompt_sha256: str = "",
        hint: str = "",
        extra: dict[str, Any] | None = None,
        reports: Sequence[Any] | None = None,
        suite: str = "",
    ) -> list[EnvRecord]:
        """Register many ``(source, meta)`` pairs in one transaction (bulk import).

        Same rules as :meth:`register`, record for record, in order; nothing is
        written if any item is invalid (a seed's name on other code included). Under a
        concurrent writer the batch is retried.
        """
        return [
            record
            for record, _new in register_items(
                self.engine,
                items,
                status=status,
                document_id=document_id,
                model=model,
                run_id=run_id,
                prompt_sha256=prompt_sha256,
                hint=hint,
                extra=extra,
                reports=reports,
                suite=suite,
            )
        ]

    def register_seeds(self, *, once: bool = False) -> int:
        """Register every packaged seed that has no version here yet (status validated).

        Args:
            once: Only the seeds this registry was never given (what ``Registry(url,
                seeds=True)`` does); by default every seed without a version, so that the
                designer finds all its parents. Either way the seeds are recorded as
                given (see :mod:`~spade_envs.registry.seeding`).

        Returns:
            How many seeds were registered now.
        """
        from .seeding import register_seeds

        return register_seeds(self, once=once)

    def set_status(self, id_: str, status: str) -> EnvRecord:
        """Change the status of a version (its source never changes).

        Raises:
            SpadeError: An unknown status, or ``quarantined``, which only
                :meth:`quarantine` sets (a quarantine always comes with its evidence).
        """
        if status not in STATUSES:
            raise SpadeError(f"status must be one of {STATUSES}, got {status!r}.")
        if status == QUARANTINED:
            raise SpadeError(
                f"A version is quarantined with the evidence of the replay that diverged: "
                f"call Registry.quarantine({id_!r}, QuarantineEvidence(...)), not set_status."
            )
        return self._update(id_, status=status)

    def retire(self, id_: str) -> EnvRecord:
        """Mark a version retired: it stays readable, but is no longer offered."""
        return self.set_status(id_, "retired")

    def set_hint(self, id_: str, hint: str) -> EnvRecord:
        """Store a model-written hint for a version (hints are not part of the code)."""
        return self._update(id_, hint=hint)

    def _update(self, id_: str, **values: Any) -> EnvRecord:
        from sqlmodel import Session

        with Session(self.engine) as session:
            row = self._row(session, id_)
            for key, value in values.items():
                setattr(row, key, value)
            session.add(row)
            session.commit()
            session.refresh(row)
            return env_record(row)

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
            return env_record(self._row(session, id_))

    def by_keys(self, keys: Iterable[int]) -> dict[int, EnvRecord]:
        """Records by their integer :attr:`EnvRecord.key` (missing keys are left out)."""
        from sqlmodel import Session, col, select

        from .tables import EnvironmentRow

        found: dict[int, EnvRecord] = {}
        with Session(self.engine) as session:
            for chunk in _chunks(sorted(set(keys)), 500):
                for row in session.exec(
                    select(EnvironmentRow).where(col(EnvironmentRow.id).in_(chunk))
                ):
                    found[row.id] = env_record(row)
        return found

    def known_sha256(self, digests: Iterable[str]) -> set[str]:
        """Which of ``digests`` (source SHA-256s) are already registered."""
        from sqlmodel import Session, col, select

        from .tables import EnvironmentRow

        found: set[str] = set()
        with Session(self.engine) as session:
            for chunk in _chunks(sorted(set(digests)), 500):
                found.update(
                    session.exec(
                        select(EnvironmentRow.sha256).where(col(EnvironmentRow.sha256).in_(chunk))
                    ).all()
                )
        return found

    def by_sha256(self, digests: Iterable[str]) -> dict[str, EnvRecord]:
        """The registered versions among ``digests`` (source SHA-256s), by digest."""
        from sqlmodel import Session, col, select

        from .tables import EnvironmentRow

        found: dict[str, EnvRecord] = {}
        with Session(self.engine) as session:
            for chunk in _chunks(sorted(set(digests)), 500):
                for row in session.exec(
                    select(EnvironmentRow).where(col(EnvironmentRow.sha256).in_(chunk))
                ):
                    found[row.sha256] = env_record(row)
        return found

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
        sort: str = "created",
        limit: int = 100,
        offset: int = 0,
        suite: str | None = None,
        include_retired: bool = False,
    ) -> list[EnvRecord]:
        """Records matching the filters.

        Args:
            sort: ``created`` (newest first), ``hint_gain`` (highest hint gain of any
                checkpoint first; unplayed versions last) or ``name``. ``regret``, the
                old name of ``hint_gain``, still works with a DeprecationWarning.
            include_retired: Also list retired versions (no longer offered, so hidden by
                default); ``status="retired"`` lists only them either way.
        """
        from sqlmodel import Session, func, select

        from .tables import EnvironmentRow, PlayStatsRow

        sort = renamed_regret(sort, "sort")
        if sort not in SORTS:
            raise SpadeError(f"sort must be one of {SORTS}, got {sort!r}.")
        query = _filtered(
            select(EnvironmentRow),
            skill=skill,
            kind=kind,
            origin=origin,
            status=status,
            suite=suite,
            include_retired=include_retired,
        )
        if sort == "hint_gain":
            best = (
                select(
                    PlayStatsRow.environment_id,
                    func.max(PlayStatsRow.hint_gain).label("hint_gain"),
                )
                .group_by(PlayStatsRow.environment_id)
                .subquery()
            )
            query = query.outerjoin(best, best.c.environment_id == EnvironmentRow.id).order_by(
                func.coalesce(best.c.hint_gain, -1e9).desc(), EnvironmentRow.id.desc()
            )
        elif sort == "name":
            query = query.order_by(EnvironmentRow.name, EnvironmentRow.version)
        else:
            query = query.order_by(EnvironmentRow.id.desc())
        query = query.offset(offset).limit(limit)
        with Session(self.engine) as session:
            return [env_record(r) for r in session.exec(query).all()]

    def count(
        self,
        *,
        skill: str | None = None,
        kind: str | None = None,
        origin: str | None = None,
        status: str | None = None,
        suite: str | None = None,
        include_retired: bool = True,
    ) -> int:
        """How many versions are registered (all of them, retired ones included), or how
        many match the filters of :meth:`list`: with ``include_retired=False`` and no
        ``status`` it counts what :meth:`list` would return without a limit."""
        from sqlmodel import Session, func, select

        from .tables import EnvironmentRow

        query = _filtered(
            select(func.count()).select_from(EnvironmentRow),
            skill=skill,
            kind=kind,
            origin=origin,
            status=status,
            suite=suite,
            include_retired=include_retired,
        )
        with Session(self.engine) as session:
            return int(session.exec(query).one())

    def counts(self) -> dict[str, dict[str, int]]:
        """Counts of versions by ``kind``, ``skill``, ``origin``, ``status`` and ``suite``
        (SQL GROUP BY; versions of no suite are not counted under ``suite``)."""
        from sqlmodel import Session, func, select

        from .tables import EnvironmentRow

        out: dict[str, dict[str, int]] = {}
        with Session(self.engine) as session:
            for field_name in ("kind", "skill", "origin", "status", "suite"):
                column = getattr(EnvironmentRow, field_name)
                rows = session.exec(select(column, func.count()).group_by(column)).all()
                out[field_name] = {value: int(n) for value, n in sorted(rows) if value != ""}
        return out

    # ----- JSON lines -----------------------------------------------------------------------
    def export_jsonl(self, path: str | Path, *, status: str | None = None) -> int:
        """Write every version (or those with ``status``) as one JSON object per line,
        with its play statistics (:func:`spade_envs.registry.formats.export_corpus`).

        The file appears whole or not at all. Returns the number of versions written.
        """
        from .formats import export_corpus

        return export_corpus(self, path, "jsonl", status=status)

    def iter_records(self, *, status: str | None = None, batch: int = 1000) -> Iterable[EnvRecord]:
        """Every version, oldest first (so versions re-import in order), read in batches."""
        from sqlmodel import Session, select

        from .tables import EnvironmentRow

        last = 0
        while True:
            query = select(EnvironmentRow).where(EnvironmentRow.id > last)
            if status is not None:
                query = query.where(EnvironmentRow.status == status)
            with Session(self.engine) as session:
                rows = session.exec(query.order_by(EnvironmentRow.id).limit(batch)).all()
                records = [env_record(r) for r in rows]
            if not records:
                return
            yield from records
            last = records[-1].key

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()


def _filtered(
    query: Any,
    *,
    skill: str | None,
    kind: str | None,
    origin: str | None,
    status: str | None,
    suite: str | None,
    include_retired: bool,
) -> Any:
    """``query`` restricted to the versions :meth:`Registry.list`'s filters select (one
    definition, so a count and the list it counts cannot disagree)."""
    from .tables import EnvironmentRow

    for column, value in (
        (EnvironmentRow.skill, skill),
        (EnvironmentRow.kind, kind),
        (EnvironmentRow.origin, origin),
        (EnvironmentRow.status, status),
        (EnvironmentRow.suite, suite),
    ):
        if value is not None:
            query = query.where(column == value)
    if status is None and not include_retired:
        query = query.where(EnvironmentRow.status != "retired")
    return query
