"""Imports carry no trust: metadata comes from the source, status from validation here.

:func:`import_corpus` is the one import path of every format (:mod:`spade_envs.registry.formats`):

1. The file is read whole and checked (a malformed file imports nothing).
2. :func:`prepare_rows` decides everything the file could lie about: each version's name,
   kind, skill and ``max_turns`` are read from its source (:func:`source_metadata`,
   without running it; a SPADE pool's skill label is used when the source declares none),
   and code under a seed's name that is not that seed is refused. Rows whose source names
   no environment class are not stored (there is no name to store them under) and are
   reported.
3. :func:`import_rows` validates every version the registry does not hold yet in the
   sandbox, in parallel with progress (:func:`spade_envs.validation.validate_iter`), and
   registers each one **in its own transaction** as soon as its verdict is in (versions of
   one name in input order). A version that passes is stored ``validated``; one that fails
   ``rejected``, with its report, so ``spade-envs show`` says why; one that validation
   could not prove (the report's ``unproven``) ``unvalidated`` with the reason in
   ``extra["unproven"]``. ``validate=False`` stores them ``unvalidated`` and ``gym.make``
   warns about them. An interrupted import keeps what finished, and running it again
   continues it: identical code is never validated or stored twice.

:func:`validate_stored` validates versions already in a registry (those imported with
``--no-validate``) and records the verdicts. The validation package is imported inside
the functions.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..core.metadata import SKILLS, EnvMetadata
from ..error import SpadeError
from ..registry._rows import Row, source_sha256
from ..registry.ids import check_name
from ..registry.spade_pool import class_facts, source_max_turns, spade_skill
from ..registry.trust import ReservedNameError, check_seed_name

__all__ = [
    "DEFAULT_SKILL",
    "derive_meta",
    "import_corpus",
    "import_rows",
    "prepare_rows",
    "report_verdict",
    "source_metadata",
    "validate_stored",
]

#: Skill of an imported version whose source declares none of :data:`SKILLS`.
DEFAULT_SKILL = "general"
#: ``extra`` keys only this import writes (a file's own are dropped).
_VERDICT_KEYS = ("unproven",)

Progress = Callable[[int, int, Any], None]


def _static_reason(source: str) -> str:
    """The first static-check failure of ``source`` (why no metadata could be read)."""
    try:
        from ..validation.budget import get_budget
        from ..validation.static import static_checks

        results, _info = static_checks(source, get_budget("fast"))
    except Exception as exc:  # the validator is being changed: never let it end an import
        return f"{type(exc).__name__}: {exc}"
    for result in results:
        if not result.passed and not result.skipped:
            return f"{result.name}: {result.reason}"
    return "no environment class"


def source_metadata(
    source: str,
    *,
    origin: str = "imported",
    parents: tuple[str, ...] = (),
    fallback: EnvMetadata | None = None,
    skill_label: str = "",
) -> EnvMetadata:
    """What is registered about ``source``, read without running it: the metadata of
    :func:`~spade_envs.validation.static.static_metadata`, with ``max_turns`` by SPADE's
    loader semantics (:func:`~spade_envs.registry.spade_pool.source_max_turns`), kind
    ``tool`` for a subclass of SPADE's ``ToolUseBaseEnv`` and the class docstring as the
    description when it declares none: the same for ``spade-envs register`` and every
    import.

    Args:
        source: The environment module.
        origin: ``"imported"`` or ``"designer"``.
        parents: Lineage.
        fallback: Metadata read by a pool reader, used when the static checks find no
            class.
        skill_label: A SPADE skill label, mapped with
            :func:`~spade_envs.registry.spade_pool.spade_skill` when the source declares
            no skill of :data:`SKILLS`.

    Raises:
        SpadeError: No environment class can be read statically.
    """
    from ..validation.static import static_metadata

    try:
        meta: EnvMetadata | None = static_metadata(source, origin=origin, parents=parents)
    except Exception:  # a SpadeError, or a parser failure on hostile input: a refusal
        meta = None
    if meta is None:
        if fallback is None:
            raise SpadeError(
                f"no environment class could be read from its source ({_static_reason(source)})"
            )
        meta = dataclasses.replace(fallback, origin=origin, parents=tuple(parents))
    tool_use, docstring = class_facts(source, meta.name)
    if tool_use:  # a subclass of SPADE's ToolUseBaseEnv acts through tool calls
        meta = dataclasses.replace(meta, kind="tool")
    if not meta.description:
        meta = dataclasses.replace(meta, description=docstring)
    if meta.skill in SKILLS:
        skill = meta.skill
    else:
        skill = spade_skill(skill_label) if skill_label.strip() else DEFAULT_SKILL
    return dataclasses.replace(
        meta,
        skill=skill if skill in SKILLS else DEFAULT_SKILL,
        max_turns=source_max_turns(source, meta.name, meta.max_turns),
    )


def derive_meta(row: Row) -> None:
    """Fill ``row.meta`` from its source (read with ``ast``, never run).

    Name, kind, skill and ``max_turns`` come from the source only (a SPADE pool's skill
    label, ``extra["spade"]["skill"]``, when the source declares no skill); the
    description too, falling back to the file's when the source has none. A skill outside
    :data:`SKILLS` becomes :data:`DEFAULT_SKILL`.

    Raises:
        SpadeError: The source defines no environment class that can be read statically,
            or its class name cannot be an environment name.
    """
    spade = row.extra.get("spade") if isinstance(row.extra, dict) else None
    label = spade.get("skill") if isinstance(spade, dict) else None
    meta = source_metadata(
        row.source,
        parents=row.parents,
        fallback=row.meta,
        skill_label=label if isinstance(label, str) else "",
    )
    check_name(meta.name)
    row.meta = dataclasses.replace(
        meta, description=meta.description or " ".join(row.description.split())
    )


def prepare_rows(registry: Any, rows: Sequence[Row], problems: list[str]) -> list[Row]:
    """The rows to register, each with metadata derived from its source.

    Args:
        registry: The target registry (unused; kept for callers that pass it).
        rows: What the import file produced (their ``status`` is ignored).
        problems: Gets one line per row that is not imported, and why.

    Returns:
        The rows to register, in registration order (by ``version`` when every row has
        one, which keeps each name's versions in order; else input order).
    """
    del registry
    kept: list[Row] = []
    for row in rows:
        where = row.where or row.label or "a row"
        try:
            derive_meta(row)
            assert row.meta is not None
            check_seed_name(row.meta.name, row.source)
        except ReservedNameError as exc:
            problems.append(f"{where}: not imported: {exc}")
            continue
        except SpadeError as exc:
            problems.append(f"{where}: not imported: {str(exc).rstrip('.')}.")
            continue
        row.extra = {k: v for k, v in row.extra.items() if k not in _VERDICT_KEYS}
        row.status, row.report = "unvalidated", None  # decided here, never by the file
        kept.append(row)
    if kept and all(r.version is not None for r in kept):
        kept.sort(key=lambda r: r.version or 0)  # stable: keeps each name's order
    return kept


def report_verdict(report: Any) -> tuple[str, str]:
    """``(status, unproven reason)`` of a :class:`~spade_envs.validation.report.
    ValidationReport`: ``validated``, ``rejected``, or ``unvalidated`` when the checks
    that need a solution could not run (then the reason is the report's ``unproven``)."""
    status = report.verdict()
    if status not in ("validated", "rejected", "unvalidated"):  # never stored as such
        raise SpadeError(f"A validation report gave the unknown verdict {status!r}.")
    if status != "unvalidated":
        return status, ""
    return status, str(report.unproven or "the validator could not prove it (no reason given)")


def _print_progress(done: int, total: int, report: Any) -> None:
    status, _ = report_verdict(report)
    verdict = {"validated": "ok", "unvalidated": "unproven"}.get(status, status)
    end = "\n" if done == total else ""
    sys.stderr.write(
        f"\rvalidated {done}/{total} ({report.env_name or '?'}: {verdict})".ljust(70) + end
    )
    sys.stderr.flush()


def import_rows(
    registry: Any,
    rows: Sequence[Row],
    result: Any,
    *,
    validate: bool = True,
    budget: str = "default",
    progress: Progress | bool = False,
    workers: int | None = None,
) -> None:
    """Validate and register prepared rows, each new version in its own transaction.

    Versions are registered as their verdicts come in (a name's versions in row order), so
    an interrupted import (``KeyboardInterrupt``) leaves only complete versions, sets
    ``result.interrupted`` and is continued by running it again.

    Args:
        registry: The registry to write into.
        rows: Rows from :func:`prepare_rows`, in registration order.
        result: The :class:`~spade_envs.registry.formats.ImportResult` to fill.
        validate: Validate new versions; False stores them ``unvalidated``.
        budget: The validation budget.
        progress: A ``(done, total, report)`` callback, or True for a line on stderr.
        workers: Parallel validations (default: ``SPADE_VALIDATION_WORKERS``, else one
            per core).
    """
    if progress is True:
        progress = _print_progress
    digests = [source_sha256(r.source) for r in rows]
    known = registry.known_sha256(digests)
    todo: list[int] = []
    claimed: set[str] = set()
    for index, digest in enumerate(digests):
        if digest not in known and digest not in claimed:
            claimed.add(digest)
            todo.append(index)
    queues: dict[str, deque[int]] = {}
    for index in todo:
        queues.setdefault(rows[index].meta.name, deque()).append(index)  # type: ignore[union-attr]
    ready: set[int] = set()
    new: dict[int, Any] = {}

    def release(name: str) -> None:
        queue = queues[name]
        while queue and queue[0] in ready:
            index = queue.popleft()
            try:
                outcome = _register(registry, rows[index])
            except SpadeError as exc:  # e.g. a seed's name taken by a concurrent writer
                where = rows[index].where or rows[index].label or "a row"
                result.problems.append(f"{where}: not imported: {exc}")
                continue
            if outcome.new:
                new[index] = outcome.record

    try:
        if validate and todo:
            from ..validation import validate_iter

            finished = validate_iter([rows[i].source for i in todo], budget=budget, workers=workers)
            try:
                for done, (position, report) in enumerate(finished, 1):
                    index = todo[position]
                    rows[index].status, unproven = report_verdict(report)
                    rows[index].report = report
                    if unproven:
                        rows[index].extra = {**rows[index].extra, "unproven": unproven}
                    ready.add(index)
                    release(rows[index].meta.name)  # type: ignore[union-attr]
                    if progress:
                        progress(done, len(todo), report)
            finally:
                finished.close()  # stops the validation processes now, not when collected
        else:
            for index in todo:
                ready.add(index)
                release(rows[index].meta.name)  # type: ignore[union-attr]
    except KeyboardInterrupt:
        result.interrupted = True
    _account(registry, rows, digests, new, result)


def _register(registry: Any, row: Row) -> Any:
    """One version in one transaction, with its report."""
    assert row.meta is not None
    return registry.register_with_outcome(
        row.source,
        row.meta,
        status=row.status,
        model=row.model,
        hint=row.hint,
        prompt_sha256=row.prompt_sha256,
        extra=row.extra,
        report=row.report,
    )


def _account(
    registry: Any, rows: Sequence[Row], digests: list[str], new: dict[int, Any], result: Any
) -> None:
    """Fill ``result`` in row order: new versions, identical code already registered."""
    stored = registry.by_sha256(d for i, d in enumerate(digests) if i not in new)
    first_new = {digests[i]: i for i in new}
    for index, (row, digest) in enumerate(zip(rows, digests)):
        record = new.get(index)
        if record is not None:
            result.imported.append(record)
            spade = record.extra.get("spade")
            if isinstance(spade, dict) and isinstance(spade.get("memory"), dict):
                result.spade_stats[record.id] = dict(spade["memory"])
        else:
            record = stored.get(digest)
            if record is None and digest in first_new:
                record = new[first_new[digest]]  # the same code twice in one file
            if record is None:
                continue  # not done (interrupted)
            result.skipped += 1
        if row.hint and result.format == "spade-pool":
            result.hints[record.id] = row.hint


def validate_stored(
    registry: Any,
    ids: Iterable[str],
    *,
    budget: str = "default",
    progress: Callable[[int, int, Any], None] | bool = False,
) -> list[tuple[str, str]]:
    """Validate stored versions, store each report, and set each status from its verdict.

    Args:
        registry: The registry holding the versions.
        ids: ``spade/<Name>-v<N>`` IDs (e.g. every ``unvalidated`` one).
        budget: The validation budget.
        progress: As for :func:`~spade_envs.validation.validate_many`.

    Returns:
        ``(id, verdict)`` per version, in order: ``validated``, ``rejected``, or
        ``unvalidated`` (unproven: no solution could be checked), which is also its new
        status. Retired versions keep their status (the report is stored). A
        quarantined version that passes is released: ``validated``, its evidence kept as
        history (see :mod:`~spade_envs.registry.quarantine`); one that fails is ``rejected``.
    """
    from ..validation import validate_many

    records = [registry.get(i) for i in ids]
    if not records:
        return []
    # Versions the suite importer stored (the only writer of ``suite``) are validated as
    # its sources, every other one as ordinary code: a suite-shaped module registered
    # any other way never gets the suite tasks' exemption from the hint checks.
    reports: list[Any] = [None] * len(records)
    for from_suite in (False, True):
        chosen = [i for i, r in enumerate(records) if bool(r.suite) is from_suite]
        if chosen:
            found = validate_many(
                [records[i].source for i in chosen],
                budget=budget,
                progress=progress,
                suite_import=from_suite,
            )
            for i, report in zip(chosen, found):
                reports[i] = report
    out = []
    for record, report in zip(records, reports):
        registry.add_validation(record.id, report)
        status = registry.get(record.id).status
        verdict, _unproven = report_verdict(report)  # an unproven one stays unvalidated
        if status == "quarantined" and record.status != "quarantined":
            pass  # quarantined while this ran: that evidence is newer than this report
        elif status == "quarantined" and report.passed:
            registry.clear_quarantine(record.id)
        elif status != "retired":
            registry.set_status(record.id, verdict)
        out.append((record.id, verdict))
    return out


def import_corpus(
    registry: Any,
    path: Any,
    format: str | None = None,
    *,
    validate: bool = True,
    budget: str = "default",
    progress: Progress | bool = False,
    workers: int | None = None,
) -> Any:
    """Register the environments of an export or a SPADE pool (identical code is skipped).

    Nothing in the file is trusted: metadata comes from each source, and each new version
    is validated here and registered in its own transaction as soon as its verdict is in
    (see the module docstring); running an interrupted import again continues it.

    Args:
        registry: The registry to write into.
        path: A ``.jsonl``/``.parquet`` file, a package directory or a SPADE pool directory.
        format: One of :data:`spade_envs.registry.formats.IMPORT_FORMATS`; None detects it
            from ``path``.
        validate: Validate every new version in the sandbox; passed ones are stored
            ``validated``, failed ones ``rejected`` (with the report), unproven ones
            ``unvalidated`` with the reason. False stores them ``unvalidated``
            (``gym.make`` then warns).
        budget: Validation budget: ``fast``, ``default`` or ``thorough``.
        progress: True for a progress line on stderr, or a ``(done, total, report)``
            callback.
        workers: Parallel validations (default: ``SPADE_VALIDATION_WORKERS``, else one per
            core).

    Returns:
        An :class:`~spade_envs.registry.formats.ImportResult`.

    Raises:
        SpadeError: Unknown format, or a malformed input (then nothing is imported).
    """
    from ..registry.formats import ImportResult, read_rows

    problems: list[str] = []
    notes: list[str] = []
    fmt, rows = read_rows(path, format, problems, notes)
    result = ImportResult(format=fmt, notes=notes)
    result.problems.extend(problems)
    rows = prepare_rows(registry, rows, result.problems)
    import_rows(
        registry,
        rows,
        result,
        validate=validate,
        budget=budget,
        progress=progress,
        workers=workers,
    )
    return result
