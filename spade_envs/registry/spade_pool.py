"""Reading the environment pools written by the public SPADE code.

Two layouts are read (:func:`find_pool` tells them apart):

- **A self-play run**: a folder of ``game_<rollout>_<index>_<skill>.py`` files (SPADE's
  ``--spade-games-dir``, ``spade_games/`` by default), each starting with SPADE's header
  docstring (:data:`SPADE_HEADER`), and beside it the cache folder
  (``spade_games_cache/``, or ``<games folder>_cache/``) holding ``env_memory.json`` and
  the hints SPADE's orchestrator writes as ``step_<rollout:05d>/<game stem>_hint.txt``.
  A hint beside the game (``<stem>_hint.txt``) is read too; the latest step wins.
- **The published static corpus** (``spare-rl/spare-gpt55-static-corpus``): ``games/``
  with ``manifest.jsonl`` and ``checksums.sha256`` beside it. SPADE's code never reads the
  manifest, so its fields are not known: each line is an object naming its game in one of
  :data:`MANIFEST_GAME_KEYS`; its skill (``skill`` or ``category``) labels the game, and
  its other short scalar fields are kept as SPADE's. A game that does not match
  ``checksums.sha256`` is skipped.

:func:`read_pool` turns the games into rows: pool code is read with :mod:`ast` only, never
executed, and a bad game is reported in ``problems`` and skipped rather than failing the
whole pool; a missing or malformed ``env_memory.json`` or manifest (or one bad record in
it) is reported and the games are imported without it. SPADE's own labels and play
statistics go to the version's ``extra["spade"]`` exactly as SPADE has them (skill name,
file name, and the memory's ``actor_win_rate``, ``regret``, ``rollout_id`` and
``metadata``): they are SPADE's numbers, never mixed into this registry's play
statistics. :func:`spade_skill` maps SPADE's skill and category names onto our skill
families; :func:`source_max_turns` is the one ``max_turns`` rule of every import and of
``spade-envs register``.

Finding the parts and reading the side files is :mod:`.spade_layout`'s job. A pool may
be hostile. Every path is ``lstat``-ed and only regular files and real
folders are read: a symbolic link (say, to a root-only file), a FIFO or a device file is
reported and never opened, and each file (games, hints, memory, manifest, checksums) is
read up to a size cap only (:mod:`.limits`). Nothing read here grants trust: kind and
``max_turns`` come from the game's source, and its status from validation on import.
"""

from __future__ import annotations

import ast
import hashlib
import re
from pathlib import Path
from typing import Any

from ..core.dialect import (
    SPADE_HEADER,
    SPADE_SKIPPED_CLASSES,
    Dialect,
    base_name,
    dialect_of_tree,
)
from ..core.duck import SPADE_MAX_TURNS
from ..core.metadata import SKILLS, EnvMetadata
from ..core.pyparse import parse_source
from ..error import SpadeError
from ._rows import Row
from .ids import check_name
from .limits import MAX_HINT_BYTES, MAX_SOURCE_BYTES, exists_unfollowed, read_regular
from .spade_layout import (
    MAX_LABEL_CHARS,
    POOL_FILE,
    PoolLayout,
    cache_hints,
    find_pool,
    memory_record,
    memory_stats,
    pool_order,
    read_checksums,
    read_manifest,
    read_memory,
    read_text,
)

__all__ = [
    "DEFAULT_POOL_SKILL",
    "POOL_FILE",
    "SPADE_DEFAULT_MAX_TURNS",
    "SPADE_HEADER",
    "PoolLayout",
    "class_facts",
    "class_max_turns",
    "find_pool",
    "memory_stats",
    "read_pool",
    "source_max_turns",
    "spade_skill",
]

#: ``max_turns`` of a SPADE-dialect game that declares none: the runtime's
#: (:data:`spade_envs.core.duck.SPADE_MAX_TURNS`, ``ToolUseBaseEnv``'s default).
SPADE_DEFAULT_MAX_TURNS = SPADE_MAX_TURNS
#: Skill of pool games whose SPADE skill has no family here (memory, language, ...).
DEFAULT_POOL_SKILL = "general"

#: The SPADE code's skills and their categories (game_generator.COGNITIVE_SKILLS,
#: prompts/tool_use_template.TOOL_USE_SKILLS), as our skill families.
_SPADE_SKILLS = {
    "pattern recognition": "pattern",
    "logical deduction": "logic",
    "strategic planning": "planning",
    "mathematical reasoning": "math",
    "spatial reasoning": "planning",
    "causal inference": "science",
    "optimization": "planning",
    "memory recall": DEFAULT_POOL_SKILL,
    "language understanding": DEFAULT_POOL_SKILL,
    # Tool use: sequencing calls is planning; choosing, querying and recovering is logic.
    "api orchestration": "planning",
    "data retrieval": "logic",
    "state modification": "planning",
    "error recovery": "logic",
    "tool selection": "logic",
    "multi step workflows": "planning",
    # The categories those skills are grouped in.
    "core reasoning": "logic",
    "executive skills": "planning",
    "analytical skills": "math",
    "visual skills": "planning",
    "cognitive skills": DEFAULT_POOL_SKILL,
    "language skills": DEFAULT_POOL_SKILL,
    "stateful operations": "planning",
    "query then act": "logic",
    "mutation chains": "planning",
    "robustness": "logic",
    "decision making": "logic",
    "sequential planning": "planning",
}
_SKILL_WORDS = (
    ("math", "math"), ("arithmetic", "math"), ("logic", "logic"), ("deduc", "logic"),
    ("plan", "planning"), ("optim", "planning"), ("spatial", "planning"), ("code", "code"),
    ("program", "code"), ("caus", "science"), ("scien", "science"), ("physic", "science"),
    ("pattern", "pattern"), ("sequence", "pattern"), ("workflow", "planning"),
    ("orchestrat", "planning"), ("retriev", "logic"),
)  # fmt: skip


def spade_skill(text: str) -> str:
    """Our skill family for a SPADE skill or category name, or a file slug
    (``"Logical Deduction"``, ``"logical_deduction"``, ``"Multi-Step_Workflows"``)."""
    words = " ".join(re.split(r"[\s_-]+", str(text).strip().lower()))
    if words in SKILLS:
        return words
    if words in _SPADE_SKILLS:
        return _SPADE_SKILLS[words]
    for stem, skill in _SKILL_WORDS:
        if stem in words:
            return skill
    return DEFAULT_POOL_SKILL


# ----- max_turns ----------------------------------------------------------------------------
def class_max_turns(
    cls: ast.ClassDef, classes: dict[str, ast.ClassDef] | None = None
) -> int | None:
    """The ``max_turns`` a class declares, as SPADE's loader (and the runtime's
    :func:`~spade_envs.core.duck.spade_max_turns`) finds it: a class attribute, else the
    default of ``__init__``'s ``max_turns`` parameter, each looked up through the
    module's own base ``classes`` too; None when it declares none."""
    lineage = _lineage(cls, classes or {})
    for node in lineage:
        for statement in node.body:
            targets = statement.targets if isinstance(statement, ast.Assign) else []
            if isinstance(statement, ast.AnnAssign) and statement.value is not None:
                targets = [statement.target]
            if any(isinstance(t, ast.Name) and t.id == "max_turns" for t in targets):
                return _turns(statement.value)  # type: ignore[union-attr]
    for node in lineage:
        init = next(
            (f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"),
            None,
        )
        if init is not None:
            args = init.args
            positional = args.posonlyargs + args.args
            names = [a.arg for a in positional][len(positional) - len(args.defaults) :]
            defaults = dict(zip(names, args.defaults))
            defaults.update(
                (a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None
            )
            return _turns(defaults.get("max_turns"))
    return None


def _lineage(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> list[ast.ClassDef]:
    """``cls`` and its bases defined in the module, in lookup order (depth first)."""
    order: list[ast.ClassDef] = []
    stack = [cls]
    while stack:
        node = stack.pop()
        if node in order:
            continue
        order.append(node)
        bases = [classes[b] for b in map(base_name, node.bases) if b in classes]
        stack.extend(reversed(bases))
    return order


def _turns(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 1:
        return node.value
    return None


def source_max_turns(source: str, class_name: str, default: int) -> int:
    """``max_turns`` of the class ``class_name`` in ``source``, read without running it.

    SPADE's loader semantics, as the runtime plays a SPADE-dialect class: the class's own
    ``max_turns``, else its ``__init__`` default (``ToolUseBaseEnv``'s is 10), else
    :data:`SPADE_DEFAULT_MAX_TURNS`. A native class (:mod:`spade_envs.core.dialect`),
    whose protocol base defines ``max_turns``, gets ``default`` when it declares none.
    """
    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return default
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    if class_name in classes:
        declared = class_max_turns(classes[class_name], classes)
        if declared is not None:
            return declared
    if dialect_of_tree(tree) is Dialect.NATIVE:
        return default
    return SPADE_DEFAULT_MAX_TURNS


def class_facts(source: str, class_name: str) -> tuple[bool, str]:
    """``(tool use, docstring)`` of the class ``class_name`` in ``source``: whether it
    derives from SPADE's ``ToolUseBaseEnv`` (a ``tool`` environment) and its docstring
    on one line (a SPADE game's description); ``(False, "")`` when it cannot be read."""
    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False, ""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    if class_name not in classes:
        return False, ""
    cls = classes[class_name]
    return _subclasses_tool_base(cls, classes), " ".join((ast.get_docstring(cls) or "").split())


def _subclasses_tool_base(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> bool:
    """Whether ``cls`` derives from ``ToolUseBaseEnv`` (through classes of the module too)."""
    stack, seen = [cls], set()
    while stack:
        node = stack.pop()
        if node.name in seen:
            continue
        seen.add(node.name)
        for base in map(base_name, node.bases):
            if base == "ToolUseBaseEnv":
                return True
            if base in classes:
                stack.append(classes[base])
    return False


# ----- the games ----------------------------------------------------------------------------
def read_pool(path: Path, problems: list[str], notes: list[str] | None = None) -> list[Row]:
    """The games of the SPADE pool at ``path``, oldest rollout first.

    Args:
        path: The pool: a games folder, a run folder or the static corpus's root.
        problems: Gets one line per game (or side file, or record in one) that was skipped,
            and why (symbolic links, FIFOs and devices among them: they are never opened).
        notes: Gets lines about what the pool lacks (no ``env_memory.json``).

    Raises:
        SpadeError: ``path`` is not a directory or holds no ``game_*.py`` files.
    """
    layout = find_pool(path)
    files = sorted(layout.games.glob("game_*.py"), key=pool_order)
    if layout.memory is None and layout.manifest is None and notes is not None:
        notes.append(
            f"no env_memory.json beside {layout.games} or in its cache: SPADE's win rates and "
            "regrets were not imported (skills come from the file names)."
        )
    memory = read_memory(layout.memory, problems)
    manifest = read_manifest(layout.manifest, problems)
    checksums = read_checksums(layout.checksums, problems)
    hints = cache_hints(layout.cache, problems)
    rows = []
    for file in files:
        try:
            rows.append(
                _pool_game(
                    file,
                    memory.get(file.name, []),
                    manifest.get(file.name),
                    checksums.get(file.name),
                    hints.get(file.stem),
                    problems,
                )
            )
        except SpadeError as exc:
            problems.append(f"{file.name}: {exc}")
    return rows


def _read_game(file: Path, checksum: str | None) -> str:
    try:
        data = read_regular(file, max_bytes=MAX_SOURCE_BYTES, what="pool game")
    except SpadeError as exc:
        raise SpadeError(f"not imported: {exc}") from None
    if checksum is not None and hashlib.sha256(data).hexdigest() != checksum:
        raise SpadeError(
            "does not match its checksums.sha256 line (changed or corrupted after download); "
            "not imported. Download the corpus again."
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpadeError(f"cannot read it ({exc}).") from None


def _read_hint(file: Path, cached: tuple[int, Path] | None) -> tuple[str, int | None]:
    """The game's hint (the cache's latest step, else beside the game) and its step."""
    if cached is None:
        step, hint_file = None, file.with_name(f"{file.stem}_hint.txt")
        if not exists_unfollowed(hint_file):
            return "", None
    else:
        step, hint_file = cached
    try:
        return read_text(hint_file, MAX_HINT_BYTES, "pool hint").strip(), step
    except SpadeError as exc:
        raise SpadeError(f"not imported: {exc}") from None


def _pool_game(
    file: Path,
    records: list[dict[str, Any]],
    entry: dict[str, Any] | None,
    checksum: str | None,
    cached_hint: tuple[int, Path] | None,
    problems: list[str],
) -> Row:
    """One pool game, read with ``ast`` (never executed)."""
    source = _read_game(file, checksum)
    try:
        tree = parse_source(source, filename=file.name)
    except SyntaxError as exc:
        raise SpadeError(f"does not parse: {exc.msg} (line {exc.lineno}).") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise SpadeError(f"cannot be parsed ({type(exc).__name__}).") from None
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    # SPADE's loader takes the first class whose name ends in "Env" (not its base classes).
    envs = [n for n in classes if n.endswith("Env") and n not in SPADE_SKIPPED_CLASSES]
    if not envs:
        raise SpadeError("expected one class whose name ends in 'Env', found none.")
    cls = classes[envs[0]]
    check_name(cls.name)
    hint, step = _read_hint(file, cached_hint)
    match = POOL_FILE.fullmatch(file.stem)
    label = match["slug"] if match else ""
    spade: dict[str, Any] = {"file": file.name}
    if match:
        spade.update(rollout=int(match["rollout"]), index=int(match["index"]))
    if entry:
        spade["manifest"] = entry
        for key in ("skill", "category"):
            if isinstance(entry.get(key), str) and entry[key].strip():
                label = entry[key]
                break
    record = memory_record(records, source)
    if record is not None:
        try:
            spade["memory"] = memory_stats(record)
        except SpadeError as exc:
            problems.append(
                f"{file.name}: its env_memory.json record was skipped ({exc}); the game was "
                "imported without SPADE's statistics."
            )
        else:
            label = spade["memory"]["skill"].strip() or label
    spade["skill"] = label[:MAX_LABEL_CHARS]
    if step is not None:
        spade["hint_step"] = step
    doc = ast.get_docstring(cls) or (ast.get_docstring(tree) or "").strip().split("\n")[0]
    kind = "tool" if _subclasses_tool_base(cls, classes) else "text"
    meta = EnvMetadata(
        name=cls.name,
        kind=kind,
        skill=spade_skill(label),
        description=" ".join(doc.split()),
        max_turns=source_max_turns(source, cls.name, SPADE_DEFAULT_MAX_TURNS),
        reward_range=(0.0, 1.0),
        origin="imported",
    )
    return Row(
        source,
        where=file.name,
        label=cls.name,
        meta=meta,
        hint=hint,
        extra={"spade": spade},
        description=meta.description,
    )
