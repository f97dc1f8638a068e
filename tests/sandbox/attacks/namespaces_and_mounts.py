# attack: processes expect: denied denied-unless: no-seccomp(keyctl_join_session, bpf_map_create, perf_event_open, user_and_mount_namespace, user_namespace)
"""Namespaces and mounts: unshare(CLONE_NEWUSER) (which gives the worker every
capability inside the new namespace and with it the kernel's mount, netfilter and
keyring code as attack surface), a mount namespace with a tmpfs inside it, setns, a
plain mount, pivot_root, and keyctl / bpf / userfaultfd / perf_event_open.

Without seccomp, nothing stops an unprivileged process from creating a user namespace
(bubblewrap could, with --disable-userns, which needs --unshare-user) or from reaching
keyctl, bpf and perf_event_open, or, inside a user and mount namespace of its own, from
mounting (a tmpfs here): kernel attack surface, not an escape by itself (the sandbox's
own mounts stay locked underneath). That is what a missing seccomp layer costs today;
bubblewrap's --disable-userns would close the namespace part even then.
"""

import ctypes
import json
import os

from spade_envs import TextEnv

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _check(result, what):
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def _user_namespace():
    _check(_libc.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    return "created a user namespace"


def _user_and_mount_namespace():
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare(NEWUSER|NEWNS)")
    _check(_libc.mount(b"none", b"/tmp", b"tmpfs", 0, None), "mount tmpfs")
    return "mounted a tmpfs in its own namespaces"


def _mount():
    _check(_libc.mount(b"none", b"/tmp", b"tmpfs", 0, None), "mount")
    return "mounted a tmpfs"


def _setns():
    fd = os.open("/proc/1/ns/mnt", os.O_RDONLY)
    _check(_libc.setns(fd, 0), "setns")
    return "joined pid 1's mount namespace"


def _raw(number, *args, name):
    def attempt():
        values = [ctypes.c_long(a) for a in args]
        result = _libc.syscall(ctypes.c_long(number), *values)
        errno = ctypes.get_errno()
        if result < 0 and errno in (1, 13):  # EPERM, EACCES
            raise PermissionError(f"{name}: {os.strerror(errno)}")
        return f"{name} reached the kernel (result {result}, errno {errno})"

    return attempt


ATTEMPTS = {
    "mount": _mount,
    "setns_pid1_mount": _setns,
    "pivot_root": _raw(155, 0, 0, name="pivot_root"),
    "keyctl_join_session": _raw(250, 1, 0, name="keyctl(JOIN_SESSION_KEYRING)"),
    "bpf_map_create": _raw(321, 0, 0, 0, name="bpf(BPF_MAP_CREATE)"),
    "userfaultfd": _raw(323, 0, name="userfaultfd"),
    "perf_event_open": _raw(298, 0, 0, -1, -1, 0, name="perf_event_open"),
    "user_and_mount_namespace": _user_and_mount_namespace,  # last: they change the process
    "user_namespace": _user_namespace,
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
