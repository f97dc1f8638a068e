"""The text an environment is embedded as: its description plus a summary of its code.

Embedding raw source mostly measures boilerplate (every environment has ``reset``,
``step`` and ``self.rng``), so two unrelated puzzles look alike. The summary keeps
what tells environments apart: the class name split into words, its docstring and
description, the skill, tool names and their docstrings, the names of helper methods
and the string literals the environment shows the player. The code is read, never run.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["embedding_text", "text_sha256"]

#: Methods every environment has: they carry no information about what it is.
_COMMON = {
    "__init__",
    "reset",
    "step",
    "_reset",
    "_step",
    "solution",
    "hint",
    "render",
    "close",
    "legal_moves",
    "best_move",
    "_observe",
    "_move",
}
_MAX_CHARS = 2000


def _words(identifier: str) -> str:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", identifier.strip("_"))
    return spaced.replace("_", " ").lower()


_CLASS = re.compile(
    r"^class\s+(\w+)[^:\n]*:[ \t]*\n(?:\s*(?:\"\"\"|\'\'\')(.*?)(?:\"\"\"|\'\'\'))?", re.M | re.S
)
_DEF = re.compile(
    r"^[ \t]+def\s+(\w+)\s*\([^)]*\)[^:\n]*:[ \t]*\n(?:\s*(?:\"\"\"|\'\'\')[ \t]*([^\n]*))?",
    re.M,
)
_META = re.compile(
    r"^[ \t]+(skill|description)\s*(?::\s*\w+\s*)?=\s*(?:\"([^\"\n]*)\"|\'([^\'\n]*)\')", re.M
)
_LITERAL = re.compile(r"\"([^\"\\\n]{13,})\"|\'([^\'\\\n]{13,})\'")


def embedding_text(source: str, description: str = "", skill: str = "") -> str:
    """The text to embed for an environment (at most ~2,000 characters).

    Regular expressions rather than a parse: they cost microseconds per environment
    (a parse and tree walk cost milliseconds, minutes over a 100,000-version corpus),
    and a summary needs no exactness. Code that is not Python still gives a summary.

    Args:
        source: The environment's code.
        description: The registry's description, when known.
        skill: The skill, when known.
    """
    parts: list[str] = []
    if description:
        parts.append(description.strip())
    if skill:
        parts.append(f"skill: {skill}")
    for found in _CLASS.finditer(source):
        parts.append(f"{_words(found.group(1))}.")
        doc = " ".join((found.group(2) or "").split())
        if doc and doc not in description:
            parts.append(doc)
    for found in _META.finditer(source):
        value = found.group(2) or found.group(3) or ""
        if value and value not in description and value != skill:
            parts.append(value)
    tools, helpers = [], []
    for found in _DEF.finditer(source):
        name, first_line = found.group(1), (found.group(2) or "").strip().strip("\"'")
        if name.startswith("tool_"):
            tools.append(f"{_words(name[5:])} ({first_line})" if first_line else _words(name[5:]))
        elif name not in _COMMON and not name.startswith("__"):
            helpers.append(_words(name))
    if tools:
        parts.append("tools: " + "; ".join(tools))
    if helpers:
        parts.append("helpers: " + ", ".join(dict.fromkeys(helpers)))
    literals = []
    for found in _LITERAL.finditer(source):
        text = " ".join((found.group(1) or found.group(2)).split())
        code_like = "self." in text or " == " in text or text.startswith(("\\", "<", "]"))
        if text not in description and not code_like:
            literals.append(text)
    if literals:
        parts.append("text: " + " | ".join(dict.fromkeys(literals)))
    if len(parts) <= 2 and not literals:  # nothing recognisable: fall back to the code itself
        parts.append(source[:_MAX_CHARS])
    return "\n".join(parts)[:_MAX_CHARS]


def text_sha256(text: str) -> str:
    """Identity of an embedded text (stored next to the vector to spot stale ones)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
