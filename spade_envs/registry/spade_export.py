"""Writing registered versions back as a pool in SPADE's on-disk layout.

:func:`export_pool` writes a run folder as SPADE's training scripts lay it out, so that
``--spade-games-dir OUT/spade_games --spade-cache-dir OUT/spade_games_cache`` (or
``STATIC_POOL_DIR=OUT/spade_games``) reads it:

- ``spade_games/game_<rollout:05d>_<index:03d>_<skill slug>.py``: the source, starting with
  SPADE's header docstring (added only when the source does not start with it already);
- ``spade_games_cache/env_memory.json``: one record per version that came with SPADE's
  statistics (``extra["spade"]["memory"]``), in the exact fields of SPADE's
  ``EnvironmentRecord`` (``game_file``, ``skill``, ``code_snippet``, ``actor_win_rate``,
  ``regret``, ``rollout_id``, ``metadata``), so ``EnvironmentMemory.load`` accepts it;
- ``spade_games_cache/step_<rollout:05d>/<game stem>_hint.txt``: each version's hint, where
  SPADE's orchestrator writes them.

A version imported from a pool keeps its file name (rollout, index and SPADE's skill
label); others get rollout 0 and the next free index, with the SPADE skill of their
skill family. Importing the folder again gives the same sources and skills.

SPADE's loader runs the first name ending in ``Env`` it finds in the module: versions it
could not load (multi-agent games, classes not named ``*Env``, modules whose first such
name is an imported base class like spade-envs' ``TextEnv``) are not written and are
reported, with what to do instead.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.dialect import SPADE_SKIPPED_CLASSES
from ..core.pyparse import parse_source
from ..error import SpadeError
from .records import EnvRecord
from .spade_pool import POOL_FILE, SPADE_HEADER, memory_stats, spade_skill

__all__ = ["GAMES_DIR", "CACHE_DIR", "check_pool_target", "export_pool", "spade_loadable"]

#: The games folder of a SPADE run (``--spade-games-dir``).
GAMES_DIR = "spade_games"
#: The cache folder of a SPADE run (``--spade-cache-dir``): memory and hints.
CACHE_DIR = "spade_games_cache"
#: SPADE's ``EnvironmentMemory`` keeps this much of a game's code in a record.
SNIPPET_CHARS = 2000
#: SPADE's skill name for each of our skill families (the file slug is derived from it).
SPADE_NAMES = {
    "math": "Mathematical Reasoning",
    "logic": "Logical Deduction",
    "planning": "Strategic Planning",
    "pattern": "Pattern Recognition",
    "science": "Causal Inference",
}
_HEADERS = re.compile(r'"""SPA(?:DE|RE) self-play generated game"""')
_SLUG = re.compile(r"[^a-z0-9_-]+")


def check_pool_target(out: Path) -> None:
    """Refuse an ``out`` that exists and is not an empty folder (before any work)."""
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise SpadeError(
            f"{out} exists and is not an empty directory; export a SPADE pool into a new or "
            "empty directory."
        )


def spade_loadable(source: str, kind: str) -> str:
    """Why SPADE's loader could not load ``source`` ('' when it could)."""
    if kind == "game":
        return (
            "a multi-agent game; SPADE's loader plays single-agent environments only "
            "(export it with --format package or jsonl)"
        )
    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "its source does not parse"
    for node in tree.body:
        names: list[tuple[str, bool]] = []
        if isinstance(node, ast.ClassDef):
            names = [(node.name, True)]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [((a.asname or a.name).split(".")[0], False) for a in node.names]
        elif isinstance(node, ast.Assign):
            names = [(t.id, False) for t in node.targets if isinstance(t, ast.Name)]
        for name, is_class in names:
            if name.endswith("Env") and name not in SPADE_SKIPPED_CLASSES:
                if is_class:
                    return ""
                return (
                    f"SPADE's loader would take {name!r} (the first name ending in 'Env') "
                    "instead of the environment class; a spade-envs protocol class only "
                    "loads here (export it with --format package or jsonl)"
                )
    return (
        "no class name ends in 'Env', and SPADE's loader looks for one (export it with "
        "--format package or jsonl, or rename the class)"
    )


def _with_header(source: str) -> str:
    """The file text: ``source`` after SPADE's header, unless it starts with one already."""
    if _HEADERS.match(source.lstrip("\ufeff")):
        return source
    return f"{SPADE_HEADER}\n\n{source}"


def _slug(label: str) -> str:
    """SPADE's file slug of a skill label (``save_game_file``), kept to safe characters."""
    slug = _SLUG.sub("_", label.strip().lower().replace(" ", "_")).strip("_")[:80]
    return slug or "general"


def _spade_part(record: EnvRecord) -> dict[str, Any]:
    spade = record.extra.get("spade") if isinstance(record.extra, dict) else None
    return spade if isinstance(spade, dict) else {}


def _label(record: EnvRecord, spade: dict[str, Any]) -> str:
    """SPADE's skill label of a version: the pool's own when it maps to the same family."""
    label = spade.get("skill")
    if isinstance(label, str) and label.strip() and spade_skill(label) == record.skill:
        return label.strip()
    return SPADE_NAMES.get(record.skill, record.skill)


def _file_name(record: EnvRecord, spade: dict[str, Any], used: set[str], label: str) -> str:
    """The pool file name: the original one when it is free and its skill is the version's
    (on import a memory record's skill wins over the file's), else a new one."""
    original = spade.get("file")
    if isinstance(original, str) and original.endswith(".py") and original not in used:
        match = POOL_FILE.fullmatch(original[:-3])
        memory = spade.get("memory") if isinstance(spade.get("memory"), dict) else {}
        read_back = str(memory.get("skill") or "").strip() or (match["slug"] if match else "")
        if (
            match
            and _slug(match["slug"]) == match["slug"]
            and spade_skill(read_back) == record.skill
        ):
            return original
    index = 0
    while True:
        name = f"game_00000_{index:03d}_{_slug(label)}.py"
        if name not in used:
            return name
        index += 1


def _hint_step(spade: dict[str, Any], name: str) -> int:
    """The rollout whose cache step holds the hint: the pool's own, else the file's."""
    step = spade.get("hint_step")
    if isinstance(step, int) and not isinstance(step, bool) and 0 <= step < 10**9:
        return step
    match = POOL_FILE.fullmatch(name[:-3])
    return int(match["rollout"]) if match else 0


def _memory_record(
    record: EnvRecord, spade: dict[str, Any], game_file: Path, text: str, problems: list[str]
) -> dict[str, Any] | None:
    """The ``env_memory.json`` record SPADE would have written for this game, if any."""
    memory = spade.get("memory")
    if memory is None:
        return None
    try:
        stats = memory_stats(memory if isinstance(memory, dict) else {})
    except SpadeError as exc:
        problems.append(f"{record.id}: its SPADE statistics were not written ({exc}).")
        return None
    return {
        "game_file": str(game_file),
        "skill": stats["skill"],
        "code_snippet": text[:SNIPPET_CHARS],
        "actor_win_rate": stats["actor_win_rate"],
        "regret": stats["regret"],
        "rollout_id": stats["rollout_id"],
        "metadata": stats["metadata"],
    }


def export_pool(
    records: Iterable[EnvRecord], out: str | Path, problems: list[str] | None = None
) -> int:
    """Write ``records`` as a SPADE run folder at ``out`` (see the module docstring).

    The folder appears whole or not at all (it is written beside ``out``, then renamed).

    Args:
        records: The versions to write, oldest first.
        out: A new or empty directory.
        problems: Gets one line per version that was not written, and why.

    Returns:
        The number of games written.

    Raises:
        SpadeError: ``out`` exists and is not an empty directory.
    """
    out = Path(out)
    problems = [] if problems is None else problems
    check_pool_target(out)
    tmp = out.with_name(out.name + ".partial")
    if tmp.exists() or tmp.is_symlink():
        raise SpadeError(f"{tmp} is in the way (an interrupted export?); remove it and retry.")
    games, cache = tmp / GAMES_DIR, tmp / CACHE_DIR
    written, used, memory = 0, set(), []
    try:
        games.mkdir(parents=True)
        cache.mkdir()
        for record in records:
            reason = spade_loadable(record.source, record.kind)
            if reason:
                problems.append(f"{record.id}: not written: {reason}.")
                continue
            spade = _spade_part(record)
            name = _file_name(record, spade, used, _label(record, spade))
            used.add(name)
            text = _with_header(record.source)
            with open(games / name, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            written += 1
            final = out.resolve() / GAMES_DIR / name
            entry = _memory_record(record, spade, final, text, problems)
            if entry is not None:
                memory.append(entry)
            if record.hint:
                step = cache / f"step_{_hint_step(spade, name):05d}"
                step.mkdir(exist_ok=True)
                (step / f"{name[:-3]}_hint.txt").write_text(record.hint, encoding="utf-8")
        (cache / "env_memory.json").write_text(json.dumps(memory, indent=2), encoding="utf-8")
        if out.exists():
            out.rmdir()  # empty, checked above
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return written
