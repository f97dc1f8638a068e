# attack: ptrace expect: denied denied-unless: no-seccomp(traceme)
"""Debugging other processes: PTRACE_SEIZE the test process (seize does not stop it;
the attempt detaches at once if it works), read its memory with process_vm_readv,
open /proc/<pid>/mem, and signal it and pid 1 with signal 0 (a harmless existence and
permission check).

Without seccomp only PTRACE_TRACEME works (it makes bubblewrap's init, in the sandbox,
the tracer of the worker itself); the test process is outside the PID namespace and
runs as another uid.
"""

import ctypes
import json
import os

from spade_envs import TextEnv

PARENT = int("@@PARENT_PID@@")
PTRACE_TRACEME, PTRACE_DETACH, PTRACE_SEIZE = 0, 17, 0x4206
SYS_PTRACE, SYS_PROCESS_VM_READV = 101, 310

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _long(*values):
    """System call arguments as full-width longs (ctypes passes plain ints as C int)."""
    return [ctypes.c_long(v) if isinstance(v, int) else v for v in values]


def _ptrace(request, pid):
    result = _libc.syscall(*_long(SYS_PTRACE, request, pid, 0, 0))
    if result < 0:
        raise OSError(ctypes.get_errno(), f"ptrace({request}, {pid}) failed")
    return result


def _seize(pid):
    def attempt():
        _ptrace(PTRACE_SEIZE, pid)
        _ptrace(PTRACE_DETACH, pid)
        return f"seized pid {pid}"

    return attempt


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _vm_read():
    buffer = ctypes.create_string_buffer(64)
    local = _IoVec(ctypes.addressof(buffer), 64)
    remote = _IoVec(0x400000, 64)
    result = _libc.syscall(
        *_long(
            SYS_PROCESS_VM_READV, PARENT, ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0
        )
    )
    errno = ctypes.get_errno()
    if result < 0 and errno in (1, 3, 13):  # EPERM, ESRCH, EACCES
        raise OSError(errno, "process_vm_readv failed")
    return f"process_vm_readv reached the test process (result {result}, errno {errno})"


def _mem():
    with open(f"/proc/{PARENT}/mem", "rb") as handle:
        handle.seek(0x400000)
        return f"read {handle.read(16)!r}"


def _signal(pid):
    def attempt():
        os.kill(pid, 0)
        return f"may signal pid {pid}"

    return attempt


def _traceme():
    _ptrace(PTRACE_TRACEME, 0)
    return "PTRACE_TRACEME succeeded"


ATTEMPTS = {
    "seize_parent": _seize(PARENT),
    "seize_pid1": _seize(1),
    "process_vm_readv_parent": _vm_read,
    "proc_mem_parent": _mem,
    "signal_parent": _signal(PARENT),
    "signal_pid1": _signal(1),
    "traceme": _traceme,
}


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
            except BaseException as exc:  # SystemExit from a failed exec included
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
