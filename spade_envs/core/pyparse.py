"""Parsing Python source safely from any thread.

CPython 3.11 keeps the bookkeeping of its AST constructor (a recursion depth) in
interpreter-wide state. Two threads building ASTs at once can corrupt it, and the call that
notices raises ``SystemError: AST constructor recursion depth mismatch`` (CPython
gh-106905): a browser thread reading a card while a validation thread parses was enough.
Every parse in this package goes through :func:`parse_source`, which holds
:data:`PARSE_LOCK`; the lock is re-entrant so a caller already holding it may parse again.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

__all__ = ["PARSE_LOCK", "literal_value", "parse_source"]

#: Held by every parse of Python source in this package (parsing is cheap; waiting is rare).
PARSE_LOCK = threading.RLock()


def parse_source(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse(source, filename, mode)`` under :data:`PARSE_LOCK`.

    Raises what ``ast.parse`` raises (``SyntaxError``, ``ValueError``, ``RecursionError``,
    ``MemoryError``).
    """
    with PARSE_LOCK:
        return ast.parse(source, filename, mode)


def literal_value(text: str) -> Any:
    """``ast.literal_eval(text)`` for a string, its parse under :data:`PARSE_LOCK`."""
    return ast.literal_eval(parse_source(text.lstrip(" \t"), mode="eval"))
