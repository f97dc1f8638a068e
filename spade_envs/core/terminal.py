"""Showing model-written text on a terminal: control and escape sequences escaped.

Observations, descriptions, hints, error messages from environments and model replies
are written by models or by untrusted code. Printed raw, ``\\x1b]...`` or ``\\x1b[2J``
would rewrite the user's terminal (titles, colours, a cleared screen, on some terminals
clipboard writes), and bidirectional overrides would reorder what the user reads.
Everything the CLI prints that such a writer chose goes through :func:`terminal_safe`.
"""

from __future__ import annotations

import unicodedata

__all__ = ["terminal_safe"]

_KEPT = {"\n", "\t"}


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_safe(text: str, *, one_line: bool = False, limit: int | None = None) -> str:
    """``text`` with every control, format and separator character shown escaped.

    Args:
        text: Text from a model or an environment.
        one_line: Escape newlines and tabs too (for table cells and log lines).
        limit: Cut to at most this many characters (an ellipsis marks the cut).

    Returns:
        Text that prints as itself: ESC, C0/C1 controls, DEL, bidirectional and other
        format characters (``Cf``), line and paragraph separators, and private-use or
        unassigned code points become ``\\xNN`` / ``\\uNNNN`` escapes.
    """
    kept = set() if one_line else _KEPT
    out = []
    for char in str(text):
        if char in kept:
            out.append(char)
        elif unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Co", "Cn", "Cs"):
            out.append(_escaped(char))
        else:
            out.append(char)
    safe = "".join(out)
    if limit is not None and len(safe) > limit:
        safe = safe[: max(0, limit - 1)] + "…"
    return safe
