"""Relations between a parent's holes: what must hold between the values a filling gives.

Bounds keep each hole in range on its own, but a description can only be true, and a
task hard, when the holes agree with each other: ``low=120, high=0`` lies in every
bound and makes the thermostat's range empty; a guessing range of 1..4 with 30 guesses
is won by trying every number. A parent states such relations in its environment class::

    class LabThermostat(ToolEnv):
        hole_relations = ("low + 10 <= high", "high - low <= 63")

Each string is a comparison (chained ones too: ``2 <= ship <= size``) of terms built
from integer literals, ``+``, ``-``, ``*``, parentheses, and names:

- a value hole holding a number, by its name (``max_turns``);
- a number inside a dict hole, as ``hole.key`` (``knobs.low``) or by the key alone
  (``low``) when no hole or other key shares it;
- ``len(hole)``: the length of a list, text or dict hole.

The strings are read with :mod:`ast` from the parent's source and evaluated here, in
the designer's process, on the values the filling gives; nothing of the environment
runs (a relation is never ``eval``-ed), so a designer-written parent may declare
relations too. A malformed relation makes the parent unusable
(:class:`RelationError` at :class:`~.scaffold.Scaffold` construction).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..core.pyparse import parse_source
from ..error import SpadeError, suggest

__all__ = ["ATTRIBUTE", "Relation", "RelationError", "parse_relation", "read_relations"]

#: The class attribute that holds a parent's relations (a tuple or list of strings).
ATTRIBUTE = "hole_relations"
#: Longest relation text, most relations and most syntax nodes in one: a parent's
#: relations are read in the designer's process, so they must cost it nothing.
MAX_CHARS = 200
MAX_RELATIONS = 32
MAX_NODES = 60
#: Largest integer literal (products of literals and hole values stay small numbers).
MAX_LITERAL = 10**9

_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
}


class RelationError(SpadeError):
    """A parent's ``hole_relations`` cannot be read: not a literal list of strings, or a
    relation that does not parse, names no hole, or uses something besides comparisons of
    ``+ - *`` terms."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def names_of(values: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """What a relation may name, for holes whose values are ``values``: name ->
    ``(hole, key)`` (``key`` None for a number hole, else the dict key)."""
    names: dict[str, tuple[str, str | None]] = {}
    keyed: dict[str, list[str]] = {}
    for hole, value in values.items():
        if _is_number(value):
            names[hole] = (hole, None)
        elif isinstance(value, dict):
            for key, item in value.items():
                if _is_number(item):
                    names[f"{hole}.{key}"] = (hole, key)
                    keyed.setdefault(key, []).append(hole)
    for key, holes in keyed.items():
        if len(holes) == 1 and key not in values:  # a bare key only where it is unambiguous
            names.setdefault(key, (holes[0], key))
    return names


@dataclass(frozen=True)
class Relation:
    """One relation between holes.

    Attributes:
        text: The relation as the parent wrote it.
        tree: Its parsed expression (checked: only the allowed syntax).
        names: The names it reads (hole names, ``hole.key``, ``len(hole)``).
    """

    text: str
    tree: ast.expr
    names: tuple[str, ...]

    def holds(self, values: dict[str, Any]) -> bool:
        """Whether the relation holds for complete hole values (hole name -> value)."""
        return bool(_evaluate(self.tree, values))

    def shown(self, values: dict[str, Any]) -> str:
        """The values the relation reads, as ``name=value`` (for messages)."""
        shown = []
        for name in self.names:
            try:
                shown.append(f"{name}={_lookup(name, values)!r}")
            except (KeyError, TypeError):
                shown.append(f"{name}=?")
        return ", ".join(shown)


def parse_relation(text: Any, values: dict[str, Any]) -> Relation:
    """Parse one relation and check the names it uses against the holes.

    Args:
        text: The relation, e.g. ``"low + 10 <= high"``.
        values: Every hole's value in the parent (hole name -> value).

    Raises:
        RelationError: It is not a string, too long, does not parse, is not a comparison,
            uses syntax besides names, integers, ``+ - *``, parentheses and ``len()``, or
            names no number hole.
    """
    if not isinstance(text, str):
        raise RelationError(f"a hole relation must be a string, got {type(text).__name__}")
    shown = text if len(text) <= 80 else text[:77] + "..."
    if len(text) > MAX_CHARS:
        raise RelationError(f"hole relation {shown!r} is longer than {MAX_CHARS} characters")
    try:
        tree = parse_source(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise RelationError(f"hole relation {shown!r} does not parse ({exc.msg})") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise RelationError(f"hole relation {shown!r} has more than {MAX_NODES} syntax nodes")
    if not isinstance(tree, ast.Compare):
        raise RelationError(
            f"hole relation {shown!r} is not a comparison: write e.g. 'low < high' "
            "(<, <=, >, >=, ==, != between terms)"
        )
    for op in tree.ops:
        if type(op) not in _COMPARE:
            raise RelationError(
                f"hole relation {shown!r} compares with {type(op).__name__}: use <, <=, >, "
                ">=, == or !="
            )
    used: list[str] = []
    available = names_of(values)
    for node in [tree.left, *tree.comparators]:
        _check_term(node, shown, values, available, used)
    return Relation(text=text, tree=tree, names=tuple(dict.fromkeys(used)))


def _check_term(
    node: ast.expr,
    shown: str,
    values: dict[str, Any],
    available: dict[str, tuple[str, str | None]],
    used: list[str],
) -> None:
    def bad(what: str) -> RelationError:
        return RelationError(f"hole relation {shown!r}: {what}")

    if isinstance(node, ast.Constant):
        if not isinstance(node.value, int) or isinstance(node.value, bool):
            raise bad(f"{node.value!r} is not an integer (only integer literals are allowed)")
        if abs(node.value) > MAX_LITERAL:
            raise bad(f"the literal {node.value} is larger than {MAX_LITERAL}")
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _ARITHMETIC:
            raise bad(f"{type(node.op).__name__} is not allowed (only +, - and *)")
        _check_term(node.left, shown, values, available, used)
        _check_term(node.right, shown, values, available, used)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, (ast.USub, ast.UAdd)):
            raise bad(f"{type(node.op).__name__} is not allowed (only +, - and *)")
        _check_term(node.operand, shown, values, available, used)
    elif isinstance(node, (ast.Name, ast.Attribute)):
        name = _dotted(node)
        if name is None:
            raise bad("only 'hole' and 'hole.key' names are allowed")
        if name not in available:
            hint = suggest(name, available)
            raise bad(f"{name!r} names no number hole.{hint} Names: {', '.join(sorted(available))}")
        used.append(name)
    elif isinstance(node, ast.Call):
        if not (
            isinstance(node.func, ast.Name)
            and node.func.id == "len"
            and len(node.args) == 1
            and not node.keywords
            and isinstance(node.args[0], ast.Name)
        ):
            raise bad("the only call allowed is len(hole)")
        hole = node.args[0].id
        if not isinstance(values.get(hole), (list, str, dict)):
            raise bad(f"len({hole}) needs a list, text or dict hole named {hole!r}")
        used.append(f"len({hole})")
    elif isinstance(node, ast.Compare):
        raise bad("a comparison inside a term is not allowed (chain them: 'a < b <= c')")
    else:
        raise bad(f"{type(node).__name__} is not allowed (only names, integers, + - * and ())")


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _lookup(name: str, values: dict[str, Any]) -> Any:
    if name.startswith("len(") and name.endswith(")"):
        return len(values[name[4:-1]])
    hole, key = names_of(values)[name]
    return values[hole] if key is None else values[hole][key]


def _evaluate(node: ast.expr, values: dict[str, Any]) -> Any:
    # Only the node types _check_term let through reach here.
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, values)
        for op, comparator in zip(node.ops, node.comparators):
            right = _evaluate(comparator, values)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp):
        return _ARITHMETIC[type(node.op)](
            _evaluate(node.left, values), _evaluate(node.right, values)
        )
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, values)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Call):
        return len(values[node.args[0].id])  # type: ignore[attr-defined]
    return _lookup(_dotted(node) or "", values)


def read_relations(
    tree: ast.Module, class_name: str, values: dict[str, Any], where: str = "<parent>"
) -> list[Relation]:
    """The relations class ``class_name`` of a parsed parent declares (``[]`` if none).

    Args:
        tree: The parent module, parsed.
        class_name: Its environment class.
        values: Every hole's value in the parent: the names relations may use, and the
            values the parent itself must satisfy.
        where: The parent's ID, for messages.

    Raises:
        RelationError: The attribute is not a literal tuple/list of strings, a relation is
            malformed (see :func:`parse_relation`), or the parent's own values break one.
    """
    statements = _declarations(tree, class_name)
    if not statements:
        return []
    if len(statements) > 1:
        raise RelationError(f"{where}: {ATTRIBUTE} is assigned more than once")
    try:
        texts = ast.literal_eval(statements[0])
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        texts = None
    if not isinstance(texts, (tuple, list)):
        raise RelationError(
            f"{where}: {ATTRIBUTE} must be a literal tuple of strings, e.g. "
            f'{ATTRIBUTE} = ("low < high",)'
        )
    if len(texts) > MAX_RELATIONS:
        raise RelationError(f"{where}: more than {MAX_RELATIONS} {ATTRIBUTE}")
    try:
        relations = [parse_relation(text, values) for text in texts]
    except RelationError as exc:
        raise RelationError(f"{where}: {exc}") from None
    broken = first_broken(relations, values)
    if broken is not None:
        raise RelationError(
            f"{where}: the parent's own values break its hole relation {broken.text!r} "
            f"({broken.shown(values)}); fix the relation or the values"
        )
    return relations


def _declarations(tree: ast.Module, class_name: str) -> list[ast.expr]:
    found: list[ast.expr] = []
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name == class_name):
            continue
        for statement in node.body:
            if isinstance(statement, ast.Assign):
                targets = statement.targets
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                targets = [statement.target]
            else:
                continue
            if any(isinstance(t, ast.Name) and t.id == ATTRIBUTE for t in targets):
                found.append(statement.value)  # type: ignore[arg-type]
    return found


def first_broken(relations: Iterable[Relation], values: dict[str, Any]) -> Relation | None:
    """The first relation that ``values`` (every hole's value) break, or None."""
    for relation in relations:
        try:
            if not relation.holds(values):
                return relation
        except (KeyError, TypeError, IndexError):
            return relation  # a value of the wrong shape cannot satisfy it
    return None
