"""Scaffolded design: a parent environment's declared holes, filled by the designer.

A small model cannot write (or even copy-edit) a whole environment, but it can choose
values. A parent declares its **holes** with one comment line above the statement it
opens up::

    # hole: guesses allowed [2, 30]
    max_turns = 8
    # hole: size of the range [10, 100000]
    knobs = {"upper": 100}
    # hole: rule: the privileged hint
    def hint(self) -> str:
        ...

- A **value hole** is an assignment (a class attribute or a module constant) whose value
  is a literal: a number, a string, a bool, or a list/dict of them. Its name is the
  assigned name; its type is the literal's. An optional ``[low, high]`` at the end of
  the comment bounds every number in the value.
- A **rule hole** (``# hole: rule: ...``) is a short function (at most
  :data:`MAX_RULE_LINES` lines of body) whose body the designer may rewrite. A parent
  declares at most one.

The designer answers with a JSON object keyed by hole name (holes left out keep the
parent's value), decoded under its JSON Schema (:func:`.schema.filling_schema`) where the
backend can; :func:`parse_filling` checks it against the declared types, bounds and
relations (whatever the decoding) and :func:`fill` writes the child module: the parent
with the new values, under a class name of its own. The child is a complete module and
goes through the whole gate like any other; it keeps the markers, so a child can be a
parent in turn.
:func:`filling_distance` says how different two fillings are, for novelty.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import io
import itertools
import json
import math
import re
import textwrap
import tokenize
from dataclasses import dataclass
from typing import Any

from ..core.pyparse import literal_value, parse_source
from ..error import SpadeError, suggest
from .relations import Relation, RelationError, first_broken, read_relations

__all__ = [
    "MAX_RULE_LINES",
    "FillingError",
    "RelationBroken",
    "Hole",
    "NoHolesError",
    "RelationError",
    "Scaffold",
    "base_name",
    "filling_distance",
    "parse_filling",
]

#: Longest body a rule hole may be given (lines, blank lines not counted).
MAX_RULE_LINES = 8
#: Marker comments: ``# hole: <what it controls> [low, high]`` / ``# hole: rule: <what>``.
_MARKER = re.compile(r"#\s*hole\s*:\s*(?P<text>.*)$")
_BOUNDS = re.compile(r"\[\s*(?P<low>-?[\d.e+]+)\s*,\s*(?P<high>-?[\d.e+]+)\s*\]\s*$")
#: Suffix of a scaffolded child's class name: the parent's base name, ``X`` and 6 hex digits.
_CHILD_SUFFIX = re.compile(r"X[0-9a-f]{6}$")


class NoHolesError(SpadeError):
    """A parent environment declares no holes (or declares them wrongly)."""


class FillingError(SpadeError):
    """A designer's filling is not a JSON object of the declared holes and types."""


class RelationBroken(FillingError):
    """A filling of the right holes and types, each in range, that breaks a relation the
    parent declares between its holes (``low < high``): a JSON Schema cannot say that,
    so constrained decoding can produce it; it is counted apart from parse failures."""


@dataclass(frozen=True)
class Hole:
    """One declared hole of a parent.

    Attributes:
        name: The assigned name (value holes) or the function name (rule holes).
        kind: ``value`` or ``rule``.
        what: The marker's words: what the hole controls.
        default: The parent's value (rule holes: the function body's source).
        bounds: ``(low, high)`` for every number in a value hole, or None.
        start: ``(line, column)`` where the replaced text starts (1-based lines).
        end: ``(line, column)`` where it ends.
        marker: The line of its ``# hole:`` comment.
        last_line: The last line of the statement it opens up.
    """

    name: str
    kind: str
    what: str
    default: Any
    bounds: tuple[float, float] | None
    start: tuple[int, int]
    end: tuple[int, int]
    marker: int
    last_line: int


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _literal_kind_ok(value: Any) -> bool:
    if isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, list):
        return all(_literal_kind_ok(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _literal_kind_ok(v) for k, v in value.items())
    return False


class Scaffold:
    """A parent environment's source and its holes.

    Args:
        source: The parent module.
        parent_id: Its registry ID (named in errors and lineage).

    Raises:
        NoHolesError: The source declares no holes, or a marker is misplaced.
        RelationError: Its ``hole_relations`` are malformed or its own values break one.
    """

    def __init__(self, source: str, parent_id: str = "<parent>"):
        self.source = source
        self.parent_id = parent_id
        try:
            tree = parse_source(source)
        except SyntaxError as exc:
            raise NoHolesError(
                f"{parent_id} does not parse ({exc.msg}); it cannot be a parent."
            ) from None
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        if not classes:
            raise NoHolesError(f"{parent_id} defines no class; it cannot be a parent.")
        self.class_name = _environment_class(source) or classes[-1].name
        self.holes = self._read_holes(tree)
        if not self.holes:
            raise NoHolesError(
                f"{parent_id} declares no holes, so the scaffold designer cannot fill it. Mark "
                "what may change with a comment line '# hole: <what it controls>' above an "
                "assignment of a literal (or '# hole: rule: <what>' above a short function); "
                "see spade_envs/generator/scaffold.py. Or use --mode new/edit."
            )
        self.by_name = {hole.name: hole for hole in self.holes}
        #: What must hold between the holes' values (see :mod:`.relations`); read, never run.
        self.relations: list[Relation] = read_relations(
            tree, self.class_name, self.defaults(), parent_id
        )

    # ----- reading --------------------------------------------------------------------------
    def _markers(self) -> dict[int, str]:
        """Line number -> marker text, for comment lines that are markers."""
        found: dict[int, str] = {}
        tokens = tokenize.generate_tokens(io.StringIO(self.source).readline)
        for token in tokens:
            if token.type == tokenize.COMMENT:
                match = _MARKER.match(token.string)
                if match and not token.line[: token.start[1]].strip():
                    found[token.start[0]] = match.group("text").strip()
        return found

    def _read_holes(self, tree: ast.Module) -> list[Hole]:
        markers = self._markers()
        statements: dict[int, ast.stmt] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt):
                first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
                statements.setdefault(first, node)
        lines = self.source.splitlines()
        holes: list[Hole] = []
        for line, text in sorted(markers.items()):
            following = line + 1
            while following <= len(lines) and lines[following - 1].strip().startswith("#"):
                following += 1
            node = statements.get(following)
            if node is None:
                raise NoHolesError(
                    f"{self.parent_id} line {line}: a '# hole:' marker must stand directly "
                    "above the assignment or function it opens up."
                )
            holes.append(self._hole(node, text, line))
        spans = sorted((h.marker, h.last_line, h.name) for h in holes)
        for (_, end, first), (start, _, second) in itertools.pairwise(spans):
            if start <= end:
                raise NoHolesError(
                    f"{self.parent_id}: hole {second!r} lies inside hole {first!r}; holes must "
                    "not overlap."
                )
        names = [h.name for h in holes]
        if len(set(names)) != len(names):
            raise NoHolesError(f"{self.parent_id} declares a hole name twice: {names}.")
        if sum(h.kind == "rule" for h in holes) > 1:
            raise NoHolesError(f"{self.parent_id} declares more than one rule hole.")
        return holes

    def _hole(self, node: ast.stmt, text: str, line: int) -> Hole:
        where = f"{self.parent_id} line {line}"
        if text.lower().startswith("rule"):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                raise NoHolesError(f"{where}: a rule hole must stand above a function.")
            body = node.body
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(
                getattr(first, "value", None), ast.Constant
            ):
                body = body[1:] or body  # the docstring stays the parent's
            start, stop = body[0], body[-1]
            segment = "\n".join(self.source.splitlines()[start.lineno - 1 : stop.end_lineno])
            return Hole(
                name=node.name,
                kind="rule",
                what=text.split(":", 1)[1].strip() if ":" in text else "a rule",
                default=textwrap.dedent(segment),
                bounds=None,
                start=(start.lineno, 0),
                marker=line,
                last_line=node.end_lineno or node.lineno,
                end=(
                    stop.end_lineno or stop.lineno,
                    len(self.source.splitlines()[stop.end_lineno - 1]),
                ),
            )
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            raise NoHolesError(f"{where}: a value hole must stand above 'name = <literal>'.")
        if not isinstance(target, ast.Name):
            raise NoHolesError(f"{where}: a value hole must assign one plain name.")
        try:
            default = ast.literal_eval(value)
        except ValueError:
            raise NoHolesError(f"{where}: the value of {target.id!r} is not a literal.") from None
        if not _literal_kind_ok(default):
            raise NoHolesError(
                f"{where}: {target.id!r} must hold numbers, text, bools, or lists/dicts of them."
            )
        bounds = None
        match = _BOUNDS.search(text)
        if match:
            try:
                bounds = (float(match.group("low")), float(match.group("high")))
            except ValueError:
                raise NoHolesError(
                    f"{where}: the bounds {match.group(0)!r} are not two numbers."
                ) from None
            if not (math.isfinite(bounds[0]) and math.isfinite(bounds[1])) or bounds[0] > bounds[1]:
                raise NoHolesError(f"{where}: the bounds {match.group(0)!r} are not low <= high.")
            text = text[: match.start()].strip()
        return Hole(
            name=target.id,
            kind="value",
            what=text or target.id,
            default=default,
            bounds=bounds,
            start=(value.lineno, value.col_offset),
            end=(value.end_lineno or value.lineno, value.end_col_offset or 0),
            marker=line,
            last_line=node.end_lineno or node.lineno,
        )

    # ----- the prompt's view -----------------------------------------------------------------
    def defaults(self) -> dict[str, Any]:
        """Every hole's value in the parent."""
        return {hole.name: hole.default for hole in self.holes}

    def template(self, names: list[str] | None = None) -> str:
        """Value holes (``names``, default all) as one line of JSON: what the designer
        edits (a rule hole is listed by :meth:`marked_source`)."""
        values = {
            h.name: h.default
            for h in self.holes
            if h.kind == "value" and (names is None or h.name in names)
        }
        return json.dumps(values, ensure_ascii=False)

    def numeric_holes(self) -> list[str]:
        """Value holes whose values are numbers (or hold only numbers): what a small model
        fills best, so the designer asks for these first."""

        def numeric(value: Any) -> bool:
            if isinstance(value, bool):
                return False
            if isinstance(value, (int, float)):
                return True
            if isinstance(value, (list, dict)):
                items = value.values() if isinstance(value, dict) else value
                return bool(items) and all(numeric(v) for v in items)
            return False

        return [h.name for h in self.holes if h.kind == "value" and numeric(h.default)]

    def marked_source(self, names: list[str] | None = None) -> str:
        """The parent's source cut to its holes (``names``, default all): each marker with
        the statement below it (a rule hole: its marker and signature; its body is offered
        as a string).

        A small model follows the answer format only when the prompt is short; this is
        the part of the source the designer can change, in the source's own words.
        """
        lines = self.source.splitlines()
        parts = []
        for hole in self.holes:
            if names is not None and hole.name not in names:
                continue
            if hole.kind == "rule":
                marker, signature = lines[hole.marker - 1].strip(), lines[hole.marker].strip()
                parts.append(f"{marker}\n{signature}\n    ...")
            else:
                chunk = "\n".join(lines[hole.marker - 1 : hole.last_line])
                parts.append(textwrap.dedent(chunk))
        if self.relations:  # the model sees what the filling must keep true
            parts.append("# must hold: " + "; ".join(r.text for r in self.relations))
        return "\n".join(parts)

    @property
    def base_name(self) -> str:
        """The class name without a scaffold suffix (children of children keep it short)."""
        return base_name(self.class_name)

    # ----- writing ---------------------------------------------------------------------------
    def fill(self, filling: dict[str, Any]) -> tuple[str, str]:
        """The child module for ``filling`` (from :func:`parse_filling`), and its class name.

        The class is renamed to the parent's base name plus ``X`` and six hex digits of the
        filled source, so a child never takes over its parent's (or a seed's) name.
        """
        lines = self.source.splitlines(keepends=True)
        offsets = [0]
        for text in lines:
            offsets.append(offsets[-1] + len(text))

        def at(position: tuple[int, int]) -> int:
            return offsets[position[0] - 1] + position[1]

        edits = []
        for name, value in filling.items():
            hole = self.by_name[name]
            if hole.kind == "rule":
                indent = re.match(r"\s*", lines[hole.start[0] - 1]).group(0)  # type: ignore[union-attr]
                text = textwrap.indent(value.strip("\n"), indent)
            else:
                text = repr(value)  # a Python literal of the checked JSON value
            edits.append((at(hole.start), at(hole.end), text))
        source = self.source
        for begin, finish, text in sorted(edits, reverse=True):
            source = source[:begin] + text + source[finish:]
        digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:6]
        name = f"{self.base_name[:56]}X{digest}"
        child = _rename(source, self.class_name, name)
        named = _environment_class(child)
        if named and named != name:  # e.g. a rule body that defines another class
            raise FillingError(
                f"the filled module's environment class is {named!r}, not the renamed {name!r}"
            )
        return child, name


def _environment_class(source: str) -> str:
    """The environment class the gate names in ``source`` ("" when it names none)."""
    from ..validation.budget import get_budget
    from ..validation.static import static_checks

    try:
        _, info = static_checks(source, get_budget("fast"))
    except Exception:  # the gate's reading failed: the caller falls back to the last class
        return ""
    return info.env_name or ""


def base_name(name: str) -> str:
    """``NumberGuessXa1b2c3`` -> ``NumberGuess``: a name without its scaffold suffix."""
    return _CHILD_SUFFIX.sub("", name) or name


def _rename(source: str, old: str, new: str) -> str:
    """``source`` with every name token ``old`` (not strings or comments) renamed."""
    lines = source.splitlines(keepends=True)
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for token in reversed(tokens):  # from the end, so earlier columns stay valid
        if token.type == tokenize.NAME and token.string == old:
            row, col = token.start
            text = lines[row - 1]
            lines[row - 1] = text[:col] + new + text[col + len(old) :]
    return "".join(lines)


# ----- parsing a reply ------------------------------------------------------------------------
def _json_object(reply: str) -> str:
    """The first balanced ``{...}`` in ``reply`` (strings respected)."""
    start = reply.find("{")
    if start < 0:
        raise FillingError('the reply holds no JSON object; answer with {"hole": value, ...}')
    depth, quote, escaped = 0, "", False
    for i in range(start, len(reply)):
        char = reply[i]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return reply[start : i + 1]
    raise FillingError("the JSON object in the reply is not closed (a '}' is missing)")


def parse_filling(reply: str, scaffold: Scaffold) -> tuple[dict[str, Any], list[str]]:
    """The holes a reply fills, checked against their declared types and bounds.

    Args:
        reply: The designer's reply: a JSON object keyed by hole name, possibly in a
            code fence or among words. A Python dict literal is accepted too.
        scaffold: The parent.

    Returns:
        Hole name -> value for the holes the reply fills, and the top-level keys it gave
        that name no hole (ignored: small models add keys; what they fill still counts).

    Raises:
        FillingError: Why the reply is not a usable filling (for the repair round): no
            JSON object, a hole of the wrong type or out of bounds, or no hole at all.
    """
    try:
        return _parse_filling(reply, scaffold)
    except FillingError:
        raise
    except (ValueError, TypeError, RecursionError, OverflowError, MemoryError) as exc:
        # Model text can be anything: a 5,000-digit number, deep nesting, lone surrogates.
        raise FillingError(f"unusable filling: {type(exc).__name__}: {str(exc)[:120]}") from None


def _parse_filling(reply: str, scaffold: Scaffold) -> tuple[dict[str, Any], list[str]]:
    text = _json_object(reply)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        try:
            data = literal_value(text)
        except Exception:  # any literal_eval failure ("{{}}" raises TypeError)
            raise FillingError(f"not valid JSON: {exc.msg} at character {exc.pos}") from None
    if not isinstance(data, dict):
        raise FillingError("the filling must be a JSON object keyed by hole name")
    filling: dict[str, Any] = {}
    ignored = [str(name) for name in data if name not in scaffold.by_name]
    for name, value in data.items():
        hole = scaffold.by_name.get(name)
        if hole is None:
            continue
        if hole.kind == "rule":
            filling[name] = _rule_body(value, hole)
        else:
            filling[name] = _conform(hole.default, value, name, hole.bounds)
    if not filling:
        given = f" (it has {', '.join(map(repr, ignored))})" if ignored else ""
        close = suggest(ignored[0], scaffold.by_name) if ignored else ""
        raise FillingError(
            f"the object names no hole{given}.{close} Holes: {', '.join(scaffold.by_name)}"
        )
    values = {**scaffold.defaults(), **filling}
    broken = first_broken(scaffold.relations, values)
    if broken is not None:  # in range one by one, yet the description would be false
        raise RelationBroken(
            f"the filling breaks the hole relation {broken.text!r} ({broken.shown(values)}); "
            "choose values for which it holds"
        )
    return filling, ignored


def _rule_body(value: Any, hole: Hole) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FillingError(f"rule hole {hole.name!r} takes the new body as a non-empty string")
    body = textwrap.dedent(value.replace("\r\n", "\n")).strip("\n")
    if re.search(r"#\s*hole\s*:", body):
        raise FillingError(f"rule hole {hole.name!r}: the body must not declare holes")
    if sum(1 for line in body.splitlines() if line.strip()) > MAX_RULE_LINES:
        raise FillingError(f"rule hole {hole.name!r}: at most {MAX_RULE_LINES} lines of body")
    try:
        parse_source("def _f(self):\n" + textwrap.indent(body, "    "))
    except SyntaxError as exc:
        raise FillingError(
            f"rule hole {hole.name!r}: the body does not parse ({exc.msg})"
        ) from None
    return body


def _conform(default: Any, value: Any, where: str, bounds: tuple[float, float] | None) -> Any:
    """``value`` in ``default``'s type (ints stay ints; a float hole takes an int)."""

    def wrong(expected: str) -> FillingError:
        shown = json.dumps(value, ensure_ascii=False, default=repr)[:60]
        return FillingError(f"hole {where!r} takes {expected}, got {shown}")

    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong("a number")
        if isinstance(default, int):
            if isinstance(value, float) and not value.is_integer():
                raise wrong("a whole number")
            value = int(value)
        else:
            value = float(value)
        if value != value or value in (float("inf"), float("-inf")):
            raise wrong("a finite number")
        if bounds and not bounds[0] <= value <= bounds[1]:
            raise FillingError(
                f"hole {where!r} must lie in [{_num(bounds[0])}, {_num(bounds[1])}], got {value}"
            )
        return value
    if isinstance(default, str):
        if not isinstance(value, str):
            raise wrong("text")
        if not value.strip():
            raise wrong("non-empty text")
        return value
    if isinstance(default, list):
        if not isinstance(value, list) or not value:
            raise wrong("a non-empty list")
        model = default[0] if default else value[0]
        return [_conform(model, v, f"{where}[{i}]", bounds) for i, v in enumerate(value)]
    if not isinstance(value, dict):
        raise wrong("an object with keys " + ", ".join(default))
    out = dict(default)
    for key, item in value.items():
        if key not in default:
            raise FillingError(
                f"hole {where!r} has no key {key!r}.{suggest(str(key), default)} Keys: "
                f"{', '.join(default)}"
            )
        out[key] = _conform(default[key], item, f"{where}.{key}", bounds)
    return out


# ----- novelty ---------------------------------------------------------------------------------
def _distance(a: Any, b: Any) -> float:
    if isinstance(a, bool) or isinstance(b, bool):
        return 0.0 if a == b else 1.0
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return min(1.0, abs(a - b) / max(abs(a), abs(b), 1.0))
    if isinstance(a, str) and isinstance(b, str):
        if a == b:
            return 0.0
        return 1.0 - difflib.SequenceMatcher(None, " ".join(a.split()), " ".join(b.split())).ratio()
    if isinstance(a, list) and isinstance(b, list):
        if not a or not b:
            return 0.0 if a == b else 1.0
        pairs = [_distance(x, y) for x, y in zip(a, b)]
        extra = abs(len(a) - len(b))
        return (sum(pairs) + extra) / (len(pairs) + extra)
    if isinstance(a, dict) and isinstance(b, dict):
        keys = set(a) | set(b)
        return max((_distance(a.get(k), b.get(k)) for k in keys), default=0.0)
    return 0.0 if a == b else 1.0


def filling_distance(a: dict[str, Any], b: dict[str, Any]) -> float:
    """How different two complete fillings are, in [0, 1]: the largest change of any hole.

    Numbers: relative change (``|a - b| / max(|a|, |b|, 1)``); text and rule bodies: one
    minus their similarity ratio (whitespace folded); lists and objects: element-wise.
    A filling that moves one hole a lot is new; one that nudges every hole is not.
    """
    keys = set(a) | set(b)
    return max((_distance(a.get(k), b.get(k)) for k in keys), default=0.0)
