"""Text environments whose agent acts by calling tools.

Every public method named ``tool_<name>`` becomes a tool with an OpenAI-style
function schema built from its type hints and Google-style docstring. The agent
acts with ``<tool_call>{"name": "<name>", "arguments": {...}}</tool_call>`` or
finishes with ``<answer>...</answer>`` (``\\boxed{...}`` works too). A malformed
call, an unknown tool, a wrong argument or a :class:`~spade_envs.error.ToolError`
raised by the tool becomes an ``Error: ...`` observation; it never raises.

``info["action_parsed"]`` is ``False`` for an action that is neither a call nor an
answer, a malformed call, an unknown tool or arguments that do not fit the tool's
signature; a valid call (even one whose tool raises ``ToolError``) and an answer are
parsed.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from typing import Any, ClassVar, Literal, Union, get_args, get_origin, get_type_hints

from ..error import EnvContractError, ToolError, suggest
from .answers import extract_boxed, extract_tag, parse_tool_call
from .text_env import StepResult, TextEnv

__all__ = ["ToolEnv", "tool_schema", "parse_docstring"]

_PREFIX = "tool_"


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (summary, {argument: description})."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current = None
    for line in lines:
        stripped = line.strip()
        if re.fullmatch(r"(Args|Arguments|Parameters):", stripped):
            section = "args"
            continue
        if re.fullmatch(r"[A-Z][A-Za-z ]*:", stripped):
            section = "other"
            continue
        if section == "summary":
            if not stripped and summary:
                section = "body"
            elif stripped:
                summary.append(stripped)
        elif section == "args" and stripped:
            match = re.match(r"(\w+)\s*(\([^)]*\))?\s*:\s*(.*)", stripped)
            if match and line.startswith((" ", "\t")) and len(line) - len(line.lstrip()) <= 4:
                current = match.group(1)
                args[current] = match.group(3)
            elif current:
                args[current] = f"{args[current]} {stripped}".strip()
    return " ".join(summary), args


def _json_type(hint: Any) -> dict[str, Any]:
    origin = get_origin(hint)
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if origin is Literal:
        values = list(get_args(hint))
        kinds = {type(v) for v in values}
        schema = _json_type(kinds.pop()) if len(kinds) == 1 else {}
        return {**schema, "enum": values}
    if origin in (list, tuple) or hint in (list, tuple):
        args = get_args(hint)
        items = _json_type(args[0]) if args and args[0] is not Ellipsis else {}
        return {"type": "array", "items": items} if items else {"type": "array"}
    if origin is dict or hint is dict:
        return {"type": "object"}
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(hint) if a is not type(None)]
        if len(options) == 1:
            return _json_type(options[0])
        return {"anyOf": [_json_type(o) for o in options]}
    return {}


def tool_schema(method: Any, name: str | None = None) -> dict[str, Any]:
    """The OpenAI-style function schema of one tool method."""
    name = name or method.__name__.removeprefix(_PREFIX)
    summary, arg_docs = parse_docstring(method.__doc__)
    try:
        hints = get_type_hints(method)
    except Exception:  # unresolvable annotations: fall back to untyped parameters
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(method).parameters.values():
        if param.name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        prop = _json_type(hints.get(param.name, Any))
        if param.name in arg_docs:
            prop["description"] = arg_docs[param.name]
        properties[param.name] = prop
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": summary,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def _check_value(value: Any, hint: Any) -> tuple[bool, Any]:
    """Whether ``value`` (decoded JSON) fits ``hint``; returns (ok, value converted)."""
    origin = get_origin(hint)
    if hint is Any or hint is inspect.Parameter.empty:
        return True, value
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return ok, float(value) if ok else value
    if hint is int:
        if isinstance(value, float) and value.is_integer():
            return True, int(value)
        return isinstance(value, int) and not isinstance(value, bool), value
    if hint in (str, bool):
        return isinstance(value, hint), value
    if origin is Literal:
        return value in get_args(hint), value
    if origin in (list, tuple) or hint in (list, tuple):
        if not isinstance(value, list):
            return False, value
        args = get_args(hint)
        if args and args[0] is not Ellipsis:
            checked = [_check_value(v, args[0]) for v in value]
            if not all(ok for ok, _ in checked):
                return False, value
            value = [v for _, v in checked]
        return True, tuple(value) if (origin is tuple or hint is tuple) else value
    if origin is dict or hint is dict:
        return isinstance(value, dict), value
    if origin in (Union, types.UnionType):
        for option in get_args(hint):
            if option is type(None) and value is None:
                return True, None
            ok, converted = _check_value(value, option)
            if ok:
                return True, converted
        return False, value
    return True, value


def _type_name(hint: Any) -> str:
    schema = _json_type(hint)
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    return schema.get("type", "a value")


class ToolEnv(TextEnv):
    """Base class of tool-using environments.

    Subclasses write ``_reset() -> str``, one or more ``tool_<name>`` methods (each
    returning a ``str`` or JSON-serialisable value, raising ``ToolError`` for a failed
    call) and ``_answer(answer) -> (observation, reward, terminated)`` for the final
    answer. A tool may also end the episode by calling :meth:`end_episode`.
    """

    #: Longest tool result shown to the agent.
    max_tool_output: ClassVar[int] = 4_000

    def __init__(self, render_mode: str | None = None, **knobs: Any):
        super().__init__(render_mode=render_mode, **knobs)
        self._pending_end: tuple[float, str] | None = None
        if not self.available_tools():
            raise EnvContractError(
                f"{type(self).__name__} is a ToolEnv without tools: define at least one "
                "public method named tool_<name>."
            )

    # ----- tool discovery -------------------------------------------------------------------
    @classmethod
    def available_tools(cls) -> list[str]:
        """Names of the tools (method names without the ``tool_`` prefix), sorted."""
        cached = cls.__dict__.get("_tool_name_cache")
        if cached is None:
            # Plain functions only: a classmethod or attribute that happens to start with
            # "tool_" is not a tool.
            names = {
                attr.removeprefix(_PREFIX)
                for klass in cls.__mro__
                if klass not in (ToolEnv, TextEnv) and issubclass(klass, ToolEnv)
                for attr, value in vars(klass).items()
                if attr.startswith(_PREFIX) and inspect.isfunction(value)
            }
            cached = cls._tool_name_cache = sorted(n for n in names if n)
        return list(cached)

    @classmethod
    def function_schemas(cls) -> list[dict[str, Any]]:
        """OpenAI-style function schemas of every tool (cached per class)."""
        cache = cls.__dict__.get("_tool_schema_cache")
        if cache is None:
            cache = [tool_schema(getattr(cls, _PREFIX + n), n) for n in cls.available_tools()]
            cls._tool_schema_cache = cache
        return json.loads(json.dumps(cache))  # a fresh copy: callers may mutate it

    @classmethod
    def tools_text(cls) -> str:
        """A compact listing of the tools for a text-only prompt."""
        lines = []
        for schema in cls.function_schemas():
            fn = schema["function"]
            params = ", ".join(
                f"{p}: {spec.get('type', 'any')}"
                for p, spec in fn["parameters"]["properties"].items()
            )
            lines.append(f"- {fn['name']}({params}): {fn['description']}")
        return "\n".join(lines)

    # ----- hooks ----------------------------------------------------------------------------
    def _answer(self, answer: str) -> StepResult:
        """Judge a final answer: return ``(observation, reward, terminated)``."""
        # An environment without answers has no way to read one.
        return self.not_understood(
            "This environment takes no final answer; reach the goal with the tools."
        )

    def end_episode(self, reward: float, message: str = "") -> None:
        """Called from inside a tool: end the episode after this call with ``reward``."""
        self._pending_end = (float(reward), message)

    # ----- dispatch -------------------------------------------------------------------------
    def _reset_info(self) -> dict[str, Any]:
        return {"turn": 0, "tools": self.function_schemas()}

    def _step(self, action: str) -> StepResult:
        self._pending_end = None
        call = parse_tool_call(action)
        if call is None:
            answer = extract_tag(action, "answer")
            if answer is None:
                answer = extract_boxed(action)
            if answer is not None:
                return self._answer(answer)
            return self.not_understood(
                'Error: no tool call or answer found. Call a tool with <tool_call>{"name": '
                '"<tool>", "arguments": {...}}</tool_call> or finish with <answer>...</answer>. '
                f"Tools: {', '.join(self.available_tools())}."
            )
        if not call.ok:
            return self.not_understood(f"Error: {call.error}")
        if call.name not in self.available_tools():
            return self.not_understood(
                f"Error: unknown tool {call.name!r}.{suggest(call.name, self.available_tools())} "
                f"Tools: {', '.join(self.available_tools())}."
            )
        method = getattr(self, _PREFIX + call.name)
        problem, arguments = self._bind(method, call.name, call.arguments)
        if problem:
            return self.not_understood(f"Error: {problem}")
        try:
            result = method(**arguments)
        except ToolError as exc:
            return f"Error: {exc}", 0.0, False
        observation = result if isinstance(result, str) else json.dumps(result, default=str)
        if len(observation) > self.max_tool_output:
            observation = observation[: self.max_tool_output] + " [... output cut ...]"
        if self._pending_end is not None:
            reward, message = self._pending_end
            return (f"{observation}\n{message}".strip(), reward, True)
        return observation, 0.0, False

    @classmethod
    def _signature(cls, name: str) -> tuple[dict[str, inspect.Parameter], dict[str, Any]]:
        """Parameters and resolved type hints of a tool (cached: resolving hints is slow)."""
        cache = cls.__dict__.get("_signature_cache")
        if cache is None:
            cache = cls._signature_cache = {}
        if name not in cache:
            method = getattr(cls, _PREFIX + name)
            try:
                hints = get_type_hints(method)
            except Exception:  # unresolvable annotations: accept any value
                hints = {}
            params = {
                p.name: p
                for p in inspect.signature(method).parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            }
            cache[name] = (params, hints)
        return cache[name]

    def _bind(
        self, method: Any, name: str, arguments: dict[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        """Check call arguments against the tool's signature; return (problem, arguments)."""
        params, hints = self._signature(name)
        unknown = [a for a in arguments if a not in params]
        if unknown:
            extra = suggest(unknown[0], params)
            return (
                f"tool {name!r} has no argument {unknown[0]!r}.{extra} "
                f"Its arguments: {', '.join(params) or 'none'}.",
                {},
            )
        missing = [
            p for p, spec in params.items() if spec.default is spec.empty and p not in arguments
        ]
        if missing:
            return f"tool {name!r} needs argument(s): {', '.join(missing)}.", {}
        converted: dict[str, Any] = {}
        for key, value in arguments.items():
            hint = hints.get(key, typing.Any)
            ok, value = _check_value(value, hint)
            if not ok:
                return (
                    f"argument {key!r} of tool {name!r} must be {_type_name(hint)}, "
                    f"got {json.dumps(value, default=str)[:60]}.",
                    {},
                )
            converted[key] = value
        return "", converted
