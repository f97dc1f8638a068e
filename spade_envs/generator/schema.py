"""The JSON Schema of a parent's fillings: what a constrained designer reply may be.

:func:`filling_schema` turns a :class:`~.scaffold.Scaffold`'s value holes into a JSON
Schema that a structured-generation backend (``SamplingParams.json_schema``) decodes
under, so that the designer's reply is a JSON object with the right keys and types
by construction, never a reply that does not parse. What the schema says, hole by hole:

- a number: ``integer`` (the hole's default is an int) or ``number``, with
  ``minimum``/``maximum`` from the marker's ``[low, high]``, narrowed by every declared
  relation that compares that one number with constants (``2 <= ship <= 9``);
- a bool: ``boolean``; text: a ``string`` of 1 to :data:`MAX_TEXT` characters holding a
  visible character (a blank string is refused by :func:`~.scaffold.parse_filling`);
- a list: an ``array`` whose items take the schema of the default's first item (what
  :func:`~.scaffold.parse_filling` checks every item against), 1 to twice the default's
  length of them (more where a ``len(hole) >= n`` relation asks for more);
- a dict: an ``object`` with the default's keys, all required, and no others.

What JSON Schema cannot say stays with the checks after parsing, which are unchanged:
relations between two holes (``2 * max_turns <= upper``) are checked by
:func:`~.scaffold.parse_filling` on the parsed values, so a constrained reply can still
be refused for breaking one, and a rule hole's body (Python, which must parse and stay
short) is never offered: under a schema it keeps the parent's body. Every instance that
is valid under the schema passes :func:`~.scaffold.parse_filling` except for a broken
relation (``tests/generator/test_schema.py`` checks this with Hypothesis).

A hole whose values no schema can describe (an empty list, whose items' type is
unknown; a list mixing item types; bounds and relations no whole number meets; a rule
hole asked for by name) raises :class:`SchemaError` naming the hole: the designer
refuses that attempt and says why.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable
from typing import Any

from ..error import SpadeError
from .relations import names_of
from .scaffold import FillingError, Scaffold, _conform

__all__ = ["MAX_TEXT", "SchemaError", "filling_schema"]

#: Longest text a schema allows in one string (characters): a bound on the reply's length.
MAX_TEXT = 400
#: A string must hold at least one visible ASCII character. ``parse_filling`` refuses only
#: text that is blank, but "blank" is Python's ``str.isspace`` (which counts characters a
#: JSON Schema regex's ``\s`` does not); a visible ASCII character is never blank.
_VISIBLE = "^[\\s\\S]*[!-~][\\s\\S]*$"

_COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq)
_FLIPPED = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Eq: ast.Eq}


class SchemaError(SpadeError):
    """A parent's holes cannot be written as a JSON Schema; the message names the hole."""


def filling_schema(
    scaffold: Scaffold,
    names: Iterable[str] | None = None,
    *,
    required: Iterable[str] | None = None,
) -> dict[str, Any]:
    """The JSON Schema of the fillings of ``scaffold``'s value holes.

    Args:
        scaffold: The parent.
        names: The holes a reply may fill, in the order the reply writes them (a
            grammar-constrained reply follows the schema's order); default every value
            hole, in the parent's order. Holes left out keep the parent's values.
        required: The holes every reply must fill (a subset of ``names``); default the
            numeric ones among ``names`` (what a small model fills best, and what makes
            a filling differ from its parent), or all of ``names`` when none is numeric.
            At least one: a reply that fills no hole is refused.

    Returns:
        A JSON Schema (draft 2020-12 keywords only) of an object keyed by hole name,
        ``additionalProperties`` false. Relations between holes are not in it: they are
        checked after parsing, as for any reply.

    Raises:
        SchemaError: A hole named in ``names`` is unknown or a rule hole, ``required``
            is not within ``names`` or is empty, or a hole's values cannot be described
            (the message names the hole and says what to change in the parent).
    """
    values = scaffold.defaults()
    where = scaffold.parent_id
    if names is None:
        chosen = [hole.name for hole in scaffold.holes if hole.kind == "value"]
        if not chosen:
            rules = ", ".join(repr(h.name) for h in scaffold.holes)
            raise SchemaError(
                f"{where} has only a rule hole ({rules}), a Python function body that no "
                "JSON Schema can constrain to parse; a constrained designer needs a value "
                "hole. Declare one, or generate without constrained replies."
            )
    else:
        chosen = list(dict.fromkeys(names))
        if not chosen:
            raise SchemaError(f"{where}: a filling schema needs at least one hole to offer.")
    for name in chosen:
        hole = scaffold.by_name.get(name)
        if hole is None:
            raise SchemaError(
                f"{where} has no hole {name!r}; its holes: {', '.join(scaffold.by_name)}."
            )
        if hole.kind == "rule":
            raise SchemaError(
                f"{where}: rule hole {name!r} is a Python function body, and no JSON Schema "
                "can constrain text to parse as Python; leave it out of a constrained "
                "filling (it then keeps the parent's body) or generate without constraint."
            )
    numeric = set(scaffold.numeric_holes())
    if required is None:
        must = [name for name in chosen if name in numeric] or list(chosen)
    else:
        must = list(dict.fromkeys(required))
        outside = [name for name in must if name not in chosen]
        if outside:
            raise SchemaError(
                f"{where}: required hole(s) {outside} are not among the offered {chosen}."
            )
        if not must:
            raise SchemaError(
                f"{where}: a filling schema must require at least one hole (a reply that "
                "fills none is refused)."
            )
    limits = _relation_limits(scaffold, values)
    properties = {}
    for name in chosen:
        hole = scaffold.by_name[name]
        _check_default(hole.default, name, where)
        properties[name] = _value(hole.default, name, where, hole.bounds, limits)
    return {
        "type": "object",
        "properties": properties,
        "required": must,
        "additionalProperties": False,
    }


# ----- one value ------------------------------------------------------------------------------
#: What a relation confines: (hole, dict key or None, "value" or "len") -> [low, high].
Limits = dict[tuple[str, str | None, str], list[float]]


def _value(
    default: Any,
    path: str,
    where: str,
    bounds: tuple[float, float] | None,
    limits: Limits,
    key: tuple[str, str | None] | None = None,
) -> dict[str, Any]:
    """The schema of one value shaped like ``default`` (``path`` names it in errors;
    ``key`` is the (hole, dict key) a relation would name it by, None inside lists)."""
    if key is None and "." not in path and "[" not in path:
        key = (path, None)
    if isinstance(default, bool):
        return {"type": "boolean"}
    if isinstance(default, (int, float)):
        low, high = bounds if bounds is not None else (-math.inf, math.inf)
        if key is not None and (*key, "value") in limits:
            rel_low, rel_high = limits[(*key, "value")]
            low, high = max(low, rel_low), min(high, rel_high)
        if isinstance(default, int):
            return _integer(low, high, path, where)
        if low > high:
            raise _empty(path, where, low, high)
        schema: dict[str, Any] = {"type": "number"}
        if math.isfinite(low):
            schema["minimum"] = low
        if math.isfinite(high):
            schema["maximum"] = high
        return schema
    if isinstance(default, str):
        longest = MAX_TEXT
        shortest = 1
        if key is not None and (*key, "len") in limits:
            rel_low, rel_high = limits[(*key, "len")]
            shortest = max(shortest, math.ceil(rel_low))
            longest = min(longest, math.floor(rel_high)) if math.isfinite(rel_high) else longest
        if shortest > longest:
            raise SchemaError(
                f"{where}: text hole {path!r} cannot be {shortest} to {longest} characters "
                "long; loosen its len() relations."
            )
        return {
            "type": "string",
            "minLength": shortest,
            "maxLength": longest,
            "pattern": _VISIBLE,
        }
    if isinstance(default, list):
        # parse_filling checks every item against the first one, so the schema does too.
        items = _value(default[0], f"{path}[0]", where, bounds, limits)
        fewest, most = 1, max(2 * len(default), 2)
        if key is not None and (*key, "len") in limits:
            rel_low, rel_high = limits[(*key, "len")]
            fewest = max(fewest, math.ceil(rel_low))
            if math.isfinite(rel_high):
                most = min(most, math.floor(rel_high))
            most = max(most, fewest)  # a relation may ask for more items than 2x the default
        if fewest > most:
            raise SchemaError(
                f"{where}: list hole {path!r} cannot hold {fewest} to {most} items; loosen "
                "its len() relations."
            )
        return {"type": "array", "items": items, "minItems": fewest, "maxItems": most}
    # A dict: parse_filling accepts any subset of the keys, but asking for all of them
    # makes the filled value whole and costs a small model nothing it cannot copy.
    properties = {
        name: _value(item, f"{path}.{name}", where, bounds, limits, key=(path, name))
        for name, item in default.items()
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(default),
        "additionalProperties": False,
    }


def _integer(low: float, high: float, path: str, where: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    first = math.ceil(low) if math.isfinite(low) else None
    last = math.floor(high) if math.isfinite(high) else None
    if first is not None and last is not None and first > last:
        raise _empty(path, where, low, high)
    if first is not None:
        schema["minimum"] = first
    if last is not None:
        schema["maximum"] = last
    return schema


def _empty(path: str, where: str, low: float, high: float) -> SchemaError:
    return SchemaError(
        f"{where}: no value of hole {path!r} lies in [{low:g}, {high:g}] (its marker's "
        "bounds narrowed by its relations); widen the bounds or fix the relation."
    )


def _check_default(default: Any, path: str, where: str) -> None:
    """Refuse a hole whose values the schema cannot describe as parse_filling reads them."""
    if isinstance(default, list):
        if not default:
            raise SchemaError(
                f"{where}: list hole {path!r} is empty in the parent, so the type of its "
                "items is unknown and no schema can describe them; give it one item at least."
            )
        for index, item in enumerate(default):
            _check_default(item, f"{path}[{index}]", where)
            try:  # every item must pass as the first one's type, as parse_filling checks
                _conform(default[0], item, f"{path}[{index}]", None)
            except FillingError:
                raise SchemaError(
                    f"{where}: list hole {path!r} mixes item types ({default[0]!r} and "
                    f"{item!r}); parse_filling reads every item as the first one's type, so "
                    "make them one type."
                ) from None
    elif isinstance(default, dict):
        for name, item in default.items():
            _check_default(item, f"{path}.{name}", where)


# ----- what relations with constants say --------------------------------------------------------
def _relation_limits(scaffold: Scaffold, values: dict[str, Any]) -> Limits:
    """Bounds the relations put on one number, or one length, each: every link of a
    (chained) comparison between a lone name (or ``len(hole)``) and a constant term.

    Links between two holes are left out: JSON Schema cannot compare two values.
    """
    available = names_of(values)
    limits: Limits = {}
    for relation in scaffold.relations:
        tree = relation.tree
        if not isinstance(tree, ast.Compare):
            continue
        terms = [tree.left, *tree.comparators]
        for op, left, right in zip(tree.ops, terms, terms[1:]):
            kind = type(op)
            if kind not in _COMPARISONS:
                continue  # != says nothing a range can hold
            target, constant = _target(left, available), _constant(right)
            if target is None or constant is None:
                target, constant = _target(right, available), _constant(left)
                kind = _FLIPPED[kind]
            if target is None or constant is None:
                continue
            low, high = limits.setdefault(target, [-math.inf, math.inf])
            whole = target[2] == "len" or _is_int(values, target)
            # A strict bound moves by one for whole numbers; for a float hole it is kept
            # as a closed bound (the relation check after parsing refuses the edge).
            step = 1 if whole else 0
            if kind in (ast.Lt, ast.LtE):
                high = min(high, constant - (step if kind is ast.Lt else 0))
            if kind in (ast.Gt, ast.GtE):
                low = max(low, constant + (step if kind is ast.Gt else 0))
            if kind is ast.Eq:
                low, high = max(low, constant), min(high, constant)
            limits[target] = [low, high]
    return limits


def _is_int(values: dict[str, Any], target: tuple[str, str | None, str]) -> bool:
    hole, key, _ = target
    value = values[hole] if key is None else values[hole][key]
    return isinstance(value, int) and not isinstance(value, bool)


def _target(
    node: ast.expr, available: dict[str, tuple[str, str | None]]
) -> tuple[str, str | None, str] | None:
    """What ``node`` names when it is a lone name or ``len(hole)``; None otherwise."""
    if isinstance(node, ast.Name) and node.id in available:
        return (*available[node.id], "value")
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and f"{node.value.id}.{node.attr}" in available
    ):
        return (*available[f"{node.value.id}.{node.attr}"], "value")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
        argument = node.args[0] if node.args else None
        if isinstance(argument, ast.Name):
            return (argument.id, None, "len")
    return None


def _constant(node: ast.expr) -> int | None:
    """The value of a term without names (integers, + - *, unary signs), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return None if isinstance(node.value, bool) else node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _constant(node.operand)
        if inner is None:
            return None
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        left, right = _constant(node.left), _constant(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Add):
            return left + right
        return left - right if isinstance(node.op, ast.Sub) else left * right
    return None
