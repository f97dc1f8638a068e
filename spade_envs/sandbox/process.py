"""One sandbox worker process, seen from the parent: start, call, kill."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

from ..core.terminal import terminal_safe
from ..error import (
    EnvCodeError,
    SandboxBroken,
    SandboxCrashed,
    SandboxError,
    SandboxProtocolError,
    SandboxStartFailed,
    SandboxTimeout,
)
from .config import SandboxConfig
from .isolation import (
    WORKER_UID_BASE,
    hold_uid,
    worker_command,
    worker_directory,
    worker_environment,
)
from .wire import Channel, encode
from .zygote import ForkedProcess, Zygote

__all__ = ["Worker"]


class _Spawner:
    """Starts worker processes from a thread that lives as long as this process.

    bubblewrap's ``--die-with-parent`` (``PR_SET_PDEATHSIG``) fires when the *thread*
    that forked the worker ends, not the process. A worker started from a short-lived
    thread (a web request, a ``ThreadPoolExecutor`` job, a pool's refill thread at
    close) would be killed with it, in the middle of its episode. So every worker not
    started by the main thread is started by this one daemon thread instead.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Future[Any], list[str], dict[str, Any]]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, command: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        if threading.current_thread() is threading.main_thread():
            return subprocess.Popen(command, **kwargs)
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="spade-sandbox-spawner", daemon=True
                )
                self._thread.start()
        result: Future[subprocess.Popen[bytes]] = Future()
        self._jobs.put((result, command, kwargs))
        return result.result()

    def _serve(self) -> None:
        while True:
            result, command, kwargs = self._jobs.get()
            try:
                result.set_result(subprocess.Popen(command, **kwargs))
            except BaseException as exc:  # handed to the thread that asked
                result.set_exception(exc)


_spawner = _Spawner()
# A forked copy of this process (multiprocessing, AsyncVectorEnv) has no spawner thread,
# and a lock held at the fork would stay held there.
os.register_at_fork(after_in_child=_spawner._reset)


def _signal_name(returncode: int | None, *, via_bwrap: bool = False) -> str:
    """Describe how a worker ended; bubblewrap reports a child's signal N as 128 + N."""
    if returncode is not None and via_bwrap and 128 < returncode < 128 + 65:
        returncode = -(returncode - 128)
    if returncode is None or returncode >= 0:
        return f"exit code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    hints = {
        "SIGKILL": " (killed: memory limit, or the sandbox was stopped)",
        "SIGXCPU": " (CPU-time limit reached)",
        "SIGXFSZ": " (file-size limit reached)",
        "SIGSEGV": " (crashed: deep recursion or a bad native call)",
        "SIGSYS": " (a forbidden system call)",
    }
    return name + hints.get(name, "")


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _interpreter_pid(pid: int) -> int:
    """The deepest single descendant of ``pid``: the Python worker under bubblewrap's
    processes (bubblewrap forks once or twice; without it the worker is ``pid``)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return pid
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                parent = int(handle.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    while len(children.get(pid, [])) == 1:
        pid = children[pid][0]
    return pid


def _startup_advice(startup_log: Any) -> str:
    """What the worker printed before it died, and what to do."""
    text = ""
    if startup_log is not None:
        try:
            startup_log.seek(0)
            text = startup_log.read()[-3000:].decode("utf-8", "replace").strip()
        except OSError:
            text = ""
    said = f" The worker said:\n{text}\n" if text else " The worker printed nothing."
    return (
        said + " Run `spade-envs sandbox-info` to see which isolation layers work here; "
        "spade_envs.sandbox.Worker(config, debug=True) starts one with its output on "
        "your terminal."
    )


class Worker:
    """A started worker process and the pipes to it.

    A worker hosts at most one environment and is never reused for another: code
    that ran in it may have changed anything inside the process.
    """

    def __init__(
        self,
        config: SandboxConfig | None = None,
        *,
        debug: bool = False,
        zygote: Zygote | None = None,
    ):
        self.config = config or SandboxConfig()
        #: Wall-clock limit of a call that names none (the config's, unless changed).
        self.call_timeout = self.config.call_timeout
        self.broken_reason = ""
        #: The process that started this worker; a forked copy of it leaves the worker be.
        self._owner = os.getpid()
        self._pending: tuple[str, float, float] | None = None
        self._tree_leaf: int | None = None
        # The channel reads and writes raw descriptor numbers. Closed while another
        # thread still used them (a web request's deadline killing the worker of a call
        # running in an executor thread), a number could be reused by the next socket the
        # process opens, and the call would read another client's request or write into
        # its connection. So the pipes are closed by whoever leaves the channel last.
        self._io_lock = threading.Lock()
        self._io_users = 0
        self._pipes_closed = False
        self._receiving = False
        self._stopping = False
        started = time.monotonic()
        if zygote is not None:
            self.layers = dict(zygote.layers)
            #: Workers of one lineage (one zygote) share an address-space layout.
            self.lineage: object = zygote.lineage
            self._process: Any = zygote.fork(started + self.config.start_timeout)[0]
            self._tree_leaf = self._process.pid
            self._hello(started, None)
            return
        self.lineage = object()
        command, self.layers = worker_command(self.config, debug=debug)
        cwd = worker_directory(self.layers)
        # The worker writes to this file only until it is ready (then stderr goes to
        # /dev/null), so a worker that cannot start can say why.
        startup_log = None if debug else tempfile.TemporaryFile()
        try:
            self._process = _spawner.popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=startup_log,
                env=worker_environment(self.config),
                cwd=cwd,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            if startup_log is not None:
                startup_log.close()
            raise SandboxStartFailed(
                f"the sandbox worker could not be started ({command[0]}): {exc}"
            ) from None
        self._hello(started, startup_log)

    def _hello(self, started: float, startup_log: Any) -> None:
        """Wait for the worker's start-up message; record the layers it reports."""
        os.set_blocking(self._process.stdin.fileno(), False)
        self._channel = Channel(self._process.stdout.fileno(), self._process.stdin.fileno())
        try:
            with self._using_pipes():
                hello = self._channel.receive(
                    deadline=started + self.config.start_timeout,
                    max_bytes=65536,
                    what="worker start-up",
                )
        except SandboxError as exc:
            self.kill()
            raise SandboxStartFailed(
                f"the sandbox worker failed to start: {exc}.{_startup_advice(startup_log)}"
            ) from None
        finally:
            if startup_log is not None:
                startup_log.close()
        if not isinstance(hello, dict) or hello.get("ready") is not True:
            self.kill()
            raise SandboxProtocolError(
                f"unexpected start-up message from the worker: {hello!r:.200}"
            )
        layers = hello.get("layers")
        self.layers = {**self.layers, **(layers if isinstance(layers, dict) else {})}
        if isinstance(self.layers.get("uid"), int) and self.layers["uid"] >= WORKER_UID_BASE:
            hold_uid(self.layers["uid"], self)  # said before the environment's code loads
        self.start_seconds = time.monotonic() - started

    def cpu_seconds(self) -> float | None:
        """CPU time the worker's interpreter has used so far, read from ``/proc``.

        Read by the parent, so the environment cannot forge it. None where ``/proc``
        cannot tell (not Linux, or the process is gone).
        """
        if self._tree_leaf is None:
            self._tree_leaf = _interpreter_pid(self._process.pid)
        try:
            with open(f"/proc/{self._tree_leaf}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            return None
        # fields[11] and [12] are utime and stime (fields 14 and 15 of proc(5)).
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS

    @property
    def _via_bwrap(self) -> bool:
        """Is the process we watch bubblewrap (which reports signal N as 128 + N)?"""
        return self.layers["bubblewrap"] and not isinstance(self._process, ForkedProcess)

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return not self.broken_reason and self._process.poll() is None

    @property
    def reaped(self) -> bool:
        """The process was waited for. Read without polling it (so safe from a thread
        other than the one using the worker); a worker that died unnoticed reads False."""
        return self._process.returncode is not None

    def call(self, op: str, timeout: float | None = None, **args: Any) -> Any:
        """Run ``op`` in the worker and return its result.

        Raises:
            SandboxBroken: The worker was killed by an earlier failure.
            SandboxTimeout: No answer within ``timeout`` seconds (the worker is killed).
            SandboxCrashed: The worker died during the call.
            SandboxProtocolError: The answer was too large or malformed (worker killed).
            EnvCodeError: The environment's code raised; the worker stays usable.
        """
        self.send(op, timeout, **args)
        return self.receive()

    def send(self, op: str, timeout: float | None = None, **args: Any) -> None:
        """Start ``op`` without waiting for it; :meth:`receive` collects the answer.

        Sending to many workers before receiving from any lets them run in parallel.
        """
        if self.broken_reason:
            raise SandboxBroken(
                f"this sandboxed environment cannot be used any more: {self.broken_reason}. "
                "Create a new one."
            )
        timeout = self.call_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        # Checked and taken at once: a second thread (a web session closed by its reaper
        # while a request steps it) must be refused, never share the channel's buffer.
        with self._io_lock:
            if self._pending is not None:
                raise SandboxError(f"{self._pending[0]}() is still waiting for its answer")
            self._pending = (op, deadline, timeout)
        with self._translate_failures(), self._using_pipes():
            self._channel.send_bytes(
                encode({"op": op, "args": args}), deadline=deadline, what=f"{op}()"
            )

    def receive(self) -> Any:
        """The answer to the operation started by :meth:`send` (same errors as :meth:`call`).

        Any thread may collect it (``step_async`` in one, ``step_wait`` in another), one
        at a time: a second reader would split the answer's bytes with the first.
        """
        with self._io_lock:
            pending = self._pending
            if pending is None:
                raise SandboxError("receive() without a pending send()")
            if self._receiving:
                raise SandboxError(f"another thread is receiving the answer to {pending[0]}()")
            self._receiving = True
        op, deadline, _ = pending
        try:
            with self._translate_failures(), self._using_pipes():
                answer = self._channel.receive(
                    deadline=deadline, max_bytes=self.config.max_message_bytes, what=f"{op}()"
                )
            self._pending = None
        finally:
            with self._io_lock:
                self._receiving = False
        if self._channel.unread:
            # One request, one answer: bytes after it would be taken as the answer to the
            # next call (a forged result), so the worker that sent them is not trusted.
            self._fail("it sent more than one answer")
            raise SandboxProtocolError(f"the worker sent more than its answer to {op}()")
        if not isinstance(answer, dict) or "ok" not in answer:
            self._fail("malformed answer")
            raise SandboxProtocolError(f"malformed answer to {op}(): {answer!r:.200}")
        if answer["ok"] is True:
            return answer.get("result")
        error = answer.get("error") if isinstance(answer.get("error"), dict) else {}
        exc_type = terminal_safe(str(error.get("type", "Error")), one_line=True, limit=100)
        message = terminal_safe(str(error.get("message", "")), limit=4000)
        raise EnvCodeError(
            f"{op}() raised {exc_type}: {message}",
            exc_type=exc_type,
            remote_traceback=terminal_safe(str(error.get("traceback", "")), limit=4000),
        )

    @contextlib.contextmanager
    def _using_pipes(self) -> Iterator[None]:
        """Hold the pipes open while this thread reads or writes them (see ``_io_lock``).

        Raises:
            SandboxCrashed: They were closed already (the worker was killed).
        """
        with self._io_lock:
            if self._pipes_closed:
                raise SandboxCrashed("the sandbox worker was stopped")
            self._io_users += 1
        try:
            yield
        finally:
            with self._io_lock:
                self._io_users -= 1
                last = self._io_users == 0
            if last and self._stopping:
                self._close_pipes()

    def _close_pipes(self) -> None:
        """Close the pipes now, or leave them to the thread still using them, which
        closes them as it leaves (its read ends at the dead worker's end of file)."""
        with self._io_lock:
            if self._io_users or self._pipes_closed:
                return
            self._pipes_closed = True
        for stream in (self._process.stdin, self._process.stdout):
            try:
                stream.close()
            except OSError:
                pass

    @contextlib.contextmanager
    def _translate_failures(self) -> Iterator[None]:
        """Kill the worker on any transport failure and say what happened."""
        op, _, timeout = self._pending
        try:
            yield
        except SandboxTimeout:
            self._fail(f"{op}() did not finish within {timeout:g} s")
            raise SandboxTimeout(
                f"{op}() did not finish within {timeout:g} s; the sandbox worker was killed"
            ) from None
        except SandboxCrashed:
            try:  # a worker that closed its pipe may still be alive: never wait for long
                self._process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.kill()
            how = _signal_name(self._process.returncode, via_bwrap=self._via_bwrap)
            self._fail(f"the worker died during {op}() ({how})")
            raise SandboxCrashed(f"the sandbox worker died during {op}(): {how}") from None
        except SandboxProtocolError as exc:
            self._fail(str(exc))
            raise

    def _fail(self, reason: str) -> None:
        self.broken_reason = reason
        self._pending = None
        self.kill()

    def kill(self) -> None:
        """Stop the worker now (SIGKILL); safe to call more than once. In a forked copy of
        the process that started it, nothing: the worker is the parent's."""
        if os.getpid() != self._owner:
            return
        self._stopping = True
        if self._process.poll() is None:
            if not isinstance(self._process, ForkedProcess):  # bubblewrap and its children
                try:
                    os.killpg(self._process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                self._process.kill()
            except ProcessLookupError:
                pass
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._close_pipes()

    def close(self) -> None:
        """Ask the environment to close, then stop the worker."""
        if self.alive and self._pending is None:  # another thread's call: no waiting behind it
            try:
                self.call("close", timeout=2.0)
            except SandboxError:  # refused too if a call started meanwhile
                pass
        self.broken_reason = self.broken_reason or "closed"
        self.kill()

    def __del__(self) -> None:
        try:
            self.kill()
        except Exception:
            pass
