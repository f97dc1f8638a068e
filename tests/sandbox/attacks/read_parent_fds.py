# attack: parent-fds expect: denied
"""Reach the parent's descriptors, or any descriptor that is not this worker's own.

The parent keeps one request pipe, one answer pipe (and, for a zygote's worker, a pidfd
and a status socket) per worker, and its web server's sockets besides. A worker must hold
nothing but its own two pipes and /dev/null: no stray pipe or socket inherited from its
starter (another worker's pipes, the zygote's control socket, the status socket its init
writes the exit code to), and no way to take one from the parent (``pidfd_getfd``) or to
signal it through a pidfd. Everything goes through libc (ctypes), past the audit hook.
"""

import json

from spade_envs import TextEnv

SYS_PIDFD_OPEN = 434
SYS_PIDFD_GETFD = 438
SYS_PIDFD_SEND_SIGNAL = 424


def _libc():
    import ctypes

    return ctypes, ctypes.CDLL(None, use_errno=True)


def _readlink(path):
    ctypes, libc = _libc()
    buffer = ctypes.create_string_buffer(256)
    count = libc.readlink(path.encode(), buffer, 255)
    return buffer.raw[:count].decode() if count > 0 else ""


def _stray_fds():
    """Every open descriptor but the two channel pipes and /dev/null."""
    targets = {}
    for fd in range(0, 256):
        link = _readlink(f"/proc/self/fd/{fd}")
        if link:
            targets[fd] = link
    pipes = [fd for fd, t in targets.items() if t.startswith("pipe:")]
    others = {
        fd: t
        for fd, t in targets.items()
        if not t.startswith("pipe:") and t != "/dev/null" and not t.startswith("/proc/")
    }
    if not targets:
        raise PermissionError("no descriptor could be listed")
    if len(pipes) > 2 or others:
        raise RuntimeError(f"ESCAPE {targets}")
    return None


def _pidfd(pid):
    ctypes, libc = _libc()
    fd = libc.syscall(SYS_PIDFD_OPEN, pid, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), f"pidfd_open({pid})")
    return fd


def _getfd_parent():
    import os

    ctypes, libc = _libc()
    for pid in {os.getppid(), 1}:
        try:
            pidfd = _pidfd(pid)
        except OSError:
            continue
        for target in range(3, 64):
            got = libc.syscall(SYS_PIDFD_GETFD, pidfd, target, 0)
            if got >= 0:
                return f"took fd {target} of pid {pid} as {got}"
    raise PermissionError("pidfd_getfd refused")


def _signal_parent():
    import os

    ctypes, libc = _libc()
    pidfd = _pidfd(os.getppid())
    if libc.syscall(SYS_PIDFD_SEND_SIGNAL, pidfd, 0, None, 0) != 0:
        raise OSError(ctypes.get_errno(), "pidfd_send_signal")
    return "may signal its parent through a pidfd"


def _host_parent_fd():
    ctypes, libc = _libc()
    fd = libc.open(b"/proc/@@PARENT_PID@@/fd/0", 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "open the test process's fd 0")
    return "opened the test process's stdin through /proc"


def _stray():
    _stray_fds()
    return None


ATTEMPTS = {
    "stray_fds": _stray,
    "pidfd_getfd_parent": _getfd_parent,
    "pidfd_signal_parent": _signal_parent,
    "proc_parent_fd": _host_parent_fd,
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
            except BaseException as exc:
                text = f"{type(exc).__name__}: {exc}"
                if text.startswith("RuntimeError: ESCAPE"):
                    verdicts[name] = f"ESCAPED: {text}"[:300]
                    continue
                verdicts[name] = "denied"
                self.why[name] = text[:200]
            else:
                if outcome is None:
                    verdicts[name] = "denied"
                    self.why[name] = "only its own descriptors"
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
