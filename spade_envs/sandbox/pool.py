"""A warm pool of started workers, so opening a sandboxed env skips Python start-up.

Workers are single-use: a worker that hosted one environment is killed when the
environment closes. The pool keeps ``size`` fresh workers ready, starting new ones
in a background thread, and compiles each module once, here in the parent, so every
environment of it loads the same code object.

Under bubblewrap (``SandboxConfig.zygote``) workers are forked from two zygotes
(:mod:`~spade_envs.sandbox.zygote`) instead of started cold: a fork costs a fraction of
an interpreter's start-up. Two, so that :meth:`WorkerPool.acquire` can hand out workers
of different lineages (address-space layouts) when asked, as the validator asks for its
second worker.
"""

from __future__ import annotations

import atexit
import base64
import collections
import hashlib
import logging
import marshal
import os
import threading
import weakref
from collections.abc import Iterable

from ..error import EnvCodeError, SandboxError
from .config import SandboxConfig
from .isolation import zygote_command
from .process import Worker
from .zygote import Zygote

__all__ = ["MODULE_FILENAME", "ZYGOTES", "WorkerPool", "default_pool"]

log = logging.getLogger("spade_envs.sandbox")

#: The ``__file__`` and code file name of every environment module in a worker.
MODULE_FILENAME = "<spade-env>"
#: Zygotes per pool: two lineages, so a worker can always be had from another one.
ZYGOTES = 2


class WorkerPool:
    """Keeps ``size`` started workers ready for :func:`~spade_envs.sandbox.open_env`.

    Args:
        config: Isolation and limits of every worker in this pool.
        size: How many idle workers to keep warm (0 disables warming).
    """

    def __init__(self, config: SandboxConfig | None = None, size: int = 2):
        if size < 0:
            raise SandboxError(f"WorkerPool size must be 0 or more, got {size}.")
        self.config = config or SandboxConfig()
        self.size = size
        self._closed = False
        self._code: dict[str, str] = {}
        self.cold_starts = 0
        self.warm_starts = 0
        #: Workers forked from a zygote (a subset of the warm and cold starts).
        self.forked_starts = 0
        #: Why workers start cold although zygotes were asked for ("" while they work).
        self.zygote_error = "" if self.config.zygote else "switched off (SandboxConfig.zygote)"
        #: Zygotes started, and the seconds their start-up took (paid once, not per worker).
        self.zygote_starts = 0
        self.zygote_start_seconds = 0.0
        self._next_zygote = 0
        self._own_process_state()
        _live_pools.add(self)
        self._start_refill()

    def _start_refill(self) -> None:
        """Start the thread that keeps ``size`` workers warm (once per process)."""
        if self.size and self._thread is None and not self._closed:
            self._thread = threading.Thread(
                target=self._refill, name="spade-sandbox-pool", daemon=True
            )
            self._thread.start()

    def _own_process_state(self) -> None:
        """The state that belongs to one process: locks, ready workers, zygotes, thread.

        Built at creation, and again in a forked copy of the process: the fork copied the
        pool but not its refill thread, and a lock that thread held at that moment
        (starting a zygote takes half a second) would never be released: the child's
        first ``acquire`` hung. The parent's workers and zygotes stay the parent's; the
        copy starts its own, and its refill thread with the first ``acquire``.
        """
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._zygote_lock = threading.Lock()
        self._ready: collections.deque[Worker] = collections.deque()
        self._zygotes: list[Zygote] = []
        self._thread: threading.Thread | None = None

    # ----- zygotes ---------------------------------------------------------------------------
    def _zygote(self, avoid: set[object]) -> Zygote | None:
        """A live zygote whose lineage is not in ``avoid`` (started if need be), or None."""
        if self.zygote_error:
            return None
        if zygote_command(self.config) is None:
            self.zygote_error = "no bubblewrap (a zygote runs only under it)"
            return None
        with self._zygote_lock:
            if self._closed:
                return None
            self._zygotes = [z for z in self._zygotes if z.alive]
            allowed = [z for z in self._zygotes if z.lineage not in avoid]
            if not allowed and len(self._zygotes) < ZYGOTES:
                # Started when first needed: a pool that opens one environment pays for
                # one zygote, as it would for one cold worker.
                try:
                    self._zygotes.append(Zygote(self.config))
                    self.zygote_starts += 1
                    self.zygote_start_seconds += self._zygotes[-1].start_seconds
                except SandboxError as exc:
                    self.zygote_error = str(exc)
                    log.warning("sandbox workers will start cold (slower): %s", exc)
                    return None
                allowed = self._zygotes[-1:]
            if not allowed:
                return None
            self._next_zygote += 1
            return allowed[self._next_zygote % len(allowed)]

    def _start(self, avoid: set[object]) -> Worker:
        """A new worker: forked from a zygote outside ``avoid``, else started cold."""
        zygote = self._zygote(avoid)
        if zygote is not None:
            try:
                worker = Worker(self.config, zygote=zygote)
            except SandboxError:
                if zygote.alive:
                    raise
                # The zygote died (the machine killed it): start cold this once.
            else:
                self.forked_starts += 1
                return worker
        return Worker(self.config)

    # ----- workers ---------------------------------------------------------------------------
    def _refill(self) -> None:
        while True:
            with self._wake:
                while not self._closed and len(self._ready) >= self.size:
                    self._wake.wait()
                if self._closed:
                    return
            try:
                worker = self._start(set())
            except SandboxError:
                with self._wake:
                    self._wake.wait(timeout=1.0)  # do not spin if workers cannot start
                continue
            with self._wake:
                if self._closed:
                    worker.kill()
                    return
                self._ready.append(worker)
                self._wake.notify_all()

    def acquire(self, distinct_from: Iterable[Worker] = ()) -> Worker:
        """A started worker: a warm one when available, else one started now.

        Args:
            distinct_from: Workers the new one must not share a lineage with (a zygote's
                workers share its address-space layout, so ``id()`` values can repeat
                among them; a cold worker is a lineage of its own).
        """
        avoid = {worker.lineage for worker in distinct_from}
        with self._wake:
            self._start_refill()
            for worker in list(self._ready):
                if worker.lineage in avoid:
                    continue
                self._ready.remove(worker)
                self._wake.notify_all()
                if worker.alive:
                    self.warm_starts += 1
                    return worker
                worker.kill()
            if self._closed:
                raise SandboxError("this WorkerPool is closed; create a new one.")
        self.cold_starts += 1
        return self._start(avoid)

    def wait_ready(self, timeout: float = 30.0) -> bool:
        """Block until the pool holds ``size`` ready workers (for benchmarks and tests)."""
        with self._wake:
            self._start_refill()
            return self._wake.wait_for(
                lambda: len(self._ready) >= self.size or self._closed, timeout
            )

    def compiled(self, source: str) -> str:
        """The source compiled here, in the trusted parent, marshalled for a worker.

        Compiled once per source (keyed by its SHA-256). Code is never taken back from a
        worker: one could have patched ``marshal`` and poisoned every later load.

        Raises:
            EnvCodeError: The source does not compile (a syntax error, too deeply nested,
                or larger than ``config.max_source_chars``).
        """
        digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            code = self._code.get(digest)
        if code is not None:
            return code
        if len(source) > self.config.max_source_chars:
            raise EnvCodeError(
                f"load() refused a source of {len(source)} characters, over the limit of "
                f"{self.config.max_source_chars}",
                exc_type="SourceTooLarge",
            )
        try:
            # One file name for every environment: a module must not learn from its own
            # name whether a validator or a play loaded it (the caller's name is the
            # parent's, for messages).
            compiled = compile(source, MODULE_FILENAME, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
            raise EnvCodeError(
                f"load() raised {type(exc).__name__}: {str(exc)[:300]}",
                exc_type=type(exc).__name__,
            ) from None
        code = base64.b64encode(marshal.dumps(compiled)).decode("ascii")
        with self._lock:
            if len(self._code) > 512:
                self._code.pop(next(iter(self._code)))
            self._code[digest] = code
        return code

    def close(self) -> None:
        """Stop the idle workers, the refill thread and the zygotes (workers in use live on)."""
        with self._wake:
            self._closed = True
            workers = list(self._ready)
            self._ready.clear()
            self._wake.notify_all()
        for worker in workers:
            worker.kill()
        with self._zygote_lock:
            zygotes, self._zygotes = self._zygotes, []
        for zygote in zygotes:
            zygote.close()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_live_pools: weakref.WeakSet[WorkerPool] = weakref.WeakSet()
_default: WorkerPool | None = None
_default_lock = threading.Lock()


def default_pool() -> WorkerPool:
    """The process-wide pool used when no pool is given (2 warm workers, default limits)."""
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            _default = WorkerPool(SandboxConfig(), size=2)
        return _default


@atexit.register
def _close_all() -> None:
    for pool in list(_live_pools):
        pool.close()


def _after_fork_in_child() -> None:
    global _default_lock
    _default_lock = threading.Lock()
    for pool in list(_live_pools):
        pool._own_process_state()


# A forked process (multiprocessing, Gymnasium's AsyncVectorEnv) opens environments too.
os.register_at_fork(after_in_child=_after_fork_in_child)
