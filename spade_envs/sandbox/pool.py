"""A warm pool of started workers, so opening a sandboxed env skips Python start-up.

Workers are single-use: a worker that hosted one environment is killed when the
environment closes. The pool keeps ``size`` fresh workers ready, starting new ones
in a background thread, and compiles each module once, here in the parent, so every
environment of it loads the same code object.
"""

from __future__ import annotations

import atexit
import base64
import collections
import hashlib
import marshal
import threading
import weakref

from ..error import EnvCodeError, SandboxError
from .config import SandboxConfig
from .process import Worker

__all__ = ["MODULE_FILENAME", "WorkerPool", "default_pool"]

#: The ``__file__`` and code file name of every environment module in a worker.
MODULE_FILENAME = "<spade-env>"


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
