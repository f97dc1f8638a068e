"""Quarantined versions: a replay of a play diverged, and the evidence says where.

A version is quarantined by :meth:`Quarantines.quarantine` with its
:class:`~spade_envs.registry.records.QuarantineEvidence`: its status becomes
``quarantined``, which takes it out of pools, evaluation sets and the designer's memory
(they select ``validated`` versions), and the evidence is stored in the ``quarantines``
table. Validating the version again (``spade-envs revalidate``, :func:`validate_stored
<spade_envs.runtime.imports.validate_stored>`) clears it when it passes: the
status goes back to ``validated`` and the evidence stays as history (``cleared_at``).
Any version can be quarantined, packaged seeds included: the evidence is the evidence.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..error import SpadeError
from .records import EVIDENCE_TEXT_CHARS, EnvRecord, QuarantineEvidence, env_record

__all__ = ["QUARANTINED", "Quarantines"]

#: The status of a version whose replay diverged.
QUARANTINED = "quarantined"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _evidence(row: Any, env_id: str) -> QuarantineEvidence | None:
    # Built through from_dict: a row written by hand or by a hostile tool gives None,
    # never an exception on a page.
    return QuarantineEvidence.from_dict(
        {
            "env_id": env_id,
            "seed": row.seed,
            "step": row.step,
            "field": row.field,
            "played": row.played,
            "replayed": row.replayed,
            "detail": row.detail,
            "at": row.at,
        }
    )


class Quarantines:
    """The quarantine methods of :class:`~spade_envs.registry.store.Registry` (a mixin:
    it uses the registry's ``engine`` and ``_row``)."""

    engine: Any

    def _row(self, session: Any, id_: str) -> Any:  # provided by Registry
        raise NotImplementedError

    def quarantine(self, env_id: str, evidence: QuarantineEvidence) -> EnvRecord:
        """Set ``env_id``'s status to ``quarantined`` and store why, in one transaction.

        Each text of the evidence is stored up to :data:`EVIDENCE_TEXT_CHARS` characters
        (an environment chose them); an empty ``evidence.at`` becomes the time now.
        Quarantining a quarantined version again replaces the evidence shown (the old
        one stays in the history).

        Args:
            env_id: The version, ``spade/<Name>-v<N>``.
            evidence: Where its replay diverged; ``evidence.env_id`` must be ``env_id``.

        Raises:
            UnknownEnvironmentError: No such version (close matches are suggested).
            SpadeError: ``evidence`` is not a :class:`QuarantineEvidence` of ``env_id``.
        """
        from sqlmodel import Session

        from .tables import QuarantineRow

        if not isinstance(evidence, QuarantineEvidence):
            raise SpadeError(
                f"Registry.quarantine needs a QuarantineEvidence, got "
                f"{type(evidence).__name__}: build one with the seed, step and field where "
                "the replay diverged."
            )
        if evidence.env_id != env_id:
            raise SpadeError(
                f"The evidence is about {evidence.env_id!r}, not {env_id!r}: quarantine the "
                "version the replay audit played."
            )
        at = evidence.at or _now().isoformat(timespec="seconds")
        with Session(self.engine) as session:
            row = self._row(session, env_id)
            row.status = QUARANTINED
            session.add(row)
            session.add(
                QuarantineRow(
                    environment_id=row.id,
                    seed=evidence.seed,
                    step=evidence.step,
                    field=evidence.field,
                    played=evidence.played[:EVIDENCE_TEXT_CHARS],
                    replayed=evidence.replayed[:EVIDENCE_TEXT_CHARS],
                    detail=evidence.detail[:EVIDENCE_TEXT_CHARS],
                    at=at[:64],
                )
            )
            session.commit()
            session.refresh(row)
            return env_record(row)

    def quarantine_evidence(self, env_id: str) -> QuarantineEvidence | None:
        """Why ``env_id`` is quarantined: the newest evidence not cleared, or None.

        None also when the version is not quarantined (its status changed since, or it
        was validated again), or when the stored evidence is unreadable.

        Raises:
            UnknownEnvironmentError: No such version.
        """
        from sqlmodel import Session, col, select

        from .tables import QuarantineRow

        with Session(self.engine) as session:
            env = self._row(session, env_id)
            if env.status != QUARANTINED:
                return None
            row = session.exec(
                select(QuarantineRow)
                .where(
                    QuarantineRow.environment_id == env.id, col(QuarantineRow.cleared_at).is_(None)
                )
                .order_by(col(QuarantineRow.id).desc())
                .limit(1)
            ).first()
            return None if row is None else _evidence(row, env_from_row(env))

    def quarantine_history(
        self, env_id: str
    ) -> list[tuple[QuarantineEvidence, dt.datetime | None]]:
        """Every stored quarantine of ``env_id``, oldest first, each with when it was
        cleared (None: not cleared). Unreadable rows are left out.

        Raises:
            UnknownEnvironmentError: No such version.
        """
        from sqlmodel import Session, col, select

        from .tables import QuarantineRow

        with Session(self.engine) as session:
            env = self._row(session, env_id)
            ident = env_from_row(env)
            rows = session.exec(
                select(QuarantineRow)
                .where(QuarantineRow.environment_id == env.id)
                .order_by(col(QuarantineRow.id))
            ).all()
            out = []
            for row in rows:
                evidence = _evidence(row, ident)
                if evidence is not None:
                    out.append((evidence, row.cleared_at))
            return out

    def clear_quarantine(self, env_id: str) -> EnvRecord:
        """Release a quarantined version: status ``validated``, its evidence kept as
        history (marked cleared). Call it only once the version has passed validation
        again (:func:`~spade_envs.runtime.imports.validate_stored` does).

        Raises:
            UnknownEnvironmentError: No such version.
            SpadeError: The version is not quarantined.
        """
        from sqlmodel import Session, col, select

        from .tables import QuarantineRow

        with Session(self.engine) as session:
            row = self._row(session, env_id)
            if row.status != QUARANTINED:
                raise SpadeError(
                    f"{env_id} is not quarantined (its status is {row.status!r}); there is "
                    "nothing to clear."
                )
            now = _now()
            for evidence in session.exec(
                select(QuarantineRow).where(
                    QuarantineRow.environment_id == row.id, col(QuarantineRow.cleared_at).is_(None)
                )
            ).all():
                evidence.cleared_at = now
                session.add(evidence)
            row.status = "validated"
            session.add(row)
            session.commit()
            session.refresh(row)
            return env_record(row)


def env_from_row(row: Any) -> str:
    """The ID of an environment row."""
    from .ids import env_id

    return env_id(row.name, row.version)
