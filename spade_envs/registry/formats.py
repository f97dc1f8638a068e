"""Exporting and importing the corpus in several formats.

``export_corpus`` writes ``jsonl`` (one JSON object per version), ``parquet`` (the same
columns, one row per version), ``package`` (a directory that ``pip install``s and
registers every environment with Gymnasium on import) or ``spade-pool`` (a run folder in
the public SPADE code's layout, :mod:`.spade_export`), of every version or a selection.
``read_rows`` reads those four (a SPADE pool also in the layout of SPADE's published
static corpus); :func:`spade_envs.runtime.imports.import_corpus` validates the rows and
registers them, each version in its own transaction (the registry is storage: it never
validates).

Imports carry no trust. A file's ``status``, ``kind``, ``skill`` and ``max_turns`` are
never read: each version's metadata is derived from its source (read with :mod:`ast`,
never executed here) and every new version is validated in the sandbox on import, in
parallel with progress, and stored ``validated`` or ``rejected`` with its report;
``validate=False`` (``--no-validate``) stores them ``unvalidated``, and ``gym.make`` warns
about those. Files are read as regular files only, with size and JSON-nesting limits
(:mod:`.limits`).

A malformed input imports nothing: every row or file is checked before the first write.
A version that is well-formed but cannot be stored (its source names no environment
class, or it takes a seed's name without being that seed) is reported in
:attr:`ImportResult.problems` and skipped; so is a bad game file of a ``spade-pool``.

This module holds the public API and the jsonl and parquet formats; the package format
lives in :mod:`.package_export`, the SPADE-pool reader in :mod:`.spade_pool` and its
writer in :mod:`.spade_export`, and the checked row they all produce in :mod:`._rows`.
Only the public API of :class:`~spade_envs.registry.Registry` is used.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..error import SpadeError, suggest
from ._rows import REQUIRED, Row, check_row
from .limits import (
    MAX_IMPORT_FILE_BYTES,
    MAX_JSONL_LINE_BYTES,
    open_regular,
    parse_json,
)
from .package_export import check_package_target, export_package, find_manifest, read_package
from .records import EnvRecord
from .spade_export import check_pool_target, export_pool
from .spade_pool import DEFAULT_POOL_SKILL, find_pool, read_pool, spade_skill
from .store import STATUSES, Registry

__all__ = [
    "DEFAULT_POOL_SKILL",
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "ImportResult",
    "detect_format",
    "export_corpus",
    "export_parquet",
    "read_rows",
    "select_records",
    "spade_skill",
]

EXPORT_FORMATS = ("jsonl", "parquet", "package", "spade-pool", "verifiers")
IMPORT_FORMATS = ("jsonl", "parquet", "package", "spade-pool")


@dataclass
class ImportResult:
    """What an import did.

    Attributes:
        format: The format that was read.
        imported: Records of the versions this import created, in input order (their
            status: ``validated``, ``rejected`` or ``unvalidated``; an unvalidated one
            that validation could not prove has the reason in ``extra["unproven"]``).
        skipped: Inputs whose code was already registered (identical code is a no-op).
        problems: One line per input (or part of one) that was not imported, and why.
        notes: What the input lacked without anything being skipped (a SPADE pool
            without ``env_memory.json``).
        hints: Environment ID -> hint text of a ``spade-pool``'s hint files (also
            stored as the hint of each new version).
        spade_stats: Environment ID -> SPADE's own statistics of a new version from the
            pool's ``env_memory.json`` (``actor_win_rate``, ``regret``, ...), stored as
            SPADE's in ``extra["spade"]["memory"]``, apart from this registry's play
            statistics.
        interrupted: The import was interrupted (Ctrl-C): what finished is registered,
            and the same import continues it.
    """

    format: str
    imported: list[EnvRecord] = field(default_factory=list)
    skipped: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    hints: dict[str, str] = field(default_factory=dict)
    spade_stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    interrupted: bool = False

    def counts(self) -> dict[str, int]:
        """New versions by outcome: validated, rejected, unproven (stored unvalidated
        because validation could not prove them) and unvalidated (not validated)."""
        unproven = sum(
            r.status == "unvalidated" and bool(r.extra.get("unproven")) for r in self.imported
        )
        counts = {s: sum(r.status == s for r in self.imported) for s in ("validated", "rejected")}
        counts["unproven"] = unproven
        counts["unvalidated"] = sum(r.status == "unvalidated" for r in self.imported) - unproven
        return counts

    def summary(self) -> str:
        """One line: how many were imported (by outcome), skipped and refused."""
        text = f"imported {len(self.imported)} environment version(s)"
        if self.imported:
            counts = self.counts()
            text += " (" + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + ")"
        if self.skipped:
            text += f", {self.skipped} already registered (identical code)"
        if self.problems:
            text += f", {len(self.problems)} skipped with problems"
        if self.interrupted:
            text += "; interrupted before the end"
        return text


def _unknown_format(fmt: Any, formats: tuple[str, ...], action: str) -> SpadeError:
    hint = suggest(str(fmt), formats)
    return SpadeError(
        f"Unknown {action} format {fmt!r}.{hint} The {action} formats are: {', '.join(formats)}."
    )


def _normalise_format(fmt: Any, formats: tuple[str, ...], action: str) -> str:
    name = fmt.strip().lower().replace("_", "-") if isinstance(fmt, str) else ""
    if name not in formats:
        raise _unknown_format(fmt, formats, action)
    return name


# ----- export -------------------------------------------------------------------------------
def select_records(
    registry: Registry,
    *,
    status: str | None = None,
    skill: str | None = None,
    kind: str | None = None,
    origin: str | None = None,
    suite: str | None = None,
    ids: Iterable[str] | None = None,
) -> Iterable[EnvRecord]:
    """The registered versions matching every given filter, oldest first.

    Raises:
        SpadeError: An unknown status, or an ID that is not registered.
    """
    if status is not None and status not in STATUSES:
        raise SpadeError(f"status must be one of {STATUSES}, got {status!r}.")
    if ids is not None:
        chosen = [registry.get(i) for i in dict.fromkeys(ids)]  # unknown IDs raise here
        records: Iterable[EnvRecord] = sorted(chosen, key=lambda r: r.key)
    else:
        records = registry.iter_records(status=status)
    wanted = {"status": status, "skill": skill, "kind": kind, "origin": origin, "suite": suite}
    return (
        r
        for r in records
        if all(value is None or getattr(r, key) == value for key, value in wanted.items())
    )


def export_corpus(
    registry: Registry,
    out: str | Path,
    format: str,
    *,
    status: str | None = None,
    skill: str | None = None,
    kind: str | None = None,
    origin: str | None = None,
    suite: str | None = None,
    ids: Iterable[str] | None = None,
    problems: list[str] | None = None,
) -> int:
    """Write every registered version (or a selection) to ``out``.

    Args:
        registry: The registry to read.
        out: A file (``jsonl``, ``parquet``) or a new or empty directory (``package``,
            ``spade-pool``, ``verifiers``).
        format: ``"jsonl"``, ``"parquet"``, ``"package"``, ``"spade-pool"`` or
            ``"verifiers"`` (a package that is a verifiers 0.4 environment).
        status, skill, kind, origin, suite: Only versions with these values (``suite``:
            the external suite an import came from, e.g. ``rlve``).
        ids: Only these versions (``spade/<Name>-v<N>``).
        problems: Gets one line per selected version that was not written, and why
            (``spade-pool``: versions SPADE's loader could not load).

    Returns:
        The number of versions written.

    Raises:
        SpadeError: Unknown format, status or ID, a non-empty target directory, or
            pyarrow missing for ``parquet``.
    """
    fmt = _normalise_format(format, EXPORT_FORMATS, "export")
    out = Path(out)
    if fmt in ("package", "verifiers"):
        check_package_target(out)  # before reading the registry: fail fast
    elif fmt == "spade-pool":
        check_pool_target(out)
    # Oldest first, so an import registers the versions of a name in order.
    records = select_records(
        registry, status=status, skill=skill, kind=kind, origin=origin, suite=suite, ids=ids
    )
    if fmt == "jsonl":
        return _export_jsonl(_with_play_stats(registry, records), out)
    if fmt == "parquet":
        return export_parquet(records, out, registry=registry)
    if fmt in ("package", "verifiers"):
        return export_package(list(records), out, verifiers=fmt == "verifiers")
    return export_pool(records, out, problems)


def _with_play_stats(
    registry: Registry, records: Iterable[EnvRecord]
) -> Iterable[dict[str, Any]]:
    """Each record as an export row, with its play statistics (``play_stats``: the
    registry's numbers, which an import keeps as provenance, never as its own)."""
    for batch in _batches(records, 1000):
        stats = registry.play_stats_of(batch)
        for record in batch:
            yield export_row(record, stats.get(record.id, []))


def export_row(record: EnvRecord, stats: Iterable[Any] = ()) -> dict[str, Any]:
    """A version as exported: its record, and its play statistics as plain dicts."""
    row = record.to_dict()
    row["play_stats"] = [
        {
            **{k: v for k, v in dataclasses.asdict(s).items() if k not in ("env_id", "updated_at")},
            "updated_at": s.updated_at.isoformat() if s.updated_at else None,
        }
        for s in stats
    ]
    return row


def _export_jsonl(rows: Iterable[dict[str, Any]], out: Path) -> int:
    """Export rows as JSON lines (the file replaced atomically)."""
    tmp = out.with_name(out.name + ".partial")
    written = 0
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                written += 1
        tmp.replace(out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return written


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise SpadeError(
            f"The parquet format needs pyarrow ({exc}); install it with "
            "`pip install 'spade-envs[parquet]'`."
        ) from exc
    return pa, pq


def export_parquet(
    records: Iterable[EnvRecord], out: str | Path, *, registry: Registry | None = None
) -> int:
    """Write ``records`` to the Parquet file ``out`` (replaced atomically), with their
    play statistics from ``registry`` when given (a JSON text column, ``play_stats``).

    Returns:
        The number of versions written.

    Raises:
        SpadeError: pyarrow is missing.
    """
    out = Path(out)
    pa, pq = _pyarrow()
    text, integer = pa.string(), pa.int64()
    schema = pa.schema(
        [
            ("id", text), ("name", text), ("version", integer), ("sha256", text),
            ("source", pa.large_string()), ("class_name", text), ("kind", text),
            ("skill", text), ("description", text), ("max_turns", integer),
            ("origin", text), ("status", text), ("parents", pa.list_(text)),
            ("document_id", integer), ("model", text), ("run_id", text),
            ("created_at", pa.timestamp("us", tz="UTC")), ("prompt_sha256", text),
            ("hint", text), ("extra", text), ("play_stats", text),
        ],
        metadata={"spade_envs.corpus": "1"},
    )  # fmt: skip
    tmp = out.with_name(out.name + ".partial")
    written = 0
    try:
        with pq.ParquetWriter(tmp, schema) as writer:
            # Row groups of 1,000 versions: memory stays bounded on a large corpus.
            for batch in _batches(records, 1000):
                stats = registry.play_stats_of(batch) if registry is not None else {}
                rows = [_parquet_row(r, stats.get(r.id, [])) for r in batch]
                writer.write_table(pa.Table.from_pylist(rows, schema))
                written += len(batch)
        tmp.replace(out)  # a reader never sees half a file
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return written


def _batches(items: Any, size: int) -> Any:
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def _parquet_row(record: EnvRecord, stats: Iterable[Any]) -> dict[str, Any]:
    row = export_row(record, stats)
    row["play_stats"] = json.dumps(row["play_stats"])  # free-form: JSON text
    created = record.created_at
    if created is not None and created.tzinfo is None:
        created = created.replace(tzinfo=dt.timezone.utc)  # the registry stores UTC
    row["created_at"] = created
    row["extra"] = json.dumps(record.extra, ensure_ascii=False)  # free-form: JSON text
    return row


# ----- import -------------------------------------------------------------------------------
def detect_format(path: str | Path) -> str:
    """The import format of ``path``, from its suffix or its directory layout."""
    path = Path(path)
    if not path.exists():
        raise SpadeError(f"{path} does not exist; pass an export file or directory.")
    if path.is_dir():
        if find_manifest(path) is not None:
            return "package"
        try:
            find_pool(path)
        except SpadeError:
            raise SpadeError(
                f"{path} is neither a package export (manifest.json with pyproject.toml) nor a "
                "SPADE pool (game_*.py files, or a spade_games/ or games/ folder of them); "
                "pass format= one of " + ", ".join(IMPORT_FORMATS) + "."
            ) from None
        return "spade-pool"
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise SpadeError(
        f"Cannot tell the format of {path} from its suffix {suffix or '(none)'!r}; use .jsonl "
        f"or .parquet, or pass format= one of {', '.join(IMPORT_FORMATS)}."
    )


def read_rows(
    path: str | Path, format: str | None, problems: list[str], notes: list[str] | None = None
) -> tuple[str, list[Row]]:
    """The rows an export holds, checked for shape but not trusted (nothing is validated
    here: :func:`spade_envs.runtime.imports.import_corpus` does that, then registers).

    Args:
        path: A ``.jsonl``/``.parquet`` file, a package directory or a SPADE pool directory.
        format: One of :data:`IMPORT_FORMATS`; None detects it from ``path``.
        problems: Gets one line per pool file (or part of one) that is skipped, and why.
        notes: Gets one line per part a pool lacks (no ``env_memory.json``).

    Returns:
        The format read and the rows.

    Raises:
        SpadeError: Unknown format, or a malformed input.
    """
    if format is None:
        fmt = detect_format(path)
    else:
        fmt = _normalise_format(format, IMPORT_FORMATS, "import")
    path = Path(path)
    if fmt == "jsonl":
        return fmt, _read_jsonl(path)
    if fmt == "parquet":
        return fmt, _read_parquet(path)
    if fmt == "package":
        return fmt, read_package(path)
    return fmt, read_pool(path, problems, notes)


def _read_jsonl(path: Path) -> list[Row]:
    rows = []
    # The file the user named may be a link to an export (their choice); what it points
    # to must still be a regular file, and everything it names is checked row by row.
    target = path.resolve()
    try:
        with open_regular(target, max_bytes=MAX_IMPORT_FILE_BYTES, what="JSONL export") as lines:
            number = 0
            while line := lines.readline(MAX_JSONL_LINE_BYTES + 1):
                number += 1
                where = f"{path}, line {number}"
                if len(line) > MAX_JSONL_LINE_BYTES:
                    raise SpadeError(
                        f"{where}: longer than {MAX_JSONL_LINE_BYTES:,} bytes; one version's "
                        "line is far shorter, so this is not an export of spade-envs."
                    )
                text = line.decode("utf-8")
                if not text.strip():
                    continue
                row = parse_json(text, where, max_chars=MAX_JSONL_LINE_BYTES)
                rows.append(check_row(row, where))
    except (OSError, UnicodeDecodeError) as exc:
        raise SpadeError(f"Cannot read {path}: {exc}") from exc
    return rows


def _read_parquet(path: Path) -> list[Row]:
    pa, pq = _pyarrow()
    try:
        # Opened as a checked regular file (under the size cap); pyarrow reads that stream.
        with open_regular(
            path.resolve(), max_bytes=MAX_IMPORT_FILE_BYTES, what="Parquet export"
        ) as stream:
            table = pq.read_table(stream)
    except (pa.ArrowException, OSError) as exc:
        raise SpadeError(
            f"{path} is not a readable Parquet file ({exc}); pass a file written by "
            "`spade-envs export --format parquet`."
        ) from None
    missing = [name for name in REQUIRED if name not in table.column_names]
    if missing:
        raise SpadeError(f"{path}: missing column(s) {', '.join(missing)}.")
    rows = []
    for number, row in enumerate(table.to_pylist(), 1):
        where = f"{path}, row {number}"
        if isinstance(row.get("extra"), str):
            row["extra"] = parse_json(
                row["extra"], f"{where}: extra", max_chars=MAX_JSONL_LINE_BYTES
            )
        rows.append(check_row(row, where))
    return rows
