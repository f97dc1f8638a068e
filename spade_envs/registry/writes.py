"""Writing new environment versions: idempotent by source hash, safe under races.

The ``(name, version)`` and ``sha256`` unique constraints decide races between writers;
a losing writer re-reads instead of writing twice, and every batch is one transaction.
:class:`~spade_envs.registry.store.Registry` exposes this as ``register``,
``register_with_outcome`` and ``register_many``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from ..core.metadata import KINDS, ORIGINS, EnvMetadata
from ..error import SpadeError
from .attachments import _chunks, validation_row
from .ids import check_name
from .records import EnvRecord, env_record

__all__ = ["STATUSES", "register_items", "source_digest"]

#: Lifecycle of an environment version. ``unvalidated``: imported without validation
#: (``--no-validate``); ``gym.make`` warns about it (and about ``rejected`` ones), and
#: about ``retired`` ones, which ``Registry.list`` hides unless asked. ``quarantined``: a
#: replay of a play diverged (``Registry.quarantine`` stores the evidence); it is out of
#: pools, evaluation sets and memory until validated again.
STATUSES = ("candidate", "validated", "rejected", "retired", "unvalidated", "quarantined")


def register_items(
    engine: Any,
    items: Sequence[tuple[str, EnvMetadata]],
    *,
    status: str,
    document_id: int | None,
    model: str,
    run_id: str | None,
    prompt_sha256: str,
    hint: str,
    extra: dict[str, Any] | None,
    reports: Sequence[Any] | None,
    suite: str,
) -> list[tuple[EnvRecord, bool]]:
    """Register ``items`` in one transaction (see :meth:`Registry.register_many`).

    Returns:
        Each item's record and whether this call created it (False: identical code was
        already stored, or came earlier in the same batch).
    """
    from sqlalchemy.exc import IntegrityError
    from sqlmodel import Session, col, func, select

    from .tables import EnvironmentRow, ValidationRow
    from .trust import check_seed_name

    if status not in STATUSES:
        raise SpadeError(f"status must be one of {STATUSES}, got {status!r}.")
    if status == "quarantined":
        raise SpadeError(
            "A new version cannot be registered quarantined: register it, then call "
            "Registry.quarantine(id, evidence) with the replay that diverged."
        )
    for source, meta in items:
        check_name(meta.name)
        check_seed_name(meta.name, source)
        if meta.kind not in KINDS or meta.origin not in ORIGINS:
            raise SpadeError(
                f"{meta.name}: kind must be in {KINDS} and origin in {ORIGINS}, "
                f"got {meta.kind!r} and {meta.origin!r}."
            )
    reports = list(reports) if reports is not None else [None] * len(items)
    digests = [source_digest(source) for source, _ in items]
    last_error: Exception | None = None
    for _attempt in range(20):
        with Session(engine) as session:
            found: dict[str, Any] = {}
            for chunk in _chunks(sorted(set(digests)), 500):
                for row in session.exec(
                    select(EnvironmentRow).where(col(EnvironmentRow.sha256).in_(chunk))
                ):
                    found[row.sha256] = row
            names = sorted({meta.name for _, meta in items})
            latest: dict[str, int] = {}
            for chunk in _chunks(names, 500):
                for name, top in session.exec(
                    select(EnvironmentRow.name, func.max(EnvironmentRow.version))
                    .where(col(EnvironmentRow.name).in_(chunk))
                    .group_by(EnvironmentRow.name)
                ):
                    latest[name] = top
            rows: list[Any] = []
            created: set[str] = set()
            pending_reports: list[tuple[Any, Any]] = []
            for (source, meta), digest, report in zip(items, digests, reports):
                if digest in found:
                    rows.append(found[digest])
                    continue
                created.add(digest)
                latest[meta.name] = latest.get(meta.name, 0) + 1
                row = EnvironmentRow(
                    name=meta.name,
                    version=latest[meta.name],
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
                    prompt_sha256=prompt_sha256,
                    hint=hint,
                    extra_json=json.dumps(extra or {}),
                    suite=suite,
                )
                found[digest] = row  # the same code twice in one batch: one version
                session.add(row)
                rows.append(row)
                if report is not None:
                    pending_reports.append((row, report))
            try:
                if pending_reports:
                    session.flush()  # gives the new rows their keys
                    for row, report in pending_reports:
                        session.add(validation_row(ValidationRow, row, report))
                session.commit()
            except IntegrityError as exc:
                session.rollback()  # another writer took a version or the same code
                last_error = exc
                continue
            for row in rows:
                session.refresh(row)
            # The same new code twice in one batch: only its first item is new.
            outcomes = []
            for row in rows:
                outcomes.append((env_record(row), row.sha256 in created))
                created.discard(row.sha256)
            return outcomes
    # Twenty conflicts in a row are other writers, or a constraint no retry satisfies (a
    # run_id or document_id the database does not hold): say which the database said.
    detail = str(getattr(last_error, "orig", None) or last_error).splitlines()[0][:300]
    raise SpadeError(
        "Could not register: the database refused it 20 times (other writers taking the "
        f"same versions, or a reference it does not hold): {detail}; retry, or check the "
        "run_id and document_id given."
    )


def source_digest(text: str) -> str:
    """The SHA-256 (hex) that identifies a version's source."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
