"""A warm pool of started workers, so opening a sandboxed env skips Python start-up.

Workers are single-use: a worker that hosted one environment is killed when the
environment closes. The pool keeps ``size`` fresh workers ready, starting new ones
in a background thread, and remembers compiled module code by source hash so a
module is compiled once and every later environment of it loads the code object.
"""

from __future__ import annotations

import atexit
import collections
import threading
import weakref

from ..error import SandboxError
from .config import SandboxConfig
from .process import Worker

__all__ = ["WorkerPool", "default_pool"]


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
        self._ready: collections.deque[Worker] = collections.deque()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self._code: dict[str, str] = {}
        self.cold_starts = 0
        self.warm_starts = 0
        self._thread: threading.Thread | None = None
        _live_pools.add(self)
        if size:
            self._thread = threading.Thread(
                target=self._refill, name="spade-sandbox-pool", daemon=True
            )
            self._thread.start()

    def _refill(self) -> None:
        while True:
            with self._wake:
                while not self._closed and len(self._ready) >= self.size:
                    self._wake.wait()
                if self._closed:
                    return
            try:
                worker = Worker(self.config)
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

    def acquire(self) -> Worker:
        """A started worker: a warm one when available, else one started now."""
        with self._wake:
            while self._ready:
                worker = self._ready.popleft()
                self._wake.notify_all()
                if worker.alive:
                    self.warm_starts += 1
                    return worker
                worker.kill()
            if self._closed:
                raise SandboxError("this WorkerPool is closed; create a new one.")
        self.cold_starts += 1
        return Worker(self.config)

    def wait_ready(self, timeout: float = 30.0) -> bool:
        """Block until the pool holds ``size`` ready workers (for benchmarks and tests)."""
        with self._wake:
            return self._wake.wait_for(
                lambda: len(self._ready) >= self.size or self._closed, timeout
            )

    def compiled(self, digest: str) -> str | None:
        """Marshalled code of a module source already compiled in this pool, if any."""
        return self._code.get(digest)

    def remember(self, digest: str, code: str) -> None:
        if len(self._code) > 512:
            self._code.pop(next(iter(self._code)))
        self._code[digest] = code

    def close(self) -> None:
        """Stop the idle workers and the refill thread."""
        with self._wake:
            self._closed = True
            workers = list(self._ready)
            self._ready.clear()
            self._wake.notify_all()
        for worker in workers:
            worker.kill()

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
