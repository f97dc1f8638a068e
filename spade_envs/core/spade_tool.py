"""SPADE's tool-use protocol: the ``ToolUseBaseEnv`` its tool games subclass, and its
prose solutions turned into actions.

SPADE's tool-use designers write a subclass of ``ToolUseBaseEnv`` without importing it:
``reset(seed=None)`` sets ``self._tools`` (name -> description and JSON-schema
parameters), ``self._state`` and ``self._expected_answer``; one ``tool_<name>`` method
per tool; ``solution()`` in prose. This base (written here from the protocol's facts, see
``../shared/SPADE-FORMAT.md``) plays as SPADE's does:

- an action holding ``<answer>…</answer>`` submits an answer (checked first): a right one
  ends the episode with reward 1.0; a wrong one gets 0.0 and the game goes on;
- else ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` calls ``tool_<name>``
  and shows its result (reward 0.0; an unknown tool says which exist);
- anything else, or a call whose JSON does not parse, is a format error: reward −0.1;
- at ``max_turns`` the episode is truncated (not terminated) and the solution shown.

Each step's info says whether the action was understood (``info["action_parsed"]``, our
protocol's addition): ``False`` for a format error, an unknown tool or arguments the
tool's signature does not take; ``True`` for an answer and a call the tool ran (even
one that raised).

A win is SPADE's: the episode terminates with a final reward above zero.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .pyparse import parse_source
from .text_env import ACTION_PARSED

__all__ = ["FORMAT_PENALTY", "ToolUseBaseEnv", "prose_actions"]

#: SPADE's reward for an action that is neither an answer nor a well-formed tool call.
FORMAT_PENALTY = -0.1

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


class ToolUseBaseEnv:
    """Base of SPADE-dialect tool games (see the module docstring).

    Subclasses implement ``reset(seed=None) -> (observation, info)``, ``tool_<name>``
    methods and, optionally, ``solution() -> str``.
    """

    #: SPADE's per-step reward bounds (its loader refuses rewards outside [-10, 10]).
    reward_range = (-10.0, 10.0)

    def __init__(self, max_turns: int = 10, **kwargs: Any) -> None:
        self.max_turns = max_turns
        self.turn_count = 0
        self._tools: dict[str, dict[str, Any]] = {}
        self._state: dict[str, Any] = {}
        self._call_history: list[dict[str, Any]] = []
        self._expected_answer: Any = None
        self.reset()

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        raise NotImplementedError("a ToolUseBaseEnv game must implement reset(seed=None)")

    def solution(self) -> str:
        raise NotImplementedError("this game has no solution()")

    # ----- tools ------------------------------------------------------------------------
    def get_tools(self) -> list[dict[str, Any]]:
        """The tools in OpenAI's function-calling shape (SPADE passes them to the chat
        template)."""
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": str(spec.get("description", "")),
                    "parameters": spec.get("parameters", {"type": "object", "properties": {}}),
                },
            }
            for name, spec in self._tools.items()
        ]

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        method = getattr(self, f"tool_{name}", None)
        if method is None:
            return False, f"Unknown tool '{name}'"
        try:
            result = method(**arguments)
        except Exception as exc:  # the game's own tool failing is an observation
            return False, f"Error calling {name}: {exc}"
        self._call_history.append({"name": name, "arguments": arguments, "result": str(result)})
        return True, str(result)

    def execute_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run one tool already parsed: ``{"output": text, "returncode": 0 or 1}``."""
        ok, output = self._call_tool(name, dict(arguments))
        return {"output": output, "returncode": 0 if ok else 1}

    # ----- the episode ------------------------------------------------------------------
    def _timeout_text(self) -> str:
        try:
            return f"Time up. Solution:\n{self.solution()}"
        except Exception:  # a game without solution() still ends its episode
            return "Time up."

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        last_turn = self.turn_count >= self.max_turns
        answer = _ANSWER.search(action)
        if answer:
            if self._check_answer(answer.group(1).strip()):
                return "Correct!", 1.0, True, False, {}
            if last_turn:
                return f"Wrong answer. {self._timeout_text()}", 0.0, False, True, {}
            return self._incorrect_answer_feedback(), 0.0, False, False, {}
        call = _TOOL_CALL.search(action)
        parsed = _parse_call(call.group(1)) if call else None
        if parsed is None:
            if last_turn:
                return self._timeout_text(), 0.0, False, True, {ACTION_PARSED: False}
            why = (
                "invalid tool call arguments"
                if call
                else ("use tools to call a function, or <answer>result</answer> to submit")
            )
            return f"Format error: {why}.", FORMAT_PENALTY, False, False, {ACTION_PARSED: False}
        name, arguments = parsed
        if not hasattr(self, f"tool_{name}"):
            observation = f"Unknown tool '{name}'. Available: {', '.join(self._tools)}"
            understood = {ACTION_PARSED: False}
        else:
            understood = {ACTION_PARSED: _takes(getattr(self, f"tool_{name}"), arguments)}
            observation = f"Tool result:\n{self._call_tool(name, arguments)[1]}"
        if last_turn:
            return f"{observation}\n\n{self._timeout_text()}", 0.0, False, True, understood
        return observation, 0.0, False, False, understood

    def _obs_suffix(self) -> str:
        """Kept for older SPADE games that append it to observations (it is empty)."""
        return ""

    def _incorrect_answer_feedback(self) -> str:
        messages = getattr(self, "_user_messages", None)
        current = getattr(self, "_current_msg", None)
        if isinstance(messages, (list, tuple)) and isinstance(current, int):
            if 0 <= current < len(messages):
                return (
                    f"Incorrect. Keep using tools. You are on step {current + 1}/{len(messages)}: "
                    f'"{messages[current]}" Complete it with the tools before submitting '
                    "<answer>done</answer>."
                )
        return "Incorrect. Keep using tools."

    def _check_answer(self, answer: str) -> bool:
        """Case-insensitive equality, or numbers within 0.01 (``$`` and ``,`` ignored)."""
        given, expected = str(answer).strip(), str(self._expected_answer).strip()
        if given.lower() == expected.lower():
            return True
        try:
            clean = [float(t.replace("$", "").replace(",", "").strip()) for t in (given, expected)]
        except ValueError:
            return False
        return abs(clean[0] - clean[1]) < 0.01

    def close(self) -> None:
        return None


def _takes(method: Any, arguments: dict[str, Any]) -> bool:
    """Whether ``method`` accepts ``arguments`` as keywords (a call that cannot bind is
    malformed; one that binds and then fails is the tool's own answer)."""
    import inspect

    try:
        signature = inspect.signature(method)
    except Exception:  # no signature to read (a builtin, an odd callable): let the call decide
        return True
    try:
        signature.bind(**arguments)
    except TypeError:
        return False
    return True


def _parse_call(text: str) -> tuple[str, dict[str, Any]] | None:
    try:
        call = json.loads(text)
    except (ValueError, RecursionError):  # ValueError: also an int past Python's digit limit
        return None
    if not isinstance(call, dict):
        return None
    arguments = call.get("arguments", {})
    return str(call.get("name", "")), arguments if isinstance(arguments, dict) else {}


# ----- prose solutions ---------------------------------------------------------------------
#: ``3. mv(src="a", dst='b')`` up to an optional ``-> result``; then ``ANSWER: x`` or a
#: numbered ``<answer>x</answer>``.
_NUMBERED = re.compile(r"(?:^|\s)(\d{1,3})\.\s+")
_CALL = re.compile(r"^([A-Za-z_]\w*)\((.*)\)$", re.DOTALL)
_FINAL = re.compile(r"ANSWER:\s*(.+?)\s*$", re.DOTALL)


def _literal_arguments(text: str) -> dict[str, Any] | None:
    """``path="docs", n=3`` as a dict of literals (None when it is not that)."""
    import ast

    if not text.strip():
        return {}
    try:
        node = parse_source(f"f({text})", mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(node, ast.Call) or node.args:
        return None
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            return None
        try:
            arguments[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    return arguments


def prose_actions(text: str) -> list[str] | None:
    """The actions a SPADE prose solution describes, or None when it is not in SPADE's
    numbered-call form (``1. cd(path="docs") -> … 2. … ANSWER: x``).

    Each numbered call becomes ``<tool_call>{json}</tool_call>``; the final answer (after
    ``ANSWER:``, or a numbered ``<answer>x</answer>``) becomes ``<answer>x</answer>``.
    """
    text = str(text).strip()
    final = None
    found = _FINAL.search(text)
    if found:
        final, text = found.group(1).strip(), text[: found.start()]
    marks = list(_NUMBERED.finditer(text))
    if not marks:
        return None
    actions: list[str] = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        item = text[mark.end() : end].strip()
        answer = _ANSWER.fullmatch(item)
        if answer:
            final = answer.group(1).strip()
            continue
        # The result after "->" is commentary; only the call itself is parsed.
        call = _CALL.match(item.split("->", 1)[0].strip())
        arguments = _literal_arguments(call.group(2)) if call else None
        if call is None or arguments is None:
            return None
        payload = json.dumps({"name": call.group(1), "arguments": arguments}, ensure_ascii=False)
        actions.append(f"<tool_call>{payload}</tool_call>")
    if final is None:
        return None
    return [*actions, f"<answer>{final}</answer>"]
