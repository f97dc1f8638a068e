"""What is attached to environment versions, besides their code: validation reports,
play statistics per policy checkpoint, grounding documents and embeddings.

A mixin of :class:`~spade_envs.registry.store.Registry`, kept apart so each module
stays readable; it relies on the registry's ``engine`` and ``_row``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import warnings
from collections.abc import Sequence
from typing import Any

from ..error import SpadeError
from .records import Document, EnvRecord, PlayStats, ValidationRecord, env_record, play_stats

__all__ = ["Attachments", "validation_row"]


def renamed_regret(value: str, what: str) -> str:
    """``hint_gain`` for the old order name ``regret``, with a DeprecationWarning; else
    ``value`` unchanged.

    The registry never stored the floored regret, only the hint gain under that name
    (before schema version 4), so an old ``regret`` order means the hint gain.
    """
    if value != "regret":
        return value
    warnings.warn(
        f"{what}='regret' is deprecated: the registry ranks by the hint gain (mean return "
        f"with the hint minus without it, not floored); use {what}='hint_gain'.",
        DeprecationWarning,
        stacklevel=3,
    )
    return "hint_gain"


class Attachments:
    """Validation reports, play statistics, documents and embeddings of a registry."""

    engine: Any

    def _row(self, session: Any, id_: str) -> Any:  # provided by Registry
        raise NotImplementedError

    # ----- validation reports ---------------------------------------------------------------
    def add_validation(self, id_: str, report: Any) -> None:
        """Store another validation report of a version (e.g. a later validator)."""
        from sqlmodel import Session

        from .tables import ValidationRow

        with Session(self.engine) as session:
            session.add(validation_row(ValidationRow, self._row(session, id_), report))
            session.commit()

    def validations(self, id_: str) -> list[ValidationRecord]:
        """Every stored validation report of a version, oldest first."""
        from sqlmodel import Session, select

        from .tables import ValidationRow

        with Session(self.engine) as session:
            row = self._row(session, id_)
            found = session.exec(
                select(ValidationRow)
                .where(ValidationRow.environment_id == row.id)
                .order_by(ValidationRow.id)
            ).all()
            return [
                ValidationRecord(
                    env_id=id_,
                    passed=v.passed,
                    budget=v.budget,
                    validator_version=v.validator_version,
                    duration_s=v.duration_s,
                    report=json.loads(v.report_json),
                    created_at=v.created_at,
                )
                for v in found
            ]

    # ----- play statistics ------------------------------------------------------------------
    def record_play_stats(
        self,
        id_: str,
        checkpoint: str,
        *,
        plays_with_hint: int,
        plays_without_hint: int,
        mean_return_with_hint: float,
        mean_return_without_hint: float,
        win_rate: float,
    ) -> PlayStats:
        """Store (or replace) how ``checkpoint`` does on a version; the hint gain is derived.

        Args:
            id_: The environment version.
            checkpoint: The policy checkpoint that played.
            plays_with_hint: Episodes played with the hint.
            plays_without_hint: Episodes played without it.
            mean_return_with_hint: Their mean return.
            mean_return_without_hint: Their mean return.
            win_rate: Fraction of episodes without the hint that were won.
        """
        from sqlalchemy.exc import IntegrityError
        from sqlmodel import Session, select

        from .tables import PlayStatsRow

        for value, what in ((mean_return_with_hint, "with"), (mean_return_without_hint, "without")):
            if value != value:  # NaN would poison every ranking
                raise SpadeError(f"mean_return_{what}_hint is NaN; pass a number.")
        if not 0.0 <= win_rate <= 1.0:
            raise SpadeError(f"win_rate must lie in [0, 1], got {win_rate}.")
        for _attempt in range(5):
            with Session(self.engine) as session:
                env = self._row(session, id_)
                row = session.exec(
                    select(PlayStatsRow).where(
                        PlayStatsRow.environment_id == env.id,
                        PlayStatsRow.checkpoint == checkpoint,
                    )
                ).first() or PlayStatsRow(environment_id=env.id, checkpoint=checkpoint)
                row.plays_with_hint = plays_with_hint
                row.plays_without_hint = plays_without_hint
                row.mean_return_with_hint = float(mean_return_with_hint)
                row.mean_return_without_hint = float(mean_return_without_hint)
                row.win_rate = float(win_rate)
                row.hint_gain = float(mean_return_with_hint) - float(mean_return_without_hint)
                row.updated_at = dt.datetime.now(dt.timezone.utc)
                session.add(row)
                try:
                    session.commit()
                except IntegrityError:
                    session.rollback()  # another writer inserted this pair first: update it
                    continue
                session.refresh(row)
                return play_stats(row, id_)
        raise SpadeError(f"Could not record play statistics of {id_}: too many concurrent writers.")

    def play_stats(self, id_: str) -> list[PlayStats]:
        """Statistics of every checkpoint that played a version, most recent first."""
        from sqlmodel import Session, select

        from .tables import PlayStatsRow

        with Session(self.engine) as session:
            env = self._row(session, id_)
            rows = session.exec(
                select(PlayStatsRow)
                .where(PlayStatsRow.environment_id == env.id)
                .order_by(PlayStatsRow.updated_at.desc())
            ).all()
            return [play_stats(r, id_) for r in rows]

    def play_stats_of(self, records: Sequence[EnvRecord]) -> dict[str, list[PlayStats]]:
        """:meth:`play_stats` of many versions in one query (an export reads them a batch
        at a time); versions never played are left out."""
        from sqlmodel import Session, select

        from .tables import PlayStatsRow

        ids = {r.key: r.id for r in records}
        out: dict[str, list[PlayStats]] = {}
        if not ids:
            return out
        with Session(self.engine) as session:
            rows = session.exec(
                select(PlayStatsRow)
                .where(PlayStatsRow.environment_id.in_(list(ids)))  # type: ignore[attr-defined]
                .order_by(PlayStatsRow.updated_at.desc())
            ).all()
            for row in rows:
                env_id = ids[row.environment_id]
                out.setdefault(env_id, []).append(play_stats(row, env_id))
        return out

    def played(
        self,
        *,
        skill: str | None = None,
        checkpoint: str | None = None,
        min_win_rate: float | None = None,
        max_win_rate: float | None = None,
        max_return_with_hint: float | None = None,
        status: str | None = "validated",
        order: str = "hint_gain",
        limit: int = 10,
    ) -> list[tuple[EnvRecord, PlayStats]]:
        """Versions with play statistics matching the filters, with those statistics.

        This is what the designer's memory asks: high-hint-gain seeds per skill
        (``order="hint_gain"`` with a win-rate band), too-easy examples
        (``min_win_rate=0.9``), too-hard ones (``max_win_rate=0.1``).

        Args:
            order: ``hint_gain`` (highest first), ``win_rate`` (highest first) or
                ``-win_rate`` (lowest first). ``regret``, its old name, still works
                with a DeprecationWarning.
        """
        from sqlmodel import Session, select

        from .tables import EnvironmentRow, PlayStatsRow

        order = renamed_regret(order, "order")
        orders = {
            "hint_gain": PlayStatsRow.hint_gain.desc(),
            "win_rate": PlayStatsRow.win_rate.desc(),
            "-win_rate": PlayStatsRow.win_rate.asc(),
        }
        if order not in orders:
            raise SpadeError(f"order must be one of {tuple(orders)}, got {order!r}.")
        query = select(EnvironmentRow, PlayStatsRow).join(
            PlayStatsRow, PlayStatsRow.environment_id == EnvironmentRow.id
        )
        if skill is not None:
            query = query.where(EnvironmentRow.skill == skill)
        if status is not None:
            query = query.where(EnvironmentRow.status == status)
        if checkpoint is not None:
            query = query.where(PlayStatsRow.checkpoint == checkpoint)
        if min_win_rate is not None:
            query = query.where(PlayStatsRow.win_rate >= min_win_rate)
        if max_win_rate is not None:
            query = query.where(PlayStatsRow.win_rate <= max_win_rate)
        if max_return_with_hint is not None:
            query = query.where(PlayStatsRow.mean_return_with_hint <= max_return_with_hint)
        query = query.order_by(orders[order], EnvironmentRow.id.desc()).limit(limit)
        with Session(self.engine) as session:
            out = []
            for env, stats in session.exec(query).all():
                record = env_record(env)
                out.append((record, play_stats(stats, record.id)))
            return out

    # ----- grounding documents --------------------------------------------------------------
    def add_document(self, text: str, source: str = "") -> int:
        """Store a grounding document (identical text is stored once); returns its id."""
        from sqlalchemy.exc import IntegrityError
        from sqlmodel import Session, select

        from .tables import DocumentRow

        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        for _attempt in range(5):
            with Session(self.engine) as session:
                row = session.exec(select(DocumentRow).where(DocumentRow.sha256 == digest)).first()
                if row is not None:
                    return int(row.id)
                row = DocumentRow(sha256=digest, source=source[:512], text=text)
                session.add(row)
                try:
                    session.commit()
                except IntegrityError:
                    session.rollback()
                    continue
                return int(row.id)
        raise SpadeError("Could not store the document: too many concurrent writers; retry.")

    def document(self, document_id: int) -> Document:
        """A stored grounding document."""
        from sqlmodel import Session

        from .tables import DocumentRow

        with Session(self.engine) as session:
            row = session.get(DocumentRow, document_id)
            if row is None:
                raise SpadeError(f"No grounding document with id {document_id}.")
            return Document(row.id, row.sha256, row.source, row.text, row.created_at)

    # ----- embeddings -----------------------------------------------------------------------
    def put_embeddings(self, model: str, items: Sequence[tuple[int, bytes, int, str]]) -> None:
        """Store embeddings ``(env key, float32 bytes, dim, text sha256)`` for ``model``.

        An existing embedding of the same version by the same model is replaced; a write
        that collides with another writer's is tried again (up to three times).
        """
        if not items:
            return
        from sqlalchemy.exc import IntegrityError

        for attempt in range(3):
            try:
                self._replace_embeddings(model, items)
                return
            except IntegrityError:
                # Another writer (the browser's background embedding, a trainer's memory)
                # stored some of the same versions between our delete and insert: again.
                if attempt == 2:
                    raise

    def _replace_embeddings(self, model: str, items: Sequence[tuple[int, bytes, int, str]]) -> None:
        from sqlmodel import Session, col, delete

        from .tables import EmbeddingRow

        with Session(self.engine) as session:
            keys = [key for key, *_ in items]
            for chunk in _chunks(keys, 500):
                session.exec(
                    delete(EmbeddingRow).where(
                        EmbeddingRow.model == model, col(EmbeddingRow.environment_id).in_(chunk)
                    )
                )
            session.add_all(
                EmbeddingRow(
                    environment_id=key, model=model, dim=dim, vector=blob, text_sha256=digest
                )
                for key, blob, dim, digest in items
            )
            session.commit()

    def embeddings(
        self, model: str, *, after: int = 0, limit: int | None = None
    ) -> list[tuple[int, int, bytes, str]]:
        """Stored embeddings of ``model`` as ``(row id, env key, float32 bytes, text sha256)``.

        Rows come in id order; pass the last row id as ``after`` to read only newer ones.
        """
        from sqlmodel import Session, select

        from .tables import EmbeddingRow

        query = (
            select(
                EmbeddingRow.id,
                EmbeddingRow.environment_id,
                EmbeddingRow.vector,
                EmbeddingRow.text_sha256,
            )
            .where(EmbeddingRow.model == model, EmbeddingRow.id > after)
            .order_by(EmbeddingRow.id)
        )
        if limit is not None:
            query = query.limit(limit)
        with Session(self.engine) as session:
            return [tuple(r) for r in session.exec(query).all()]

    def embedding_count(self, model: str) -> int:
        """How many versions ``model`` has embedded."""
        from sqlmodel import Session, func, select

        from .tables import EmbeddingRow

        with Session(self.engine) as session:
            query = (
                select(func.count()).select_from(EmbeddingRow).where(EmbeddingRow.model == model)
            )
            return int(session.exec(query).one())

    def without_embedding(
        self, model: str, *, after: int = 0, limit: int = 1000
    ) -> list[EnvRecord]:
        """Versions that ``model`` has not embedded yet, oldest first.

        Args:
            model: The embedder's name.
            after: Only versions whose key is larger (to walk a large corpus in batches).
            limit: At most this many.
        """
        from sqlmodel import Session, and_, select

        from .tables import EmbeddingRow, EnvironmentRow

        # An anti-join walks the environments' primary key, so each batch costs the
        # batch, not a scan of everything embedded so far.
        query = (
            select(EnvironmentRow)
            .outerjoin(
                EmbeddingRow,
                and_(EmbeddingRow.environment_id == EnvironmentRow.id, EmbeddingRow.model == model),
            )
            .where(EmbeddingRow.id.is_(None), EnvironmentRow.id > after)
            .order_by(EnvironmentRow.id)
            .limit(limit)
        )
        with Session(self.engine) as session:
            return [env_record(r) for r in session.exec(query).all()]


def _chunks(items: Sequence[Any], size: int) -> Any:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def validation_row(table: Any, env_row: Any, report: Any) -> Any:
    timings = getattr(report, "timings", None) or {}
    return table(
        environment_id=env_row.id,
        passed=bool(report.passed),
        budget=str(getattr(report, "budget", "")),
        validator_version=str(getattr(report, "validator_version", "")),
        report_json=report.to_json(),
        duration_s=float(timings.get("total", 0.0)),
    )
