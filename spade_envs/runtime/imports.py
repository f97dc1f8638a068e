"""Imports carry no trust: metadata comes from the source, status from validation here.

:func:`prepare_rows` takes the rows an import file produced and decides everything the
file could lie about: each version's name, kind, skill and ``max_turns`` are read from
its source (:func:`spade_envs.validation.static.static_metadata`, without running it),
code under a seed's name that is not that seed is refused, and every new version is
validated in the sandbox (:func:`spade_envs.validation.validate_many`, in parallel with
progress). A version that passes is stored ``validated``, one that fails ``rejected``
(with its report, so ``spade-envs show`` says why); ``validate=False`` stores them
``unvalidated`` and ``gym.make`` warns about them. Rows whose source names no environment
class are not stored at all (there is no name to store them under) and are reported.

:func:`validate_stored` validates versions already in a registry (those imported with
``--no-validate``) and records the verdicts.

:func:`import_corpus` reads an export (:mod:`spade_envs.registry.formats`), prepares its
rows here and registers them: the registry stores, the runtime decides trust. The
validation package is imported inside the functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..core.metadata import SKILLS
from ..error import SpadeError
from ..registry._rows import Row, source_sha256
from ..registry.ids import check_name
from ..registry.trust import ReservedNameError, check_seed_name

__all__ = [
    "DEFAULT_SKILL",
    "derive_meta",
    "import_corpus",
    "prepare_rows",
    "validate_stored",
]

#: Skill of an imported version whose source declares none of :data:`SKILLS`.
DEFAULT_SKILL = "general"


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


def derive_meta(row: Row) -> None:
    """Fill ``row.meta`` from its source (read with ``ast``, never run).

    Name, kind, skill and ``max_turns`` come from the source only; the description too,
    falling back to the file's when the source has none. A skill outside :data:`SKILLS`
    becomes :data:`DEFAULT_SKILL`.

    Raises:
        SpadeError: The source defines no environment class that can be read statically,
            or its class name cannot be an environment name.
    """
    if row.meta is not None:
        check_name(row.meta.name)
        return
    from ..validation.static import static_metadata

    try:
        meta = static_metadata(row.source, origin="imported", parents=row.parents)
    except Exception:  # a SpadeError, or a parser failure on hostile input: a refusal
        meta = None
    if meta is None:
        raise SpadeError(
            f"no environment class could be read from its source ({_static_reason(row.source)})"
        )
    check_name(meta.name)
    row.meta = dataclasses.replace(
        meta,
        skill=meta.skill if meta.skill in SKILLS else DEFAULT_SKILL,
        description=meta.description or " ".join(row.description.split()),
    )


def prepare_rows(
    registry: Any,
    rows: Sequence[Row],
    problems: list[str],
    *,
    validate: bool = True,
    budget: str = "default",
    progress: Callable[[int, int, Any], None] | bool = False,
) -> list[Row]:
    """The rows to register, each with metadata from its source and a status of its own.

    Args:
        registry: The target registry (code it already holds is not validated again).
        rows: What the import file produced (their ``status`` is ignored).
        problems: Gets one line per row that is not imported, and why.
        validate: Validate new versions (``validated``/``rejected``); False stores them
            ``unvalidated``.
        budget: The validation budget (``fast``, ``default`` or ``thorough``).
        progress: Passed to :func:`~spade_envs.validation.validate_many` (True: a progress
            line on stderr).

    Returns:
        The rows to register, in input order.
    """
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
            problems.append(f"{where}: not imported: {exc}.")
            continue
        kept.append(row)
    known = registry.known_sha256(source_sha256(r.source) for r in kept)
    new = {}
    for row in kept:
        digest = source_sha256(row.source)
        if digest not in known:
            new.setdefault(digest, row.source)
    verdicts: dict[str, Any] = {}
    if validate and new:
        from ..validation import validate_many

        reports = validate_many(list(new.values()), budget=budget, progress=progress)
        verdicts = dict(zip(new, reports))
    for row in kept:
        report = verdicts.get(source_sha256(row.source))
        if report is not None:
            row.status = "validated" if report.passed else "rejected"
            row.report = report
        else:
            row.status = "unvalidated"  # not validated here (or already registered: no-op)
            row.report = None
    return kept


def validate_stored(
    registry: Any,
    ids: Iterable[str],
    *,
    budget: str = "default",
    progress: Callable[[int, int, Any], None] | bool = False,
) -> list[tuple[str, bool]]:
    """Validate stored versions, store each report, and set each status from its verdict.

    Args:
        registry: The registry holding the versions.
        ids: ``spade/<Name>-v<N>`` IDs (e.g. every ``unvalidated`` one).
        budget: The validation budget.
        progress: As for :func:`~spade_envs.validation.validate_many`.

    Returns:
        ``(id, passed)`` per version, in order; passed ones are now ``validated``, failed
        ones ``rejected``. Retired versions keep their status (the report is stored). A
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
        if status == "quarantined" and record.status != "quarantined":
            pass  # quarantined while this ran: that evidence is newer than this report
        elif status == "quarantined" and report.passed:
            registry.clear_quarantine(record.id)
        elif status != "retired":
            registry.set_status(record.id, "validated" if report.passed else "rejected")
        out.append((record.id, bool(report.passed)))
    return out


def import_corpus(
    registry: Any,
    path: Any,
    format: str | None = None,
    *,
    validate: bool = True,
    budget: str = "default",
    progress: Callable[[int, int, Any], None] | bool = False,
) -> Any:
    """Register the environments of an export (identical code is skipped).

    Nothing in the file is trusted: metadata comes from each source, and each new version
    is validated here (see the module docstring).

    Args:
        registry: The registry to write into.
        path: A ``.jsonl``/``.parquet`` file, a package directory or a SPADE pool directory.
        format: One of :data:`spade_envs.registry.formats.IMPORT_FORMATS`; None detects it
            from ``path``.
        validate: Validate every new version in the sandbox; passed ones are stored
            ``validated``, failed ones ``rejected`` (with the report). False stores them
            ``unvalidated`` (``gym.make`` then warns).
        budget: Validation budget: ``fast``, ``default`` or ``thorough``.
        progress: True for a progress line on stderr, or a ``(done, total, report)``
            callback (see :func:`spade_envs.validation.validate_many`).

    Returns:
        An :class:`~spade_envs.registry.formats.ImportResult`.

    Raises:
        SpadeError: Unknown format, or a malformed input (then nothing is imported).
    """
    from ..registry.formats import ImportResult, read_rows, register_rows

    problems: list[str] = []
    fmt, rows = read_rows(path, format, problems)
    result = ImportResult(format=fmt)
    result.problems.extend(problems)
    rows = prepare_rows(
        registry, rows, result.problems, validate=validate, budget=budget, progress=progress
    )
    register_rows(registry, rows, result)
    return result
