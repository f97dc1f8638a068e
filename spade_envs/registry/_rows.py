"""Checked input rows shared by the corpus import formats.

A :class:`Row` is one environment version, validated and ready to register. The jsonl,
parquet and package readers build rows with :func:`check_row`; the SPADE-pool reader builds
them directly. This module imports no other format module, so every reader can use it
without an import cycle.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ..core.metadata import KINDS, EnvMetadata
from ..error import SpadeError
from .ids import check_name
from .store import STATUSES

__all__ = ["REQUIRED", "Row", "check_row", "source_sha256"]

#: Fields every row of a jsonl/parquet export (and every manifest entry) must have.
REQUIRED = ("name", "source", "kind", "skill", "description", "max_turns", "origin")


@dataclass
class Row:
    """One checked input, ready to register."""

    source: str
    meta: EnvMetadata
    status: str = "candidate"
    model: str = ""
    version: int | None = None
    hint: str = ""
    prompt_sha256: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] | None = None

    def group(self) -> tuple[str, ...]:
        """Rows with equal groups can be registered in one ``register_many`` call."""
        extra = json.dumps(self.extra, sort_keys=True)
        return (self.status, self.model, self.hint, self.prompt_sha256, extra)


def source_sha256(source: str) -> str:
    """The SHA-256 hex digest of ``source``, as the registry computes it."""
    # Same digest as the registry's, so manifests and exports compare with stored rows.
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def check_row(row: Any, where: str) -> Row:
    """One exported row (jsonl line, parquet row, manifest entry), checked whole."""
    if not isinstance(row, dict):
        raise SpadeError(f"{where}: expected an object with fields {', '.join(REQUIRED)}.")
    missing = [key for key in REQUIRED if row.get(key) is None]
    if missing:
        raise SpadeError(f"{where}: missing field(s) {', '.join(missing)}.")
    try:
        check_name(row["name"])
    except SpadeError as exc:
        raise SpadeError(f"{where}: {exc}") from None
    for key in ("source", "skill", "description", "origin"):
        if not isinstance(row[key], str):
            raise SpadeError(f"{where}: {key} must be a string, got {type(row[key]).__name__}.")
    if not row["source"].strip():
        raise SpadeError(f"{where}: source is empty.")
    if row["kind"] not in KINDS:
        raise SpadeError(f"{where}: kind must be one of {KINDS}, got {row['kind']!r}.")
    turns = row["max_turns"]
    if not isinstance(turns, int) or isinstance(turns, bool) or turns < 1:
        raise SpadeError(f"{where}: max_turns must be a whole number from 1, got {turns!r}.")
    status = row.get("status") or "candidate"
    if status not in STATUSES:
        raise SpadeError(f"{where}: status must be one of {STATUSES}, got {status!r}.")
    parents = row.get("parents") or []
    if not isinstance(parents, (list, tuple)) or not all(isinstance(p, str) for p in parents):
        raise SpadeError(f"{where}: parents must be a list of names, got {parents!r}.")
    texts = {key: row.get(key) or "" for key in ("model", "hint", "prompt_sha256")}
    for key, value in texts.items():
        if not isinstance(value, str):
            raise SpadeError(f"{where}: {key} must be a string, got {value!r}.")
    extra = row.get("extra") or {}
    if not isinstance(extra, dict):
        raise SpadeError(f"{where}: extra must be a JSON object, got {extra!r:.60}.")
    version = row.get("version")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
        raise SpadeError(f"{where}: version must be a whole number, got {version!r}.")
    digest = row.get("sha256")
    if digest is not None and digest != source_sha256(row["source"]):
        raise SpadeError(
            f"{where}: the source of {row['name']} does not match its sha256 (it was changed "
            "or corrupted after export); export it again."
        )
    meta = EnvMetadata(
        name=row["name"],
        kind=row["kind"],
        skill=row["skill"],
        description=row["description"],
        max_turns=turns,
        reward_range=(0.0, 1.0),
        origin="imported",
        parents=tuple(parents),
    )
    return Row(row["source"], meta, status=status, version=version, extra=extra, **texts)
