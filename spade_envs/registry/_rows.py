"""Checked input rows shared by the corpus import formats.

A :class:`Row` is one environment version read from an import file. The jsonl, parquet
and package readers build rows with :func:`check_row`; the SPADE-pool reader builds them
directly. Nothing a file says about a version is trusted: its ``status``, ``kind``,
``skill`` and ``max_turns`` are not read at all, and its ``name`` only labels messages.
:mod:`spade_envs.runtime.imports` derives the metadata from the source and validates it. This module
imports no other format module, so every reader can use it without an import cycle.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from ..core.metadata import EnvMetadata
from ..error import SpadeError
from .limits import MAX_SOURCE_BYTES

__all__ = ["REQUIRED", "Row", "check_row", "source_sha256"]

#: Fields every row of a jsonl/parquet export (and every manifest entry) must have.
REQUIRED = ("source",)


@dataclass
class Row:
    """One input version, ready to be checked (metadata, validation) and registered.

    Attributes:
        source: The environment's code.
        where: Where it was read (file and line), for messages.
        label: What the file calls it (only for messages; the name comes from the source).
        meta: The metadata derived from the source (None until derived).
        status: Set by the import (``validated``, ``rejected`` or ``unvalidated``).
        report: The validation report, when the import validated it.
    """

    source: str
    where: str = ""
    label: str = ""
    meta: EnvMetadata | None = None
    status: str = "unvalidated"
    model: str = ""
    version: int | None = None
    hint: str = ""
    prompt_sha256: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] | None = None
    parents: tuple[str, ...] = ()
    description: str = ""
    report: Any = None

    def group(self) -> tuple[str, ...]:
        """Rows with equal groups can be registered in one ``register_many`` call."""
        extra = json.dumps(self.extra, sort_keys=True)
        return (self.status, self.model, self.hint, self.prompt_sha256, extra)


def source_sha256(source: str) -> str:
    """The SHA-256 hex digest of ``source``, as the registry computes it."""
    # Same digest as the registry's, so manifests and exports compare with stored rows.
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def check_row(row: Any, where: str) -> Row:
    """One exported row (jsonl line, parquet row, manifest entry), checked whole.

    Only what cannot make code trusted is kept: the source, its lineage (``parents``),
    ``model``, ``hint``, ``prompt_sha256``, ``extra``, and ``version`` (for ordering).
    ``kind``, ``skill`` and ``max_turns`` are ignored; the exporting registry's ID,
    origin, status, run and play statistics are kept as provenance only
    (``extra["provenance"]``).
    """
    if not isinstance(row, dict):
        raise SpadeError(f"{where}: expected an object with at least a 'source' field.")
    source = row.get("source")
    if source is None:
        raise SpadeError(f"{where}: missing field(s) source.")
    if not isinstance(source, str):
        raise SpadeError(f"{where}: source must be a string, got {type(source).__name__}.")
    if not source.strip():
        raise SpadeError(f"{where}: source is empty.")
    if len(source) > MAX_SOURCE_BYTES:
        raise SpadeError(
            f"{where}: the source has {len(source):,} characters, over the import limit of "
            f"{MAX_SOURCE_BYTES:,}; no environment is that long."
        )
    label = row.get("name") if isinstance(row.get("name"), str) else ""
    parents = row.get("parents") or []
    if not isinstance(parents, (list, tuple)) or not all(isinstance(p, str) for p in parents):
        raise SpadeError(f"{where}: parents must be a list of names, got {parents!r:.60}.")
    texts = {key: row.get(key) or "" for key in ("model", "hint", "prompt_sha256", "description")}
    for key, value in texts.items():
        if not isinstance(value, str):
            raise SpadeError(f"{where}: {key} must be a string, got {value!r:.60}.")
    extra = row.get("extra") or {}
    if not isinstance(extra, dict):
        raise SpadeError(f"{where}: extra must be a JSON object, got {extra!r:.60}.")
    version = row.get("version")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
        raise SpadeError(f"{where}: version must be a whole number, got {version!r:.60}.")
    digest = row.get("sha256")
    if digest is not None and digest != source_sha256(source):
        raise SpadeError(
            f"{where}: the source of {label or 'this row'} does not match its sha256 (it was "
            "changed or corrupted after export); export it again."
        )
    # What the row says of itself, and what its extra says of an earlier step (it was
    # imported before): both bounded the same way, whichever the file fills in.
    provenance = _provenance(row, where)
    earlier = extra.get("provenance")
    earlier = _provenance(earlier, where) if isinstance(earlier, dict) else {}
    if provenance and earlier:
        provenance["earlier"] = earlier
    extra = {k: v for k, v in extra.items() if k != "provenance"}
    if provenance or earlier:
        extra["provenance"] = provenance or earlier
    return Row(
        source,
        where=where,
        label=label[:64],
        version=version,
        extra=extra,
        parents=tuple(parents),
        **texts,
    )


#: What an export says about where a version came from, kept by an import as provenance
#: (``extra["provenance"]``): shown, never trusted (the import decides status and origin).
PROVENANCE_FIELDS = ("id", "origin", "status", "run_id", "created_at", "model")
#: The numbers of one play statistics entry kept as provenance.
_STATS_FIELDS = (
    "checkpoint", "plays_with_hint", "plays_without_hint", "mean_return_with_hint",
    "mean_return_without_hint", "win_rate", "hint_gain", "updated_at",
)  # fmt: skip
_MAX_STATS = 50


def _provenance(row: dict[str, Any], where: str) -> dict[str, Any]:
    """What the exporting registry said about this version: its ID, origin, status, run
    and play statistics (strings cut to 200 characters, at most 50 statistics entries of
    finite numbers and short strings); empty for a row that says nothing of it."""
    kept: dict[str, Any] = {
        k: row[k][:200] for k in PROVENANCE_FIELDS if isinstance(row.get(k), str) and row[k]
    }
    stats = row.get("play_stats")
    if isinstance(stats, str):  # Parquet keeps them as JSON text
        try:
            stats = json.loads(stats[:1_000_000])
        except ValueError:
            raise SpadeError(f"{where}: play_stats is not JSON.") from None
    if isinstance(stats, list) and stats:
        entries = []
        for entry in stats[:_MAX_STATS]:
            if not isinstance(entry, dict):
                continue
            entries.append(
                {
                    k: (v[:200] if isinstance(v, str) else v)
                    for k, v in entry.items()
                    if k in _STATS_FIELDS and _plain(v)
                }
            )
        kept["play_stats"] = entries
    return kept


def _plain(value: Any) -> bool:
    """A short string, or a finite number a float holds (no bool, no 400-digit int)."""
    if isinstance(value, str):
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) if isinstance(value, float) else abs(value) < 2**53
