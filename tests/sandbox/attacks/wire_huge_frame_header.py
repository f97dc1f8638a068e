# attack: wire expect: contained
"""Wire lie: a frame header announcing 4 GB - 16 bytes, followed by a few bytes.

The parent must refuse the size before reading (or allocating) anything.
"""

import os

from spade_envs import TextEnv


def _serve_channel():
    """The channel the worker's serve loop answers on (found through the frames)."""
    try:
        raise LookupError
    except LookupError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        if "channel" in frame.f_locals and "request" in frame.f_locals:
            return frame.f_locals["channel"]
        frame = frame.f_back
    raise RuntimeError("no serve loop above this frame")


def _send_raw(body, *, header=None):
    """Write one frame of raw bytes where the real answer would go, then end the process
    so that the real answer never follows."""
    channel = _serve_channel()
    size = len(body) if header is None else header
    os.write(channel.write_fd, size.to_bytes(4, "big") + body)
    os._exit(0)


class HugeFrameHeader(TextEnv):
    skill = "code"
    description = "A wire attack."
    max_turns = 3

    def _reset(self):
        _send_raw(b'{"ok":true}', header=0xFFFFFFF0)

    def _step(self, action):
        return "ok", 0.0, False

    def hint(self):
        return "none"

    def solution(self):
        return ["x"]
