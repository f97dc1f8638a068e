# attack: uid_key expect: denied
"""The key of the uid permutation, read past the virtual clock's audit hook (ctypes).

A worker's uid is a keyed permutation of its parent's pid and a counter, so that an
environment cannot tell whose worker it is (a validator's or a rollout's) or how many
came before it. With the key it could undo that. The key was once the kernel's boot_id,
which any uid can read; now it is a root-only file outside every sandbox
(``spade_envs.sandbox.isolation.UID_KEY_FILE``): bubblewrap does not bind it, and a
worker's dropped uid may not open it.
"""

import json

from spade_envs import TextEnv

KEY = "/var/lib/spade-envs/uid-key"


def _libc_read(path):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.open(path.encode(), 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), f"open {path}")
    buffer = ctypes.create_string_buffer(64)
    count = libc.read(fd, buffer, 64)
    libc.close(fd)
    if count <= 0:
        raise OSError(ctypes.get_errno(), f"read {path}")
    return buffer.raw[:count].hex()


ATTEMPTS = {"uid_key": lambda: _libc_read(KEY)}


class Probe(TextEnv):
    skill = "code"
    description = "An attack probe: every attempt runs in reset()."
    max_turns = 1

    def _reset(self):
        self.why = {}
        verdicts = {}
        for name, attempt in ATTEMPTS.items():
            try:
                outcome = attempt()
            except BaseException as exc:
                verdicts[name] = "denied"
                self.why[name] = f"{type(exc).__name__}: {exc}"[:200]
            else:
                verdicts[name] = f"ESCAPED: {outcome}"[:300]
        return json.dumps(verdicts)

    def _reset_info(self):
        return {"turn": 0, "why": getattr(self, "why", {})}

    def _step(self, action):
        return "done", 0.0, True

    def hint(self):
        return "none"

    def solution(self):
        return ["done"]
