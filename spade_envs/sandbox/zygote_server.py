"""The zygote: a template process that imports once and forks fresh sandbox workers.

Started as ``python -m spade_envs.sandbox.zygote_server '<json settings>'`` under
bubblewrap (never without it), with a control socket on stdin. It imports what every
worker needs (:func:`~spade_envs.sandbox.worker.preload`), then waits. It never loads,
compiles or calls environment code, and reads nothing but its parent's requests.

For each request (a uid and three descriptors: the worker's request pipe, its answer
pipe and a status socket) it forks a *keeper*, which:

1. leaves the zygote's namespaces for new mount, PID, network, IPC and UTS namespaces
   of its own, so siblings cannot see, signal or talk to each other (no shared
   ``/tmp``, abstract sockets, System V IPC or ``/proc`` entries);
2. mounts fresh, sized tmpfs file systems over ``/tmp`` and the scratch directories;
3. forks the namespace's PID 1, which mounts its ``/proc``, forks the worker (PID 2,
   as under bubblewrap) and waits for it; when it ends, PID 1 writes its exit status
   to the status socket (only it can: the worker closes its copy first).

The worker sends its credentials on the status socket (the
kernel translates its PID into the parent's namespace, so the parent can read its CPU
time and kill it), empties its capability bounding set and then enters the same
lock-down as a cold worker (:func:`~spade_envs.sandbox.worker.enter`): virtual clock,
unprivileged uid, resource limits, seccomp.

Workers forked from one zygote share its address-space layout (fork copies it), so
``id()`` values can repeat between them where two cold workers' would differ. The
validator therefore compares workers from *different* zygotes
(:meth:`~spade_envs.sandbox.pool.WorkerPool.acquire`'s ``distinct_from``).
"""

from __future__ import annotations

import array
import ctypes
import json
import os
import signal
import socket
import struct
import sys
from typing import Any

from spade_envs.sandbox import worker
from spade_envs.sandbox.isolation import SCRATCH_DIRS

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
PR_CAPBSET_DROP = 24

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _private_filesystems(tmp_size_mb: int) -> None:
    """New namespaces for this process (and the worker it forks), fresh scratch space."""
    _check(
        _libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS),
        "unshare",
    )
    # Nothing mounted here may propagate back to the zygote's namespace.
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    flags = MS_NOSUID | MS_NODEV
    # Every writable file system bubblewrap made for the zygote, made anew: one left
    # shared would be a channel between siblings (and a trace of what ran before).
    _mount("tmpfs", "/tmp", "tmpfs", flags, f"size={tmp_size_mb * 1024 * 1024},mode=1777")
    for directory in SCRATCH_DIRS:
        if os.path.isdir(directory) and not os.path.islink(directory):
            _mount("tmpfs", directory, "tmpfs", flags, f"size={1024 * 1024},mode=1777")
    # bubblewrap's /dev has one devpts instance (its /dev/ptmx links into it): a new
    # one, or ptys opened by one worker would show in its siblings' /dev/pts.
    _mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666")


def _drop_bounding_set() -> None:
    """Empty the capability bounding set: whatever the uid becomes, no capability returns."""
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for cap in range(last + 1):
        _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"dropping capability {cap}")


def _set_capabilities(*, keep: bool) -> None:
    """Empty the inheritable set and, unless ``keep``, the effective and permitted ones.

    ``keep``: the worker still drops to an unprivileged uid (which needs CAP_SETUID and
    clears the other two sets itself).
    """
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    # Two 32-bit words of (effective, permitted, inheritable).
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capget(header, data), "capget")
    for word in (0, 1):
        data[3 * word + 2] = 0
        if not keep:
            data[3 * word] = data[3 * word + 1] = 0
    _check(_libc.capset(header, data), "capset")


def _send_credentials(status: socket.socket) -> None:
    """Tell the parent who this worker is: the kernel rewrites the PID for its namespace."""
    credentials = struct.pack("3i", os.getpid(), os.getuid(), os.getgid())
    status.sendmsg([b"pid"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, credentials)])


def _run_worker(settings: dict[str, Any], fd_in: int, fd_out: int, status: socket.socket) -> None:
    """In the worker (PID 2 of its namespace, as under bubblewrap): finish, then serve."""
    os.chdir("/tmp")
    _send_credentials(status)
    status.close()  # from here on only its init can write a status
    _drop_bounding_set()
    _set_capabilities(keep=bool(settings["drop_uid"] and os.getuid() == 0))
    # Forked children share the zygote's generators: give each its own draw, as two cold
    # workers would have (random reseeds itself at fork; numpy's global one does not).
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    devnull = os.open(os.devnull, os.O_RDWR)
    sink = worker._BoundedSink()  # its own, empty: nothing the zygote printed shows
    sys.stdout = sink
    layers = {"forked": True, "namespaces": True}
    worker.enter(settings, fd_in, fd_out, devnull, sink, layers)


def _init(settings: dict[str, Any], fd_in: int, fd_out: int, status: socket.socket) -> int:
    """PID 1 of the new namespace: its /proc, the worker, and how the worker ended.

    Not the worker itself: the kernel drops signals a namespace's PID 1 has no handler
    for (SIGXCPU at the CPU limit, say), which a worker must receive as a cold one does.
    """
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            _run_worker(settings, fd_in, fd_out, status)
        except BaseException as exc:  # before the status socket closed: say why
            code = 70
            try:
                status.send(json.dumps({"error": f"{type(exc).__name__}: {exc}"[:2000]}).encode())
            except OSError:
                pass
        finally:
            os._exit(code)
    os.close(fd_in)
    os.close(fd_out)
    _, wait_status = os.waitpid(pid, 0)
    status.send(json.dumps({"exit": os.waitstatus_to_exitcode(wait_status)}).encode())
    return 0


def _keeper(settings: dict[str, Any], fds: list[int]) -> int:
    """In the zygote's child: new namespaces, then their PID 1, kept until it ends."""
    fd_in, fd_out, status_fd = fds
    status = socket.socket(fileno=status_fd)
    _private_filesystems(settings["tmp_size_mb"])
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            code = _init(settings, fd_in, fd_out, status)
        finally:
            os._exit(code)
    # Held until the namespace ends, so the zygote (which waits for its children before
    # it exits) does not take live workers down with it.
    status.close()
    os.close(fd_in)
    os.close(fd_out)
    os.waitpid(pid, 0)
    return 0


def main() -> None:
    settings = json.loads(sys.argv[1])
    control = socket.socket(fileno=os.dup(0))
    devnull, _ = worker.quiet_stdio()
    worker.preload(settings)
    # Keepers are reaped by the kernel: the zygote never waits for anyone.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    control.send(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    if not settings.get("debug"):
        os.dup2(devnull, 2)
    room = socket.CMSG_SPACE(3 * array.array("i").itemsize)
    while True:
        try:
            message, ancillary, _, _ = control.recvmsg(65536, room)
        except OSError:
            return
        if not message:  # the parent closed us: exit once the workers already forked end
            try:
                while True:
                    os.wait()  # with SIGCHLD ignored: returns when no keeper is left
            except ChildProcessError:
                return
        fds: list[int] = []
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                got = array.array("i")
                got.frombytes(data[: len(data) - len(data) % got.itemsize])
                fds.extend(got)
        request = json.loads(message)
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            continue
        child = dict(settings, uid=int(request["uid"]))
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                # The zygote ignores SIGCHLD to leave reaping to the kernel; a keeper and
                # its PID 1 wait for their children and must get their statuses.
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                control.close()
                keep = set(fds) | {0, 1, 2}
                os.closerange(3, min(fds))
                for fd in range(min(fds), max(fds)):
                    if fd not in keep:
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                os.closerange(max(fds) + 1, 1 << 16)
                code = _keeper(child, fds)
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    main()
