"""Parsing Python source safely from any thread.

CPython 3.11 keeps the bookkeeping of its AST constructor (a recursion depth) in
interpreter-wide state. Two threads building ASTs at once can corrupt it, and the call that
notices raises ``SystemError: AST constructor recursion depth mismatch`` (CPython
gh-106905): a browser thread reading a card while a validation thread parses was enough.
Every parse in this package goes through :func:`parse_source`, which holds
:data:`PARSE_LOCK`; the lock is re-entrant so a caller already holding it may parse again.

The lock cannot cover parses outside this package (``traceback`` parses a line to place its
carets when it formats an exception), so a parse that meets the mismatch is tried again:
the constructor resets its depth at the start of every call. A forked child gets a fresh
lock, since the thread that held it at the fork does not exist there.
"""

from __future__ import annotations

import ast
import os
import threading
from typing import Any

__all__ = ["PARSE_LOCK", "literal_value", "parse_source"]

#: Held by every parse of Python source in this package (parsing is cheap; waiting is rare).
PARSE_LOCK = threading.RLock()

_MISMATCH = "AST constructor recursion depth mismatch"
_TRIES = 5


def _fresh_lock_in_child() -> None:
    global PARSE_LOCK
    PARSE_LOCK = threading.RLock()


os.register_at_fork(after_in_child=_fresh_lock_in_child)


def parse_source(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse(source, filename, mode)`` under :data:`PARSE_LOCK`.

    Raises what ``ast.parse`` raises (``SyntaxError``, ``ValueError``, ``RecursionError``,
    ``MemoryError``).
    """
    for attempt in range(_TRIES):
        with PARSE_LOCK:
            try:
                return ast.parse(source, filename, mode)
            except SystemError as exc:  # another thread parsed outside the lock (see above)
                if _MISMATCH not in str(exc) or attempt == _TRIES - 1:
                    raise
    raise AssertionError("unreachable")  # pragma: no cover


def literal_value(text: str) -> Any:
    """``ast.literal_eval(text)`` for a string, its parse under :data:`PARSE_LOCK`."""
    return ast.literal_eval(parse_source(text.lstrip(" \t"), mode="eval"))
