"""Reading the environment pools written by the public SPADE code.

A pool is a directory of ``game_<rollout>_<index>_<skill>.py`` files, each optionally with
a ``game_..._hint.txt`` beside it, and an ``env_memory.json`` (in the pool or its parent)
holding each game's skill, win rate and regret (SPADE's name for what we call the hint
gain: with-hint minus without-hint return, not floored). :func:`read_pool` turns the
games into rows: pool code is read with :mod:`ast` only, never executed, and a bad game is reported
in ``problems`` and skipped rather than failing the whole pool. :func:`spade_skill` maps
SPADE's skill names onto our skill families.

A pool may be hostile. Every path is ``lstat``-ed and only regular files are read: a
symbolic link (say, to a root-only file), a FIFO or a device file is reported and never
opened, and each file is read up to a size cap only (:mod:`.limits`). The skill label
and play statistics of ``env_memory.json`` are kept (they are not code and grant no
trust); kind and ``max_turns`` come from the game's source, and its status from
validation on import.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path
from typing import Any

from ..core.metadata import SKILLS, EnvMetadata
from ..error import SpadeError
from ._rows import Row
from .ids import check_name
from .limits import (
    MAX_HINT_BYTES,
    MAX_MEMORY_BYTES,
    MAX_SOURCE_BYTES,
    exists_unfollowed,
    parse_json,
    read_regular,
)

__all__ = ["DEFAULT_POOL_SKILL", "read_pool", "spade_skill"]

_POOL_FILE = re.compile(r"game_(?P<rollout>\d+)_(?P<index>\d+)_(?P<slug>.+)")
#: The SPADE code's cognitive skills, as our skill families.
_SPADE_SKILLS = {
    "pattern recognition": "pattern",
    "logical deduction": "logic",
    "strategic planning": "planning",
    "mathematical reasoning": "math",
    "spatial reasoning": "planning",
    "causal inference": "science",
    "optimization": "planning",
}
_SKILL_WORDS = (
    ("math", "math"), ("arithmetic", "math"), ("logic", "logic"), ("deduc", "logic"),
    ("plan", "planning"), ("optim", "planning"), ("spatial", "planning"), ("code", "code"),
    ("program", "code"), ("caus", "science"), ("scien", "science"), ("physic", "science"),
    ("pattern", "pattern"), ("sequence", "pattern"),
)  # fmt: skip
#: Skill of pool games whose SPADE skill has no family here (memory, language, ...).
DEFAULT_POOL_SKILL = "general"


def spade_skill(text: str) -> str:
    """Our skill family for a SPADE skill name or file slug (``"logical_deduction"``)."""
    words = " ".join(re.split(r"[\s_-]+", text.strip().lower()))
    if words in SKILLS:
        return words
    if words in _SPADE_SKILLS:
        return _SPADE_SKILLS[words]
    for stem, skill in _SKILL_WORDS:
        if stem in words:
            return skill
    return DEFAULT_POOL_SKILL


def _pool_order(file: Path) -> tuple[int, int, str]:
    match = _POOL_FILE.fullmatch(file.stem)
    if match is None:
        return (10**9, 0, file.name)
    return (int(match["rollout"]), int(match["index"]), file.name)


def _pool_memory(path: Path, problems: list[str]) -> dict[str, dict[str, Any]]:
    """The pool's ``env_memory.json`` records by game file name (latest record wins)."""
    for folder in (path, path.parent):
        memory = folder / "env_memory.json"
        if exists_unfollowed(memory):
            break
    else:
        return {}
    try:
        text = read_regular(memory, max_bytes=MAX_MEMORY_BYTES, what="pool memory").decode()
        records = parse_json(text, str(memory), max_chars=MAX_MEMORY_BYTES)
    except (SpadeError, UnicodeDecodeError) as exc:
        problems.append(f"{memory}: not readable JSON ({exc}); imported without its stats.")
        return {}
    if not isinstance(records, list):
        problems.append(f"{memory}: expected a JSON array of records; imported without it.")
        return {}
    return {
        Path(r["game_file"]).name: r
        for r in records
        if isinstance(r, dict) and isinstance(r.get("game_file"), str)
    }


def read_pool(path: Path, problems: list[str]) -> list[Row]:
    """The games of the SPADE pool at ``path``, oldest rollout first.

    Args:
        path: The pool directory.
        problems: Gets one line per game (or memory file) that was skipped, and why
            (symbolic links, FIFOs and devices among them: they are never opened).

    Raises:
        SpadeError: ``path`` is not a directory or holds no ``game_*.py`` files.
    """
    if not path.is_dir():
        raise SpadeError(f"{path} is not a directory; a SPADE pool is a folder of game_*.py.")
    files = sorted(path.glob("game_*.py"), key=_pool_order)
    if not files:
        raise SpadeError(f"{path} holds no game_*.py files; is it a SPADE pool directory?")
    memory = _pool_memory(path, problems)
    rows = []
    for file in files:
        try:
            rows.append(_pool_game(file, memory.get(file.name)))
        except SpadeError as exc:
            problems.append(f"{file.name}: {exc}")
    return rows


def _pool_game(file: Path, memory: dict[str, Any] | None) -> Row:
    """One pool game, read with ``ast`` (never executed)."""
    try:
        source = read_regular(file, max_bytes=MAX_SOURCE_BYTES, what="pool game").decode()
    except SpadeError as exc:
        raise SpadeError(f"not imported: {exc}") from None
    except UnicodeDecodeError as exc:
        raise SpadeError(f"cannot read it ({exc}).") from None
    try:
        tree = ast.parse(source, filename=file.name)
    except SyntaxError as exc:
        raise SpadeError(f"does not parse: {exc.msg} (line {exc.lineno}).") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise SpadeError(f"cannot be parsed ({type(exc).__name__}).") from None
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    bases = {_base_name(b) for c in classes for b in c.bases}
    envs = [c for c in classes if c.name.endswith("Env") and c.name not in bases]
    if len(envs) != 1:
        found = ", ".join(c.name for c in envs) or "none"
        raise SpadeError(f"expected one class whose name ends in 'Env', found {found}.")
    cls = envs[0]
    check_name(cls.name)
    kind = "tool" if "ToolUseBaseEnv" in {_base_name(b) for b in cls.bases} else "text"
    doc = ast.get_docstring(cls) or (ast.get_docstring(tree) or "").strip().split("\n")[0]
    match = _POOL_FILE.fullmatch(file.stem)
    skill_text = match["slug"] if match else ""
    if memory is not None and isinstance(memory.get("skill"), str) and memory["skill"].strip():
        skill_text = memory["skill"]
    hint = ""
    hint_file = file.with_name(f"{file.stem}_hint.txt")
    if exists_unfollowed(hint_file):
        try:
            data = read_regular(hint_file, max_bytes=MAX_HINT_BYTES, what="pool hint")
            hint = data.decode("utf-8").strip()
        except SpadeError as exc:
            raise SpadeError(f"not imported: {exc}") from None
        except UnicodeDecodeError as exc:
            raise SpadeError(f"cannot read {hint_file.name} ({exc}).") from None
    meta = EnvMetadata(
        name=cls.name,
        kind=kind,
        skill=spade_skill(skill_text),
        description=" ".join(doc.split()),
        max_turns=_max_turns(cls),
        reward_range=(0.0, 1.0),
        origin="imported",
    )
    return Row(
        source, where=file.name, label=cls.name, meta=meta, hint=hint, stats=_pool_stats(memory)
    )


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _max_turns(cls: ast.ClassDef) -> int:
    """The ``max_turns=`` default of ``__init__``, else a class attribute, else 10."""
    from_init: ast.expr | None = None
    from_class: ast.expr | None = None
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            args = node.args
            positional = [a.arg for a in args.posonlyargs + args.args]
            defaults = dict(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
            defaults.update(
                (a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None
            )
            from_init = defaults.get("max_turns")
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "max_turns" for t in node.targets
        ):
            from_class = node.value
    for value in (from_init, from_class):
        if isinstance(value, ast.Constant) and type(value.value) is int and value.value >= 1:
            return value.value
    return 10


def _pool_stats(memory: dict[str, Any] | None) -> dict[str, Any] | None:
    """``record_play_stats`` arguments from a SPADE memory record (win rate and regret).

    SPADE's ``regret`` field is ``R(hint) - R(no hint)`` as its orchestrator computes it
    (``_finalize_regrets``), unfloored: our ``hint_gain``, not our floored ``regret``.
    """
    if memory is None or memory.get("actor_win_rate") is None:
        return None
    # The key stays "regret": it is SPADE's file format, not ours.
    win_rate, hint_gain = memory.get("actor_win_rate"), memory.get("regret") or 0.0
    for label, value in (("actor_win_rate", win_rate), ("regret", hint_gain)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise SpadeError(f"env_memory.json has a non-numeric {label} {value!r} for it.")
    if not 0.0 <= win_rate <= 1.0:
        raise SpadeError(f"env_memory.json has actor_win_rate {win_rate!r}, outside [0, 1].")
    # SPADE keeps only the win rate and the hint gain (with hint - without hint): the
    # returns are rebuilt so that record_play_stats derives the same hint gain.
    return {
        "plays_with_hint": 0,
        "plays_without_hint": 0,
        "mean_return_with_hint": float(win_rate) + float(hint_gain),
        "mean_return_without_hint": float(win_rate),
        "win_rate": float(win_rate),
    }
