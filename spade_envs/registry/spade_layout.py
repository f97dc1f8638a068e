"""Where the parts of a SPADE pool are, and reading its side files within limits.

:func:`find_pool` finds the games folder of a pool and, beside it, SPADE's cache folder
(``env_memory.json`` and ``step_NNNNN/<stem>_hint.txt`` hints), or the published static
corpus's ``manifest.jsonl`` and ``checksums.sha256``. The readers here turn those side
files into lookups by game file name; each reports what it could not read in
``problems`` and returns what it could, so a missing or malformed side file never stops
the games from being imported. Every file is ``lstat``-ed and read as a regular file
under a size cap (:mod:`.limits`); a folder that is a symbolic link is not entered.
:mod:`.spade_pool` reads the games themselves.
"""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..error import SpadeError
from .limits import (
    MAX_JSONL_LINE_BYTES,
    MAX_MANIFEST_BYTES,
    MAX_MEMORY_BYTES,
    exists_unfollowed,
    open_regular,
    parse_json,
    read_regular,
)

__all__ = [
    "MANIFEST_GAME_KEYS",
    "POOL_FILE",
    "PoolLayout",
    "cache_hints",
    "find_pool",
    "has_pool_games",
    "memory_record",
    "memory_stats",
    "pool_order",
    "read_checksums",
    "read_manifest",
    "read_memory",
    "read_text",
]

#: Manifest keys that may name a game's file (the first one present is used).
MANIFEST_GAME_KEYS = ("game_file", "file", "path", "filename", "game", "name", "id")
#: A game file's stem: ``game_<rollout>_<index>_<skill slug>``.
POOL_FILE = re.compile(r"game_(?P<rollout>\d{1,9})_(?P<index>\d{1,9})_(?P<slug>.+)")
_STEP_DIR = re.compile(r"step_(\d{1,9})")
_HINT_FILE = re.compile(r"(?P<stem>game_.+)_hint\.txt")
_CHECKSUM_LINE = re.compile(r"([0-9a-fA-F]{64}) [ *](.+)")
MAX_LABEL_CHARS = 200
_MAX_METADATA_CHARS = 16_000
_MAX_MANIFEST_FIELDS = 40
_MAX_MANIFEST_TEXT = 1_000


# ----- where the parts of a pool are --------------------------------------------------------
@dataclass(frozen=True)
class PoolLayout:
    """Where the parts of a SPADE pool are (None: that part is absent).

    Attributes:
        games: The folder of ``game_*.py`` files.
        cache: SPADE's cache folder (``step_NNNNN/`` hint folders, ``env_memory.json``).
        memory: ``env_memory.json``.
        manifest: ``manifest.jsonl`` of the published static corpus.
        checksums: ``checksums.sha256`` of the published static corpus.
    """

    games: Path
    cache: Path | None = None
    memory: Path | None = None
    manifest: Path | None = None
    checksums: Path | None = None


def _real_dir(path: Path) -> bool:
    """A folder that is not a symbolic link (``lstat``)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def has_pool_games(path: Path) -> bool:
    """Whether ``path`` holds ``game_*.py`` files."""
    return next(iter(path.glob("game_*.py")), None) is not None


def find_pool(path: str | Path) -> PoolLayout:
    """The layout of the SPADE pool at ``path`` (a games folder, a run folder holding
    ``spade_games/``, or the static corpus's root holding ``games/``).

    Raises:
        SpadeError: ``path`` is not a folder, or no ``game_*.py`` files are there.
    """
    path = Path(path)
    if not path.is_dir():
        raise SpadeError(f"{path} is not a directory; a SPADE pool is a folder of game_*.py.")
    games = next(
        (
            folder
            for folder in (path, path / "spade_games", path / "games")
            if (folder == path or _real_dir(folder)) and has_pool_games(folder)
        ),
        None,
    )
    if games is None:
        raise SpadeError(
            f"{path} holds no game_*.py files (nor a spade_games/ or games/ folder of them); "
            "is it a SPADE pool directory?"
        )
    parent = games.resolve().parent
    caches = (parent / f"{games.resolve().name}_cache", parent / "spade_games_cache")
    cache = next((c for c in caches if _real_dir(c)), None)

    def first(name: str, *folders: Path | None) -> Path | None:
        return next(
            (f / name for f in folders if f is not None and exists_unfollowed(f / name)), None
        )

    return PoolLayout(
        games=games,
        cache=cache,
        memory=first("env_memory.json", games, cache, parent),
        manifest=first("manifest.jsonl", games, parent),
        checksums=first("checksums.sha256", games, parent),
    )


def pool_order(file: Path) -> tuple[int, int, str]:
    """Sort key of a game file: oldest rollout first, then its index."""
    match = POOL_FILE.fullmatch(file.stem)
    if match is None:
        return (10**10, 0, file.name)
    return (int(match["rollout"]), int(match["index"]), file.name)


# ----- the side files: memory, manifest, checksums, hints -----------------------------------
def read_text(path: Path, limit: int, what: str) -> str:
    try:
        return read_regular(path, max_bytes=limit, what=what).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpadeError(f"{path} ({what}) is not UTF-8 text ({exc.reason}).") from None


def read_memory(path: Path | None, problems: list[str]) -> dict[str, list[dict[str, Any]]]:
    """``env_memory.json``'s records by game file name, oldest first (a memory seeded from
    an earlier run may hold records of another game with the same file name:
    :func:`memory_record` picks the one whose ``code_snippet`` is the game's)."""
    if path is None:
        return {}
    try:
        records = parse_json(
            read_text(path, MAX_MEMORY_BYTES, "pool memory"), str(path), max_chars=MAX_MEMORY_BYTES
        )
    except SpadeError as exc:
        problems.append(f"{path}: not readable JSON ({exc}); the games were imported without it.")
        return {}
    if not isinstance(records, list):
        problems.append(
            f"{path}: expected a JSON array of SPADE memory records, got "
            f"{type(records).__name__}; the games were imported without it."
        )
        return {}
    found: dict[str, list[dict[str, Any]]] = {}
    for number, record in enumerate(records, 1):
        game = record.get("game_file") if isinstance(record, dict) else None
        if not isinstance(game, str) or not game.strip():
            problems.append(f"{path}: record {number} names no game_file; skipped that record.")
            continue
        found.setdefault(PurePosixPath(game.replace("\\", "/")).name, []).append(record)
    return found


def memory_record(records: list[dict[str, Any]] | None, source: str) -> dict[str, Any] | None:
    """The latest of a game's memory ``records`` whose ``code_snippet`` starts its file
    (SPADE keeps the first 2,000 characters), else the latest one; None when none."""
    if not records:
        return None
    for record in reversed(records):
        snippet = record.get("code_snippet")
        if isinstance(snippet, str) and snippet and source.startswith(snippet):
            return record
    return records[-1]


def memory_stats(record: dict[str, Any]) -> dict[str, Any]:
    """SPADE's statistics of one game from its memory record, checked (kept as SPADE's:
    ``regret`` is with-hint minus without-hint return, unfloored).

    Raises:
        SpadeError: A field is missing or not what SPADE writes.
    """
    win_rate, regret = record.get("actor_win_rate"), record.get("regret", 0.0)
    for label, value in (("actor_win_rate", win_rate), ("regret", regret)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpadeError(f"{label} is {value!r:.40}, not a number")
        if not math.isfinite(value):
            raise SpadeError(f"{label} is {value!r}, not a finite number")
    if not 0.0 <= win_rate <= 1.0:
        raise SpadeError(f"actor_win_rate {win_rate!r} is outside [0, 1]")
    rollout = record.get("rollout_id", 0)
    if isinstance(rollout, bool) or not isinstance(rollout, int) or rollout < 0:
        raise SpadeError(f"rollout_id is {rollout!r:.40}, not a whole number")
    skill = record.get("skill", "")
    if not isinstance(skill, str) or len(skill) > MAX_LABEL_CHARS:
        raise SpadeError(f"skill is {skill!r:.40}, not a short string")
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict) or len(repr(metadata)) > _MAX_METADATA_CHARS:
        raise SpadeError(
            f"metadata is not a JSON object of at most {_MAX_METADATA_CHARS:,} characters"
        )
    return {
        "skill": skill,
        "actor_win_rate": float(win_rate),
        "regret": float(regret),
        "rollout_id": rollout,
        "metadata": metadata,
    }


def _manifest_game(entry: dict[str, Any]) -> str:
    """The game file name a manifest entry names ('' when none)."""
    for key in MANIFEST_GAME_KEYS:
        value = entry.get(key)
        if isinstance(value, str) and value.strip():
            name = PurePosixPath(value.strip().replace("\\", "/")).name
            name = name if name.endswith(".py") else name + ".py"
            if POOL_FILE.fullmatch(name[:-3]):
                return name
    return ""


def _short_fields(entry: dict[str, Any]) -> dict[str, Any]:
    """The short scalar fields of a manifest entry (what is kept as SPADE's)."""
    kept: dict[str, Any] = {}
    for key, value in entry.items():
        if len(kept) >= _MAX_MANIFEST_FIELDS or not isinstance(key, str) or len(key) > 64:
            continue
        if value is None or isinstance(value, (bool, int)):
            kept[key] = value
        elif isinstance(value, float) and math.isfinite(value):
            kept[key] = value
        elif isinstance(value, str) and len(value) <= _MAX_MANIFEST_TEXT:
            kept[key] = value
    return kept


def read_manifest(path: Path | None, problems: list[str]) -> dict[str, dict[str, Any]]:
    """``manifest.jsonl``'s entries by game file name (bad lines are reported, skipped)."""
    if path is None:
        return {}
    found: dict[str, dict[str, Any]] = {}
    try:
        with open_regular(path, max_bytes=MAX_MANIFEST_BYTES, what="pool manifest") as lines:
            number = 0
            while line := lines.readline(MAX_JSONL_LINE_BYTES + 1):
                number += 1
                where = f"{path}, line {number}"
                if len(line) > MAX_JSONL_LINE_BYTES:
                    while line and not line.endswith(b"\n"):  # skip the rest of the line
                        line = lines.readline(MAX_JSONL_LINE_BYTES)
                    problems.append(
                        f"{where}: longer than {MAX_JSONL_LINE_BYTES:,} bytes; skipped that entry."
                    )
                    continue
                try:
                    text = line.decode("utf-8")
                    if not text.strip():
                        continue
                    entry = parse_json(text, where, max_chars=MAX_JSONL_LINE_BYTES)
                except UnicodeDecodeError:
                    problems.append(f"{where}: not UTF-8 text; skipped that entry.")
                    continue
                except SpadeError as exc:
                    problems.append(f"{exc}; skipped that entry.")
                    continue
                game = _manifest_game(entry) if isinstance(entry, dict) else ""
                if not game:
                    problems.append(
                        f"{where}: names no game_*.py file (in one of "
                        f"{', '.join(MANIFEST_GAME_KEYS)}); skipped that entry."
                    )
                    continue
                found[game] = _short_fields(entry)
    except (SpadeError, OSError) as exc:
        problems.append(f"{path}: not readable ({exc}); the games were imported without it.")
        return {}
    return found


def read_checksums(path: Path | None, problems: list[str]) -> dict[str, str]:
    """``checksums.sha256`` (``sha256sum`` lines) as game file name -> hex digest."""
    if path is None:
        return {}
    try:
        text = read_text(path, MAX_MANIFEST_BYTES, "pool checksums")
    except SpadeError as exc:
        problems.append(f"{path}: not readable ({exc}); the games were not checked against it.")
        return {}
    sums = {}
    for line in text.splitlines():
        match = _CHECKSUM_LINE.fullmatch(line.strip())
        if match and match[2].endswith(".py"):
            sums[PurePosixPath(match[2]).name] = match[1].lower()
    return sums


def cache_hints(cache: Path | None, problems: list[str]) -> dict[str, tuple[int, Path]]:
    """Game stem -> (step, hint file) of the latest ``step_NNNNN/<stem>_hint.txt``."""
    if cache is None:
        return {}
    hints: dict[str, tuple[int, Path]] = {}
    try:
        entries = sorted(os.scandir(cache), key=lambda e: e.name)
    except OSError as exc:
        problems.append(f"{cache}: cannot list the hint cache ({exc.strerror or exc}).")
        return {}
    steps = []
    for entry in entries:
        match = _STEP_DIR.fullmatch(entry.name)
        if match is None:
            continue
        if not entry.is_dir(follow_symlinks=False):
            problems.append(f"{entry.path} is not a real folder (a link?); its hints are not read.")
            continue
        steps.append((int(match[1]), Path(entry.path)))
    for step, folder in sorted(steps):
        try:
            names = sorted(e.name for e in os.scandir(folder))
        except OSError as exc:
            problems.append(f"{folder}: cannot list it ({exc.strerror or exc}).")
            continue
        for name in names:
            match = _HINT_FILE.fullmatch(name)
            if match is not None:
                hints[match["stem"]] = (step, folder / name)
    return hints
