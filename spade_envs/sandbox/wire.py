"""The pipe protocol between the parent and a worker: length-prefixed JSON.

JSON, not pickle: the parent must never unpickle what an untrusted worker sends
(unpickling runs code). Each message is a 4-byte big-endian length followed by
that many bytes of UTF-8 JSON. Reads are bounded by a deadline and a size limit.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

from ..error import SandboxCrashed, SandboxProtocolError, SandboxTimeout

__all__ = ["encode", "read_message", "write_bytes", "write_message"]

_HEADER = struct.Struct(">I")
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def encode(payload: Any) -> bytes:
    """Frame ``payload`` (JSON-serialisable) as one message."""
    body = _ENCODER.encode(payload).encode("utf-8", "surrogatepass")
    return _HEADER.pack(len(body)) + body


def write_message(
    fd: int, payload: Any, *, deadline: float | None = None, what: str = "a call"
) -> None:
    """Write one framed message to ``fd``, waiting at most until ``deadline``.

    A worker stuck in a loop stops reading; without a deadline a large request
    (a long action) would then block the parent forever once the pipe is full.
    """
    write_bytes(fd, encode(payload), deadline=deadline, what=what)


def write_bytes(
    fd: int, data: bytes, *, deadline: float | None = None, what: str = "a call"
) -> None:
    """Write already framed bytes (see :func:`encode`) to ``fd`` with a deadline.

    With a deadline ``fd`` must be non-blocking (the parent's ends are), so a full
    pipe never blocks past the deadline.
    """
    view = memoryview(data)
    poller = select.poll()
    poller.register(fd, select.POLLOUT | select.POLLERR | select.POLLHUP)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            timeout_ms = (
                -1 if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            )
            if not poller.poll(timeout_ms):
                raise SandboxTimeout(f"the worker stopped reading during {what}") from None
            continue
        except BrokenPipeError:
            raise SandboxCrashed(f"the worker closed its pipe during {what}") from None
        view = view[written:]


def _read_exact(fd: int, size: int, deadline: float | None, what: str) -> bytes:
    chunks = []
    remaining = size
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    while remaining:
        if deadline is not None:
            timeout_ms = max(0, int((deadline - time.monotonic()) * 1000))
            if not poller.poll(timeout_ms):
                raise SandboxTimeout(f"no answer to {what} in time")
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise SandboxCrashed(f"the worker closed its pipe during {what}")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_message(fd: int, *, deadline: float | None, max_bytes: int, what: str = "a call") -> Any:
    """Read one framed message, waiting at most until ``deadline`` (``time.monotonic``).

    Raises:
        SandboxTimeout: Nothing (or not all of it) arrived before the deadline.
        SandboxCrashed: The pipe closed (the worker died).
        SandboxProtocolError: The message is larger than ``max_bytes`` or not JSON.
    """
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline, what))
    if size > max_bytes:
        raise SandboxProtocolError(
            f"the worker's answer to {what} is {size} bytes, over the {max_bytes}-byte limit "
            "(observation or info too large)"
        )
    body = _read_exact(fd, size, deadline, what)
    try:
        return json.loads(body.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SandboxProtocolError(
            f"the worker's answer to {what} is not valid JSON: {exc}"
        ) from None
