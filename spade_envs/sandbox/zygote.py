"""Zygotes, seen from the parent: start one, have it fork a worker, watch and kill that worker.

A cold worker is a new interpreter that imports numpy, Gymnasium and this package before
it can serve (about 200 ms of CPU). A zygote (:mod:`~spade_envs.sandbox.zygote_server`)
pays that once and forks workers that already hold the imports; each then enters
namespaces, mounts, an unprivileged uid, resource limits and a seccomp filter of its own.
The zygote itself never runs environment code.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from typing import Any

from ..error import SandboxStartFailed
from .config import SandboxConfig
from .isolation import worker_environment, worker_uid, zygote_command

__all__ = ["ForkedProcess", "Zygote"]

_lineages = itertools.count(1)


class ForkedProcess:
    """A worker forked by a zygote: the part of ``subprocess.Popen`` a worker uses.

    Not our child, so its exit status comes from its keeper (over the status socket) and
    signals go through a pidfd (no PID reuse race).
    """

    def __init__(self, pid: int, status: socket.socket, stdin: int, stdout: int):
        self.pid = pid
        self._pidfd = os.pidfd_open(pid)
        # Threads poll, wait for and kill one worker at once (a call's own timeout and a web
        # request's deadline): the pidfd is closed exactly once, and no signal goes through
        # its number after (another thread's next descriptor could have it by then).
        self._lock = threading.Lock()
        self._status = status
        self.stdin = os.fdopen(stdin, "wb", buffering=0)
        self.stdout = os.fdopen(stdout, "rb", buffering=0)
        self.returncode: int | None = None
        self._owner = os.getpid()

    def _read_status(self, timeout: float) -> None:
        if os.getpid() != self._owner:
            # A copy in a forked process (multiprocessing, AsyncVectorEnv): the worker is
            # the parent's; here it counts as gone, and nothing is sent to it. Said before
            # any lock, which a parent's thread may have held when the copy was made.
            if self.returncode is None:
                self.returncode = -signal.SIGKILL
            return
        # The wait is outside the lock (it must not hold up a kill); the reading and
        # closing inside it.
        if self.returncode is None:
            try:
                select.select([self._status], [], [], max(0.0, timeout))
            except (ValueError, OSError):  # closed meanwhile by a thread that read it
                pass
        with self._lock:
            self._collect_status()

    def _collect_status(self) -> None:
        """Read the exit status if the keeper sent it (the caller holds ``_lock``)."""
        if self.returncode is not None:
            return
        ready, _, _ = select.select([self._status], [], [], 0)
        if not ready:
            return
        try:
            data = self._status.recv(4096)
        except OSError:
            data = b""
        try:
            code = json.loads(data)["exit"] if data else None
        except (ValueError, KeyError, TypeError):
            code = None
        # No status: the keeper itself was killed (its zygote stopped, or the machine).
        self.returncode = int(code) if isinstance(code, int) else -signal.SIGKILL
        self._status.close()
        os.close(self._pidfd)

    def poll(self) -> int | None:
        self._read_status(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._read_status(3600.0 if timeout is None else timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
        return self.returncode

    def kill(self) -> None:
        if os.getpid() != self._owner:
            return
        with self._lock:
            if self.returncode is None:
                try:
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
                except ProcessLookupError:
                    pass


class Zygote:
    """A started zygote process (under bubblewrap) that forks workers on request.

    Args:
        config: The sandbox configuration of every worker it forks.

    Raises:
        SandboxStartFailed: bubblewrap is not in effect, or the zygote did not start.
    """

    def __init__(self, config: SandboxConfig, *, debug: bool = False):
        self.config = config
        found = zygote_command(config, debug=debug)
        if found is None:
            raise SandboxStartFailed("a zygote runs only under bubblewrap, which is not in effect")
        command, self.layers = found
        #: Workers of one zygote share its address-space layout; the validator compares
        #: workers of different lineages (a cold worker has a lineage of its own).
        self.lineage = next(_lineages)
        self._lock = threading.Lock()
        self._owner = os.getpid()
        started = time.monotonic()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        startup_log = None if debug else tempfile.TemporaryFile()
        from .process import _spawner  # the thread that keeps --die-with-parent honest

        try:
            self._process = _spawner.popen(
                command,
                stdin=theirs,
                stdout=subprocess.DEVNULL,
                stderr=startup_log,
                env=worker_environment(config),
                cwd=None,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise SandboxStartFailed(f"the zygote could not be started: {exc}") from None
        finally:
            theirs.close()
        self._control = ours
        ours.settimeout(config.start_timeout)
        try:
            hello = json.loads(ours.recv(65536) or b"null")
        except (OSError, ValueError):
            hello = None
        if not isinstance(hello, dict) or hello.get("ready") is not True:
            said = ""
            if startup_log is not None:
                startup_log.seek(0)
                said = startup_log.read()[-2000:].decode("utf-8", "replace").strip()
            self.close()
            raise SandboxStartFailed(f"the zygote failed to start. It said: {said or 'nothing'}")
        if startup_log is not None:
            startup_log.close()
        ours.settimeout(None)
        self.start_seconds = time.monotonic() - started
        self.forks = 0

    @property
    def alive(self) -> bool:
        """Running, and ours (a copy inherited by a forked process is the parent's)."""
        return os.getpid() == self._owner and self._process.poll() is None

    def fork(self, deadline: float, uid: int | None = None) -> tuple[ForkedProcess, float]:
        """A new worker, isolated and ready to say hello on its answer pipe.

        Returns the worker's process and the seconds the fork took.

        Raises:
            SandboxStartFailed: The zygote is gone or the worker did not come up in time.
        """
        started = time.monotonic()
        to_worker = os.pipe()
        from_worker = os.pipe()
        status, status_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        status.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        settings = {"uid": worker_uid() if self.config.uid is None else self.config.uid}
        passed = [to_worker[0], from_worker[1], status_theirs.fileno()]
        try:
            with self._lock:
                self._control.sendmsg(
                    [json.dumps(settings).encode()],
                    [
                        (
                            socket.SOL_SOCKET,
                            socket.SCM_RIGHTS,
                            struct.pack(f"{len(passed)}i", *passed),
                        )
                    ],
                )
        except OSError as exc:
            for fd in (*to_worker, *from_worker):
                os.close(fd)
            status.close()
            raise SandboxStartFailed(f"the zygote is gone ({exc})") from None
        finally:
            status_theirs.close()
        os.close(to_worker[0])
        os.close(from_worker[1])
        self.forks += 1
        try:
            pid = _credentials_pid(status, deadline)
        except SandboxStartFailed:
            for fd in (to_worker[1], from_worker[0]):
                os.close(fd)
            status.close()
            raise
        process = ForkedProcess(pid, status, stdin=to_worker[1], stdout=from_worker[0])
        return process, time.monotonic() - started

    def close(self) -> None:
        """Stop forking. Workers already forked live on; the zygote exits after them."""
        try:
            self._control.close()
        except OSError:
            pass

    def kill(self) -> None:
        """Stop the zygote and every worker it forked, now."""
        self.close()
        if self._process.poll() is None:
            try:
                os.killpg(self._process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def _credentials_pid(status: socket.socket, deadline: float) -> int:
    """The worker's PID in our namespace, from the credentials it sent (or why it failed)."""
    room = socket.CMSG_SPACE(struct.calcsize("3i"))
    ready, _, _ = select.select([status], [], [], max(0.0, deadline - time.monotonic()))
    if not ready:
        raise SandboxStartFailed("a forked worker did not start in time")
    message, ancillary, _, _ = status.recvmsg(4096, room)
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and message == b"pid":
            return struct.unpack("3i", data[: struct.calcsize("3i")])[0]
    try:
        said: Any = json.loads(message).get("error", "")
    except (ValueError, AttributeError):
        said = ""
    raise SandboxStartFailed(f"a forked worker failed to start: {said or 'it said nothing'}")
