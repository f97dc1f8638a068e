"""Getting the code out of a model's reply.

Replies come in every shape: one fenced block, several blocks (an example, then the
module), prose around the code, no fence at all, a fence that never closes because
the reply hit its token limit, or no code. :func:`extract_code` returns the most
plausible module and, when there is none, a reason that the pipeline counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.pyparse import parse_source

__all__ = ["Extraction", "extract_code"]

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[ \t]*\n(.*?)(?:```|\Z)", re.S)


@dataclass(frozen=True)
class Extraction:
    """The code found in a reply, or why there is none.

    Attributes:
        code: The module, or None.
        reason: Empty when code was found; else ``no code``, ``truncated``,
            ``does not parse`` or ``no class``.
        note: Extra detail (e.g. ``3 code blocks, used the one defining a class``).
    """

    code: str | None
    reason: str = ""
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.code is not None


def _parses(code: str) -> bool:
    try:
        parse_source(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _defines_class(code: str) -> bool:
    return re.search(r"^class\s+\w+", code, re.M) is not None


def extract_code(reply: str) -> Extraction:
    """The environment module in ``reply``.

    Preference: a closed fenced block that parses and defines a class (the longest if
    several do); then the unfenced reply if it parses and defines a class; a block cut
    off by the token limit is reported as ``truncated``.
    """
    if not isinstance(reply, str) or not reply.strip():
        return Extraction(None, "no code", "empty reply")
    blocks = []
    for found in _FENCE.finditer(reply):
        language, body = found.group(1).lower(), found.group(2)
        closed = found.group(0).endswith("```")
        if language in ("", "python", "py", "python3"):
            blocks.append((body.strip("\n"), closed))
    candidates = [b for b, closed in blocks if closed and _defines_class(b)]
    good = [b for b in candidates if _parses(b)]
    if good:
        note = (
            f"{len(blocks)} code blocks, used the longest defining a class"
            if len(blocks) > 1
            else ""
        )
        return Extraction(max(good, key=len), "", note)
    if candidates:
        return Extraction(None, "does not parse", "the code block has a syntax error")
    open_blocks = [b for b, closed in blocks if not closed and _defines_class(b)]
    if open_blocks:
        body = open_blocks[-1]
        if _parses(body):  # the fence was left open but the module is whole
            return Extraction(body, "", "unclosed code block")
        return Extraction(None, "truncated", "the reply ends inside the code block")
    if not blocks and _defines_class(reply):
        start = re.search(r"^(from|import|class)\s", reply, re.M)
        body = reply[start.start() :] if start else reply
        if _parses(body):
            return Extraction(body.strip("\n"), "", "no code fence")
        return Extraction(None, "does not parse", "unfenced code with prose or errors")
    if blocks:
        return Extraction(None, "no class", "code blocks without an environment class")
    return Extraction(None, "no code", "the reply has no code")
