"""Reading untrusted import files within limits: regular files only, sizes capped, JSON bounded.

Import files come from anywhere (a downloaded pool, a colleague's export). Every file an
import opens goes through :func:`read_regular`: it is ``lstat``-ed first and must be a
regular file (a symbolic link, FIFO, socket or device is refused before it is opened, so
a link to ``/etc/shadow`` is not followed, a FIFO cannot block the import and
``/dev/zero`` cannot fill memory), it is opened with ``O_NOFOLLOW | O_NONBLOCK`` and
checked again on the open descriptor (a file swapped after the ``lstat`` is refused too),
and never more than its cap is read. :func:`parse_json` refuses text over a size limit or
nested deeper than :data:`MAX_JSON_DEPTH` before parsing it, so a hostile file gives a
clear :class:`~spade_envs.error.SpadeError`, never a ``RecursionError`` or ``MemoryError``.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from ..error import SpadeError

__all__ = [
    "MAX_HINT_BYTES",
    "MAX_IMPORT_FILE_BYTES",
    "MAX_JSONL_LINE_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_MANIFEST_BYTES",
    "MAX_MEMORY_BYTES",
    "MAX_SOURCE_BYTES",
    "check_regular",
    "exists_unfollowed",
    "is_regular",
    "json_depth",
    "open_regular",
    "parse_json",
    "read_regular",
]

#: Deepest JSON nesting an import accepts (an export nests 3 deep; ``extra`` a few more).
MAX_JSON_DEPTH = 64
#: Largest environment source an import reads (the validator's own limit is far lower).
MAX_SOURCE_BYTES = 1_000_000
#: Largest model-written hint file of a SPADE pool.
MAX_HINT_BYTES = 100_000
#: Largest line of a JSONL export (one version: its source plus its metadata).
MAX_JSONL_LINE_BYTES = 4_000_000
#: Largest ``manifest.json`` of a package export.
MAX_MANIFEST_BYTES = 256_000_000
#: Largest ``env_memory.json`` of a SPADE pool.
MAX_MEMORY_BYTES = 256_000_000
#: Largest JSONL or Parquet import file.
MAX_IMPORT_FILE_BYTES = 4_000_000_000

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def _describe(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _refusal(path: Path, what: str, kind: str) -> SpadeError:
    return SpadeError(
        f"{path} ({what}) is {kind}, not a regular file; imports read regular files only and "
        "never follow links. Replace it with a copy of the file it stands for."
    )


def check_regular(path: str | Path, what: str = "import file") -> os.stat_result:
    """``os.lstat(path)``, provided ``path`` is a regular file (not a link, FIFO, device, ...).

    Raises:
        SpadeError: ``path`` is missing, or is not a regular file.
    """
    path = Path(path)
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise SpadeError(f"Cannot read {path} ({what}): {exc.strerror or exc}.") from None
    if not stat.S_ISREG(info.st_mode):
        raise _refusal(path, what, _describe(info.st_mode))
    return info


def is_regular(path: str | Path) -> bool:
    """True when ``path`` exists and is a regular file (``lstat``: links are not followed)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def exists_unfollowed(path: str | Path) -> bool:
    """True when something (a file, a link, a FIFO, ...) is at ``path`` (``lstat``)."""
    try:
        os.lstat(path)
    except OSError:
        return False
    return True


def read_regular(path: str | Path, *, max_bytes: int, what: str = "import file") -> bytes:
    """The bytes of the regular file ``path``, refusing anything else and anything too big.

    The file is ``lstat``-ed, opened without following links and without blocking, and
    checked again on the open descriptor; at most ``max_bytes + 1`` bytes are read.

    Raises:
        SpadeError: ``path`` is not a regular file, cannot be read, or is over ``max_bytes``.
    """
    with open_regular(path, max_bytes=max_bytes, what=what) as stream:
        try:
            data = stream.read(max_bytes + 1)
        except OSError as exc:
            raise SpadeError(f"Cannot read {path} ({what}): {exc.strerror or exc}.") from None
    if len(data) > max_bytes:  # it grew after the size check
        raise _too_big(Path(path), what, len(data), max_bytes)
    return data


def open_regular(path: str | Path, *, max_bytes: int, what: str = "import file") -> Any:
    """A binary file object on the regular file ``path`` (checked as :func:`read_regular` does).

    The caller reads it (in bounded pieces) and closes it.

    Raises:
        SpadeError: ``path`` is not a regular file, cannot be opened, or is over ``max_bytes``.
    """
    path = Path(path)
    check_regular(path, what)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise SpadeError(f"Cannot read {path} ({what}): {exc.strerror or exc}.") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refusal(path, what, _describe(info.st_mode))
        if info.st_size > max_bytes:
            raise _too_big(path, what, info.st_size, max_bytes)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _too_big(path: Path, what: str, size: int, limit: int) -> SpadeError:
    return SpadeError(
        f"{path} ({what}) has {size:,} bytes or more; imports read at most {limit:,} bytes of "
        "it. Split it, or check that it is the file you meant."
    )


# A JSON string (skipped whole) or one bracket; matched lazily, so nothing is copied.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def json_depth(text: str, limit: int | None = None) -> int:
    """How deeply the arrays and objects of the JSON ``text`` nest (strings are skipped).

    With ``limit``, the scan stops at the first bracket deeper than ``limit`` and returns
    ``limit + 1``: a hostile file is refused after ``limit`` brackets, not after all of it.
    """
    depth = deepest = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if limit is not None and deepest > limit:
                    return deepest
        elif token in "]}":
            depth -= 1
    return deepest


def parse_json(text: str, where: str, *, max_chars: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(text)``, refusing text that is too long or nested too deeply first.

    Raises:
        SpadeError: ``text`` is over ``max_chars`` characters, nests deeper than
            ``max_depth``, or is not JSON; the message says which and where.
    """
    if len(text) > max_chars:
        raise SpadeError(
            f"{where}: {len(text):,} characters of JSON, over the limit of {max_chars:,}."
        )
    if json_depth(text, max_depth) > max_depth:
        raise SpadeError(
            f"{where}: JSON nested more than {max_depth} levels deep; an export nests only a "
            "few levels, so this file was not written by spade-envs."
        )
    try:
        return json.loads(text)
    except RecursionError:  # a bracket count the scan above could not see
        raise SpadeError(f"{where}: JSON nested too deeply to read.") from None
    except ValueError as exc:
        raise SpadeError(f"{where}: not JSON ({exc}).") from None
