"""The dialects environment sources are written in, and what each one is given.

Two dialects are read:

- ``native``: a subclass of :class:`~spade_envs.TextEnv`, ``ToolEnv`` or ``TextGame`` (or
  a suite adapter), importing what it uses, with ``hint()`` and ``solution()``.
- ``spade``: what the SPADE code's designers write (spade-rl/spade): a class named
  ``*Env`` with ``reset(seed=None)`` and ``step(action)`` returning SPADE's 5-tuple, maybe
  a subclass of SPADE's ``ToolUseBaseEnv`` that it never imports, using standard-library
  names it never imports either (SPADE's loader predefines them), often without
  ``solution()`` (SPADE's multi-turn contract asks for none).

A source is read as ``spade`` when it starts with SPADE's pool header, when it uses
``ToolUseBaseEnv`` without defining or importing it, or when it defines no class of our
protocol at all. Detection reads the syntax tree only.

The names SPADE's loader predefines are given to a SPADE-dialect module only where the
sandbox's module list allows them (:data:`PREDEFINED_MODULES`): they are the same
modules an ``import`` would give, so they widen nothing. numpy, which SPADE also
predefines, is not among them; a SPADE source that uses ``np`` is refused by the static
checks with that reason.
"""

from __future__ import annotations

import ast
import enum
import functools
import importlib
import typing
from typing import Any

from .pyparse import parse_source

__all__ = [
    "PREDEFINED_MODULES",
    "PROTOCOL_BASES",
    "SPADE_HEADER",
    "SPADE_SKIPPED_CLASSES",
    "UNAVAILABLE_PREDEFINED",
    "Dialect",
    "base_name",
    "detect_dialect",
    "dialect_label",
    "expected_win_rule",
    "dialect_of_tree",
    "predefined_names",
    "prepare_namespace",
    "spade_env_classes",
]

#: The docstring SPADE's pool writer puts at the top of every game file.
SPADE_HEADER = '"""SPADE self-play generated game"""'


class Dialect(str, enum.Enum):
    """The dialect a source was read as."""

    NATIVE = "native"
    SPADE = "spade"

    def __str__(self) -> str:
        return self.value


#: Modules SPADE's loader predefines that environment code may use here (each is in the
#: static checks' module list, so a predefined name is no more than its import).
PREDEFINED_MODULES: tuple[str, ...] = (
    "itertools", "math", "random", "re", "json", "collections", "functools", "string",
    "copy", "heapq", "operator", "statistics",
)  # fmt: skip
#: Names SPADE's loader predefines that are not given here, and why.
UNAVAILABLE_PREDEFINED: dict[str, str] = {
    "np": "numpy is not among the modules environment code may use here",
    "numpy": "numpy is not among the modules environment code may use here",
}
#: Class names SPADE's loader skips when it looks for the first ``*Env`` class.
SPADE_SKIPPED_CLASSES = frozenset({"Env", "ToolUseBaseEnv"})

_PREDEFINED_OBJECTS: dict[str, tuple[str, str]] = {
    # name -> (module, attribute): the members SPADE predefines beside whole modules
    "deque": ("collections", "deque"),
    "defaultdict": ("collections", "defaultdict"),
    "Counter": ("collections", "Counter"),
    "OrderedDict": ("collections", "OrderedDict"),
    "namedtuple": ("collections", "namedtuple"),
    "combinations": ("itertools", "combinations"),
    "permutations": ("itertools", "permutations"),
    "product": ("itertools", "product"),
    "chain": ("itertools", "chain"),
    "accumulate": ("itertools", "accumulate"),
    "reduce": ("functools", "reduce"),
    "lru_cache": ("functools", "lru_cache"),
    "deepcopy": ("copy", "deepcopy"),
    "heappush": ("heapq", "heappush"),
    "heappop": ("heapq", "heappop"),
}
_TYPING_NAMES = (
    "Tuple", "Dict", "List", "Optional", "Union", "Any", "Set", "FrozenSet", "Callable",
    "Iterable", "Sequence", "Mapping",
)  # fmt: skip
#: Our protocol's bases and the suite adapters (a class deriving from one is ours).
PROTOCOL_BASES = frozenset(
    {"TextEnv", "ToolEnv", "TextGame", "GameSeatEnv", "ReasoningGymTask", "RlveTask"}
    | {"TextArenaTask", "TextArenaGame"}
)


@functools.lru_cache(maxsize=1)
def predefined_names() -> dict[str, Any]:
    """Every name a SPADE-dialect module finds defined (``ToolUseBaseEnv`` included)."""
    from .spade_tool import ToolUseBaseEnv

    names: dict[str, Any] = {m: importlib.import_module(m) for m in PREDEFINED_MODULES}
    for name, (module, attribute) in _PREDEFINED_OBJECTS.items():
        names[name] = getattr(importlib.import_module(module), attribute)
    for name in _TYPING_NAMES:
        names[name] = getattr(typing, name)
    names["ToolUseBaseEnv"] = ToolUseBaseEnv
    return names


def prepare_namespace(namespace: dict[str, Any], source: str) -> Dialect:
    """Give a module namespace what its dialect expects before the source runs in it.

    Returns:
        The dialect ``source`` was read as.
    """
    dialect = detect_dialect(source)
    if dialect is Dialect.SPADE:
        for name, value in predefined_names().items():
            namespace.setdefault(name, value)
    return dialect


def base_name(node: ast.expr) -> str:
    """The name a base-class expression ends in (``Env``, ``x.Env``), or ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _base_names(node: ast.ClassDef) -> list[str]:
    return [name for name in map(base_name, node.bases) if name]


def _bound_names(tree: ast.Module) -> set[str]:
    """Names the module binds at top level (classes, functions, imports, assignments)."""
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound.update(t.id for t in targets if isinstance(t, ast.Name))
    return bound


def _protocol_classes(classes: dict[str, ast.ClassDef]) -> set[str]:
    """Classes of ours, directly or through classes of the module."""
    protocol: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, node in classes.items():
            if name not in protocol and any(
                b in protocol or (b in PROTOCOL_BASES and b not in classes)
                for b in _base_names(node)
            ):
                protocol.add(name)
                changed = True
    return protocol


def expected_win_rule(source: str) -> str:
    """The win rule ``source``'s environment must have, decided from its syntax tree
    (never from what the environment reports): ``return`` for a class of our protocol,
    ``final_reward`` for a SPADE game adapted from a ``*Env`` class."""
    return _source_facts(source)[1]


def dialect_of_tree(tree: ast.Module) -> Dialect:
    """The dialect of a parsed module (see the module docstring for the rules)."""
    body = tree.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and body[0].value.value == SPADE_HEADER.strip('"')
    ):
        return Dialect.SPADE
    classes = {n.name: n for n in body if isinstance(n, ast.ClassDef)}
    bound = _bound_names(tree)
    protocol = _protocol_classes(classes)
    uses_tool_base = "ToolUseBaseEnv" not in bound and any(
        "ToolUseBaseEnv" in _base_names(n) for n in classes.values()
    )
    if uses_tool_base or not protocol:
        return Dialect.SPADE
    return Dialect.NATIVE


def detect_dialect(source: str) -> Dialect:
    """The dialect ``source`` is written in (native when it does not parse: the static
    checks then say why)."""
    return _source_facts(source)[0]


@functools.lru_cache(maxsize=4096)
def _source_facts(source: str) -> tuple[Dialect, str]:
    """``(dialect, win rule)`` of ``source``, from one parse (the door asks at every open)."""
    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Dialect.NATIVE, "return"
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    rule = "return" if _protocol_classes(classes) else "final_reward"
    return dialect_of_tree(tree), rule


def spade_env_classes(names: list[str]) -> list[str]:
    """The candidate game classes in definition order, as SPADE's loader scans them: names
    ending in ``Env``, without the base classes it skips."""
    return [n for n in names if n.endswith("Env") and n not in SPADE_SKIPPED_CLASSES]


#: One line per dialect, for ``show``, the web page and the API.
DIALECT_NOTES = {
    Dialect.NATIVE: "spade_envs protocol (TextEnv, ToolEnv or TextGame)",
    Dialect.SPADE: (
        "SPADE's (spade-rl/spade): predefined names, the first *Env class, SPADE's rewards and wins"
    ),
}


def dialect_label(source: str) -> str:
    """``"<dialect> (<what that means>)"`` for ``source``."""
    dialect = detect_dialect(source)
    return f"{dialect.value} ({DIALECT_NOTES[dialect]})"
