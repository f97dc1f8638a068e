"""Static checks: what can be judged from the source text without running it."""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.dialect import (
    UNAVAILABLE_PREDEFINED,
    Dialect,
    base_name,
    dialect_of_tree,
    spade_env_classes,
)
from ..core.pyparse import parse_source
from .budget import Budget
from .report import CheckResult

if TYPE_CHECKING:
    from ..core.metadata import EnvMetadata

__all__ = [
    "ALLOWED_MODULES",
    "FORBIDDEN_CALLS",
    "PUBLIC_NAMES",
    "StaticInfo",
    "static_checks",
    "static_metadata",
]

#: Standard-library modules an environment may import (plus ``spade_envs`` and
#: ``math_verify``, each limited to a few top-level names: :data:`PUBLIC_NAMES`,
#: :data:`MATH_VERIFY_NAMES`). Nothing that touches files, processes, the network, the
#: clock or the interpreter's internals.
ALLOWED_MODULES: frozenset[str] = frozenset(
    """__future__ abc array bisect calendar cmath collections copy dataclasses datetime decimal
    difflib enum fractions functools hashlib heapq itertools json math numbers operator pprint
    random re statistics string textwrap types typing unicodedata zlib spade_envs
    math_verify""".split()
)
#: What an environment may take from ``spade_envs``: these top-level names, no submodules
#: (several re-export ``os``, ``sys`` or ``subprocess``). An early filter: the sandbox
#: holds without it.
PUBLIC_NAMES: frozenset[str] = frozenset(
    """TextEnv ToolEnv TextGame GameSeatEnv UnicodeText answers_match boxed extract_answer
    extract_boxed extract_tag normalize_text parse_number parse_tool_call ToolError
    IllegalMove EnvContractError SpadeError suggest ReasoningGymTask RlveTask TextArenaTask
    TextArenaGame""".split()
)
#: Builtins whose use is rejected: they run arbitrary code, read files or reach the interpreter.
FORBIDDEN_CALLS: frozenset[str] = frozenset(
    "__import__ eval exec compile open breakpoint exit quit globals".split()
)
_ESCAPE_ATTRIBUTES = frozenset(
    """__subclasses__ __globals__ __builtins__ __code__ __closure__ __loader__ __import__
    __traceback__ tb_frame tb_next f_globals f_locals f_builtins f_back f_code gi_frame
    gi_code cr_frame ag_frame __self__ __func__ __spec__ __reduce__ __reduce_ex__""".split()
)
_PROTOCOL_BASES = {"TextEnv": "text", "ToolEnv": "tool", "TextGame": "game"}
# Suite adapters: text environments whose hooks come from the base; a suite offers no
# hint unless the module defines one.
_SUITE_BASES = {
    "ReasoningGymTask": "text",
    "RlveTask": "text",
    "TextArenaTask": "text",
    "TextArenaGame": "game",
}
# The hooks a suite base provides (TextArenaGame: a TextGame's, raising NotImplementedError
# where the game has no reference player, as solution() does for unproven text tasks).
_SUITE_METHODS = {"_reset", "_step", "solution", "_observe", "_move", "legal_moves", "best_move"}
#: The class attributes the suite importer writes (spade_envs/suites/catalog.py _render);
#: a declaration with any other is not one the importer made.
_SUITE_ATTRIBUTES = frozenset(
    """skill description suite_version task level module dataset_class config_class config
    env_class parameters""".split()
)
#: What SPADE's ToolUseBaseEnv gives a subclass (its reset and solution only raise).
_TOOL_BASE_METHODS = frozenset({"step", "get_tools", "execute_tool", "_check_answer"})
_REQUIRED = {
    "text": [("_reset", "reset"), ("_step", "step"), ("hint",), ("solution",)],
    "tool": [("_reset", "reset"), ("hint",), ("solution",)],
    "game": [("_reset",), ("_observe",), ("_move",), ("legal_moves",), ("best_move",), ("hint",)],
    "duck": [("reset",), ("step",)],
}


@dataclass
class StaticInfo:
    """What the static pass learned about the source."""

    env_name: str = ""
    kind: str = ""
    max_turns: int | None = None
    skill: str = ""
    description: str = ""
    imports: list[str] = field(default_factory=list)
    has_hint: bool = False
    #: The class defines ``solution()`` (a SPADE-dialect game may not: it is then unproven).
    has_solution: bool = True
    #: The dialect the source is read as (:class:`~spade_envs.core.dialect.Dialect`).
    dialect: str = "native"
    #: Something the author should know that rejects nothing (other ``*Env`` classes).
    notice: str = ""
    #: Set by the validator: why the checks that need a solution could not run.
    unproven: str = ""
    #: A suite task the importer wrote (no hint by design; see ``suite_import``).
    suite_task: bool = False


def _classify(classes: dict[str, ast.ClassDef]) -> dict[str, str]:
    """Kind of every class that is an environment, following bases within the module."""
    kinds: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for name, node in classes.items():
            if name in kinds:
                continue
            for base in node.bases:
                name_of_base = base_name(base)
                kind = (
                    _PROTOCOL_BASES.get(name_of_base)
                    or _SUITE_BASES.get(name_of_base)
                    or kinds.get(name_of_base)
                )
                if kind:
                    kinds[name] = kind
                    changed = True
                    break
    return kinds


def _methods(name: str, classes: dict[str, ast.ClassDef]) -> set[str]:
    """Methods defined on ``name`` or on its bases within the module."""
    found: set[str] = set()
    stack, seen = [name], set()
    while stack:
        current = stack.pop()
        if current in seen or current not in classes:
            continue
        seen.add(current)
        node = classes[current]
        found.update(
            n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        )
        bases = [base_name(b) for b in node.bases]
        if "ToolUseBaseEnv" in bases and "ToolUseBaseEnv" not in classes:
            found.update(_TOOL_BASE_METHODS)  # SPADE's base, given to the SPADE dialect
        stack.extend(bases)
    return found


def _suite_bases_imported(tree: ast.Module) -> set[str]:
    """The suite base names the module takes from ``spade_envs`` under their own names
    (``from spade_envs import TextEnv as ReasoningGymTask`` is not one)."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "spade_envs" and not node.level:
            found.update(
                a.name for a in node.names if a.name in _SUITE_BASES and a.asname in (None, a.name)
            )
    return found


def _pure_suite_task(name: str, classes: dict[str, ast.ClassDef], imported: set[str]) -> bool:
    """Whether ``name`` looks like a suite task: a class whose bases are imported suite
    adapters (directly or through such classes of the module) and whose bodies only set
    class attributes to literals. It exempts nothing (only :func:`_importer_shape`, for
    the importer's sources, does): it words the refusal of such a class that came any
    other way and defines no hint()."""
    stack, seen = [name], set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        node = classes.get(current)
        if node is None:
            if current not in imported:
                return False
            continue
        for statement in node.body:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue  # a docstring
            value = getattr(statement, "value", None)
            targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
            if not (
                isinstance(statement, (ast.Assign, ast.AnnAssign))
                and value is not None
                and all(isinstance(t, ast.Name) for t in targets)
                and _is_literal(value)
            ):
                return False
        stack.extend(base_name(b) for b in node.bases)
    return True


def _importer_shape(tree: ast.Module, name: str) -> bool:
    """Whether the module is exactly what the suite importer writes: a docstring, one
    ``from spade_envs import <adapter>``, and the class ``name`` deriving from that
    adapter alone, its body a docstring and literal assignments to the importer's
    attributes. No decorator, keyword, annotation or other statement (an assignment to
    the class after it, a ``setattr``, a rebinding of the adapter) fits."""
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 2:
        return False
    imported, declared = body
    if not (
        isinstance(imported, ast.ImportFrom)
        and imported.module == "spade_envs"
        and not imported.level
        and len(imported.names) == 1
        and imported.names[0].name in _SUITE_BASES
        and imported.names[0].asname is None
    ):
        return False
    adapter = imported.names[0].name
    if not (
        isinstance(declared, ast.ClassDef)
        and declared.name == name
        and not declared.decorator_list
        and not declared.keywords
        and not getattr(declared, "type_params", None)
        and len(declared.bases) == 1
        and isinstance(declared.bases[0], ast.Name)
        and declared.bases[0].id == adapter
    ):
        return False
    statements = declared.body
    if statements and isinstance(statements[0], ast.Expr):
        if not isinstance(statements[0].value, ast.Constant):
            return False
        statements = statements[1:]
    return all(
        isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Name)
        and s.targets[0].id in _SUITE_ATTRIBUTES
        and _is_literal(s.value)
        for s in statements
    )


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _derives_from_suite(name: str, classes: dict[str, ast.ClassDef]) -> bool:
    stack, seen = [name], set()
    while stack:
        current = stack.pop()
        if current in _SUITE_BASES and current not in classes:
            return True
        if current in seen or current not in classes:
            continue
        seen.add(current)
        stack.extend(base_name(b) for b in classes[current].bases)
    return False


def _abstract(node: ast.ClassDef) -> bool:
    """Same rule as the loader: ABC, a Base/Abstract/Mixin name, or raises NotImplementedError."""
    if node.name.startswith(("Base", "Abstract")) or node.name.endswith(("Base", "Mixin")):
        return True
    if any(base_name(b) in ("ABC", "ABCMeta") for b in node.bases):
        return True
    for inner in ast.walk(node):
        if isinstance(inner, ast.Raise) and inner.exc is not None:
            target = inner.exc.func if isinstance(inner.exc, ast.Call) else inner.exc
            if base_name(target) == "NotImplementedError":
                return True
    return False


def _class_int(node: ast.ClassDef, attribute: str) -> int | None:
    value = _class_constant(node, attribute)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _class_constant(node: ast.ClassDef, attribute: str) -> object:
    """The literal value of a class attribute (None when absent or not a literal)."""
    for statement in node.body:
        targets = []
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        for target in targets:
            if isinstance(target, ast.Name) and target.id == attribute:
                if isinstance(value, ast.Constant):
                    return value.value
    return None


def _env_class(tree: ast.Module, info: StaticInfo, suite_import: bool = False) -> str:
    """Empty when the module has exactly one usable environment class; else the reason.

    ``suite_import``: the source comes from the suite importer, which alone may declare
    a suite task without a hint (and only in the exact shape it writes)."""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    kinds = _classify(classes)
    # Abstract intermediate bases extended by another env class do not count; a concrete
    # class that is extended does (two environments in one module).
    used_as_base = {base_name(b) for n in kinds for b in classes[n].bases}
    concrete = [n for n in kinds if n not in used_as_base or not _abstract(classes[n])]
    if not concrete:
        # The SPADE dialect: the first class named *Env is the game, as SPADE's loader
        # takes it; the others are named in a notice.
        candidates = spade_env_classes(list(classes))
        if not candidates:
            return (
                "no environment class. Our dialect: one subclass of spade_envs.TextEnv, "
                "ToolEnv or TextGame with hint() and solution(). SPADE's dialect: a class "
                "named *Env with reset(seed=None) and step(action) returning (observation, "
                "reward, terminated, truncated, info), or a subclass of ToolUseBaseEnv"
            )
        first = candidates[0]
        missing = [m for m in ("reset", "step") if m not in _methods(first, classes)]
        if missing:
            return (
                f"{first} is the game class (SPADE's loader takes the first class named *Env) "
                f"but it is missing required method: {', '.join(missing)}"
            )
        if len(candidates) > 1:
            info.notice = (
                f"{first} is the environment (the first class named *Env, as SPADE's loader "
                f"takes it); also defined: {', '.join(candidates[1:])}"
            )
        concrete, kinds = [first], {first: "duck"}
    if len(concrete) > 1:
        return (
            f"found {len(concrete)} environment classes ({', '.join(sorted(concrete))}); "
            "put exactly one in the module"
        )
    name = concrete[0]
    info.env_name, info.kind = name, kinds[name]
    info.max_turns = _class_int(classes[name], "max_turns")
    for attribute in ("skill", "description"):
        value = _class_constant(classes[name], attribute)
        if isinstance(value, str):
            setattr(info, attribute, " ".join(value.split()))
    methods = _methods(name, classes)
    # Protocol classes must define hint() and solution(); a SPADE-dialect (duck) class
    # may define neither (it is then unproven), nor does a suite task define a hint.
    info.has_hint = info.kind != "duck" or "hint" in methods
    info.has_solution = info.kind != "duck" or "solution" in methods
    if suite_import and _importer_shape(tree, name):
        info.has_hint = False
        info.suite_task = True
        methods |= _SUITE_METHODS | {"hint"}
    elif _derives_from_suite(name, classes):
        methods |= _SUITE_METHODS  # the hooks exist; hint() must be its own, and is checked
        if "hint" not in methods and _pure_suite_task(name, classes, _suite_bases_imported(tree)):
            # Whatever its shape, only the importer registers a task without a hint: a
            # declaration that reaches the gate any other way gets its hint() checked.
            if suite_import:
                return (
                    f"{name} is not in the exact shape the suite importer writes (only a "
                    "docstring, the adapter's import and the class's literal attributes; "
                    "nothing after the class); as an ordinary environment it must define "
                    "its own hint(), which is checked"
                )
            return (
                f"{name} is declared like a suite task, but suite tasks are registered only "
                "by `spade-envs import --suite` (which writes them); an environment "
                "registered any other way must define its own hint(), which is checked"
            )
    missing = [
        " or ".join(options)
        for options in _REQUIRED[info.kind]
        if not any(o in methods for o in options)
    ]
    if info.kind == "tool" and not any(m.startswith("tool_") for m in methods):
        missing.append("at least one tool_<name> method")
    if missing:
        return f"{name} ({info.kind}) is missing: {', '.join(missing)}"
    return ""


def _import_problems(tree: ast.Module, allowed: frozenset[str], info: StaticInfo) -> list[str]:
    problems: list[str] = []
    package_aliases = set()
    for node in ast.walk(tree):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
            for alias in node.names:
                if alias.name == "spade_envs":
                    package_aliases.add(alias.asname or "spade_envs")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                problems.append(f"line {node.lineno}: relative import; the module must stand alone")
                continue
            modules = [node.module or ""]
            if node.module == "spade_envs":
                problems += [
                    f"line {node.lineno}: spade_envs.{alias.name} is not part of the environment "
                    f"API (use {', '.join(sorted(PUBLIC_NAMES))})"
                    for alias in node.names
                    if alias.name not in PUBLIC_NAMES
                ]
        for module in modules:
            info.imports.append(module)
            root = module.split(".")[0]
            if root not in allowed:
                problems.append(f"line {node.lineno}: import of {module!r} is not allowed")
            elif root == "spade_envs" and module != "spade_envs":
                problems.append(
                    f"line {node.lineno}: import of {module!r}: take names from the top-level "
                    "package only (from spade_envs import TextEnv, boxed, ...)"
                )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in FORBIDDEN_CALLS:
                problems.append(f"line {node.lineno}: call to {node.func.id}() is not allowed")
        if isinstance(node, ast.Attribute) and node.attr in _ESCAPE_ATTRIBUTES:
            problems.append(f"line {node.lineno}: access to {node.attr} is not allowed")
    if package_aliases:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in package_aliases
                and node.attr not in PUBLIC_NAMES
            ):
                problems.append(
                    f"line {node.lineno}: spade_envs.{node.attr} is not part of the environment API"
                )
    problems += _math_verify_problems(tree)
    return problems


#: What an environment may take from ``math_verify`` (PyPI ``math-verify``, which SPADE's
#: environments grade answers with): ``from math_verify import parse, verify``, or
#: ``import math_verify`` and then ``math_verify.parse(...)``; these names only. The rest
#: of the package is a path around the module list: ``math_verify.parser.sympy`` (whose
#: ``sympify`` runs a string as Python), ``math_verify.utils.os``, ``signal`` and
#: ``logging``. So no submodule, no other attribute, and the module object itself is never
#: passed on (``getattr(math_verify, ...)``, ``vars(math_verify)``). An early filter like
#: the rest: the sandbox holds without it (docs/validator.md).
MATH_VERIFY_NAMES: frozenset[str] = frozenset(
    """parse verify ExprExtractionConfig LatexExtractionConfig StringExtractionConfig
    LatexNormalizationConfig""".split()
)


def _math_verify_problems(tree: ast.Module) -> list[str]:
    """Uses of ``math_verify`` beyond :data:`MATH_VERIFY_NAMES`."""
    names = ", ".join(sorted(MATH_VERIFY_NAMES))
    why = "its submodules hold sympy, which runs strings as Python, and os"
    problems: list[str] = []
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "math_verify":
                    aliases.add(alias.asname or "math_verify")
                elif alias.name.startswith("math_verify."):
                    problems.append(
                        f"line {node.lineno}: import of {alias.name!r}: take {names} from "
                        f"the top-level package only ({why})"
                    )
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.startswith("math_verify."):
                problems.append(
                    f"line {node.lineno}: import of {node.module!r}: take {names} from the "
                    f"top-level package only ({why})"
                )
            elif node.module == "math_verify":
                problems += [
                    f"line {node.lineno}: math_verify.{alias.name} is not allowed (use {names})"
                    for alias in node.names
                    if alias.name not in MATH_VERIFY_NAMES
                ]
    if not aliases:
        return problems
    used = set()  # the alias Names read as math_verify.<allowed name>
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            used.add(id(node.value))
            if node.attr not in MATH_VERIFY_NAMES:
                problems.append(
                    f"line {node.lineno}: math_verify.{node.attr} is not allowed: use only "
                    f"{names} ({why})"
                )
    problems += [
        f"line {node.lineno}: the math_verify module may only be used as math_verify.<name> "
        f"with a name among {names} (not passed on or inspected: {why})"
        for node in ast.walk(tree)
        if isinstance(node, ast.Name)
        and node.id in aliases
        and isinstance(node.ctx, ast.Load)
        and id(node) not in used
    ]
    return problems


def _unavailable_predefined(tree: ast.Module) -> list[str]:
    """Uses of names SPADE's loader predefines but this one does not (numpy), when the
    module never binds them itself."""
    bound = {
        (a.asname or a.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for a in node.names
    }
    bound |= {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    problems = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Name)
            and node.id in UNAVAILABLE_PREDEFINED
            and node.id not in bound
            and isinstance(node.ctx, ast.Load)
        ):
            problems.append(
                f"line {node.lineno}: {node.id} is used without an import; SPADE's loader "
                f"predefines it, but {UNAVAILABLE_PREDEFINED[node.id]} (use random, math "
                "or statistics)"
            )
            break
    return problems


def _input_calls(tree: ast.Module) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "input"
    ]


def static_checks(
    source: str,
    budget: Budget,
    *,
    allowed_modules: frozenset[str] | None = None,
    suite_import: bool = False,
) -> tuple[list[CheckResult], StaticInfo]:
    """Run the static checks in order; later ones are skipped after a failure that blocks them.

    Args:
        source: The environment module.
        budget: Its limits (source size, ``max_turns``).
        allowed_modules: Import allow-list (default :data:`ALLOWED_MODULES`).
        suite_import: The source was written by the suite importer
            (``spade-envs import --suite``): a task in exactly the shape it writes has no
            hint by design. Every other caller leaves this False, so a suite-shaped
            module from anywhere else must define a hint(), which is checked.
    """
    allowed = ALLOWED_MODULES if allowed_modules is None else frozenset(allowed_modules)
    info = StaticInfo()
    results: list[CheckResult] = []

    def record(name: str, start: float, reason: str = "", skipped: bool = False) -> None:
        results.append(
            CheckResult(
                name,
                passed=not reason and not skipped,
                reason=reason,
                seconds=time.perf_counter() - start,
                skipped=skipped,
            )
        )

    start = time.perf_counter()
    if len(source) > budget.max_source_chars:
        # Checked before parsing: a 12 MB module once took the parser to 2.7 GB.
        record(
            "size",
            start,
            f"the source has {len(source)} characters; keep it under {budget.max_source_chars}",
        )
        for name in ("syntax", "env_class", "imports", "no_input"):
            record(name, time.perf_counter(), skipped=True)
        return results, info
    try:
        tree = parse_source(source)
    except SyntaxError as exc:
        record("syntax", start, f"line {exc.lineno}: {exc.msg}; fix the syntax error")
        for name in ("size", "env_class", "imports", "no_input"):
            record(name, time.perf_counter(), skipped=True)
        return results, info
    except (ValueError, RecursionError, MemoryError) as exc:
        record("syntax", start, f"the source cannot be parsed ({type(exc).__name__})")
        return results, info
    record("syntax", start)

    start = time.perf_counter()
    info.dialect = dialect_of_tree(tree).value
    class_reason = _env_class(tree, info, suite_import)
    size_reason = ""
    if info.max_turns is not None and not 1 <= info.max_turns <= budget.max_turns_limit:
        size_reason = (
            f"max_turns = {info.max_turns}; use 1 to {budget.max_turns_limit} so "
            "episodes stay short enough to play and train on"
        )
    record("size", start, size_reason)
    record("env_class", start, class_reason)
    if info.suite_task:  # the report says why no hint check applies
        results[-1].details = {"suite_task": True, "origin": "suite importer"}
    if info.notice:
        results[-1].details["notice"] = info.notice

    start = time.perf_counter()
    problems = _import_problems(tree, allowed, info)
    if info.dialect == Dialect.SPADE.value:
        problems += _unavailable_predefined(tree)
    reason = ""
    if problems:
        reason = (
            f"{problems[0]}"
            + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
            + "; use only the standard library subset "
            f"({', '.join(sorted(m for m in allowed if m != '__future__'))})"
        )
    record("imports", start, reason)

    start = time.perf_counter()
    lines = _input_calls(tree)
    record(
        "no_input",
        start,
        f"line {lines[0]}: input() blocks forever; environments get their actions from step()"
        if lines
        else "",
    )
    return results, info


def static_metadata(
    source: str, *, origin: str = "designer", parents: tuple[str, ...] = ()
) -> EnvMetadata:
    """What the registry records about ``source``, read without running it.

    Raises:
        SpadeError: The source defines no environment class (validate it first).
    """
    from ..core.metadata import EnvMetadata
    from ..error import SpadeError
    from .budget import get_budget

    _, info = static_checks(source, get_budget("fast"))
    if not info.env_name:
        raise SpadeError("The source defines no environment class; validate it first.")
    return EnvMetadata(
        name=info.env_name,
        kind="text" if info.kind == "duck" else info.kind,
        skill=info.skill,
        description=info.description,
        max_turns=info.max_turns or 1,
        reward_range=(0.0, 1.0),
        origin=origin,
        parents=tuple(parents),
    )
