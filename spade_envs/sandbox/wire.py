"""The pipe protocol between the parent and a worker: length-prefixed JSON.

JSON, not pickle: the parent must never unpickle what an untrusted worker sends
(unpickling runs code). Each message is a 4-byte big-endian length followed by
that many bytes of UTF-8 JSON. Reads are bounded by a deadline and a size limit;
with a deadline, writes are too (the parent's write end is non-blocking, so a
worker that stopped reading cannot block the parent).

A :class:`Channel` keeps one poller and a read buffer per connection: a step's
round trip is then one ``write`` and usually one ``poll`` and one ``read`` on
each side, which is what keeps the sandbox's per-step overhead low.
"""

from __future__ import annotations

import json
import os
import re
import select
import time
from typing import Any

from ..error import SandboxCrashed, SandboxProtocolError, SandboxTimeout

__all__ = ["Channel", "encode", "frame"]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_READ_SIZE = 1 << 16


def frame(body: bytes) -> bytes:
    """Prefix ``body`` with its 4-byte length."""
    return len(body).to_bytes(4, "big") + body


def encode(payload: Any) -> bytes:
    """Frame ``payload`` (JSON-serialisable) as one message."""
    return frame(_ENCODER.encode(payload).encode("utf-8", "surrogatepass"))


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (the worker must not send NaN or infinity)")


# A \uD800-\uDFFF escape: the worker's encoder writes characters, never escapes, so one
# in a message was forged, and a lone surrogate would break every later UTF-8 encode
# (saved trajectories, stored reports).
_SURROGATE_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F]")


_DECODER = json.JSONDecoder(parse_constant=_no_constants)  # built once: loads() builds one a call


def decode(body: bytes) -> Any:
    """Parse one message body: strict UTF-8 JSON, no NaN or infinity, no lone surrogates.

    Raises:
        ValueError, RecursionError, UnicodeDecodeError: The body is not plain JSON (or is
            nested too deeply, or holds an integer over Python's digit limit).
    """
    text = body.decode("utf-8")  # strict: surrogates are not UTF-8
    if b"\\u" in body and _SURROGATE_ESCAPE.search(body):  # the test first: it is ~50x faster
        raise ValueError("the message holds a surrogate escape (\\ud800-\\udfff)")
    return _DECODER.decode(text)


def _milliseconds_left(deadline: float | None) -> int:
    if deadline is None:
        return -1
    return max(0, int((deadline - time.monotonic()) * 1000))


class Channel:
    """One end of a worker connection: a read fd, a write fd, a poller and a buffer."""

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd = read_fd
        self.write_fd = write_fd
        self._reader = select.poll()
        self._reader.register(read_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self._writer = select.poll()
        self._writer.register(write_fd, select.POLLOUT | select.POLLHUP | select.POLLERR)
        self._buffer = bytearray()

    @property
    def unread(self) -> int:
        """Bytes read from the pipe past the last message received."""
        return len(self._buffer)

    def send_bytes(
        self, data: bytes, *, deadline: float | None = None, what: str = "a call"
    ) -> None:
        """Write framed bytes, waiting at most until ``deadline`` for pipe space."""
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.write_fd, view)
            except BlockingIOError:
                if not self._writer.poll(_milliseconds_left(deadline)):
                    raise SandboxTimeout(f"the worker stopped reading during {what}") from None
                continue
            except BrokenPipeError:
                raise SandboxCrashed(f"the worker closed its pipe during {what}") from None
            view = view[written:]

    def send(self, payload: Any, *, deadline: float | None = None, what: str = "a call") -> None:
        self.send_bytes(encode(payload), deadline=deadline, what=what)

    def _fill(self, deadline: float | None, what: str) -> None:
        if deadline is not None and not self._reader.poll(_milliseconds_left(deadline)):
            raise SandboxTimeout(f"no answer to {what} in time")
        try:
            chunk = os.read(self.read_fd, _READ_SIZE)
        except OSError as exc:
            raise SandboxCrashed(f"reading the worker's pipe failed during {what}: {exc}") from None
        if not chunk:
            raise SandboxCrashed(f"the worker closed its pipe during {what}")
        self._buffer += chunk

    def receive(self, *, deadline: float | None, max_bytes: int, what: str = "a call") -> Any:
        """Read one message, waiting at most until ``deadline`` (``time.monotonic``).

        Raises:
            SandboxTimeout: Nothing (or not all of it) arrived before the deadline.
            SandboxCrashed: The pipe closed (the worker died).
            SandboxProtocolError: The message is larger than ``max_bytes`` or not JSON.
        """
        while len(self._buffer) < 4:
            self._fill(deadline, what)
        size = int.from_bytes(self._buffer[:4], "big")
        if size > max_bytes:
            raise SandboxProtocolError(
                f"the worker's answer to {what} is {size} bytes, over the {max_bytes}-byte "
                "limit (observation or info too large)"
            )
        while len(self._buffer) < 4 + size:
            self._fill(deadline, what)
        body = bytes(self._buffer[4 : 4 + size])
        del self._buffer[: 4 + size]
        try:
            return decode(body)
        except (UnicodeDecodeError, ValueError, RecursionError, MemoryError) as exc:
            raise SandboxProtocolError(
                f"the worker's answer to {what} is not valid JSON: {exc}"
            ) from None
