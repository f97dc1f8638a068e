"""Wall-clock deadlines for trusted environment code run in this process.

Sandboxed environments get their timeouts from the sandbox, which kills the worker.
Code the user chose to run in-process (``isolation="none"``) cannot be killed, but in
the main thread of a Unix process it can be interrupted: :func:`deadline` arms a
``SIGALRM`` timer whose handler raises :class:`~spade_envs.error.StepTimeout` at the next
Python bytecode. That ends loops and sleeps written in Python; it cannot end one long C
call (a huge ``pow``, a catastrophic regex), which is what the sandbox is for.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..error import StepTimeout

__all__ = ["deadline", "deadlines_available"]


def deadlines_available() -> bool:
    """Whether :func:`deadline` can enforce a deadline here (Unix, main thread)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def deadline(seconds: float, what: str = "environment call") -> Iterator[bool]:
    """Raise :class:`StepTimeout` in the body if it runs longer than ``seconds``.

    Args:
        seconds: The wall-clock budget (positive).
        what: Named in the error message.

    Yields:
        Whether the deadline is enforced (False outside the main thread or off Unix;
        the body then runs without one).

    An enclosing timer (another deadline, or a test runner's) is restored afterwards
    with the time it had left, so deadlines nest.
    """
    if seconds <= 0:
        raise ValueError(f"deadline seconds must be positive, got {seconds!r}")
    if not deadlines_available():
        yield False
        return

    def expire(signum: int, frame: Any) -> None:
        raise StepTimeout(
            f"{what} ran past its {seconds:g} s deadline (in-process code: it was interrupted, "
            "not killed; run untrusted code with isolation='sandbox')."
        )

    previous_handler = signal.signal(signal.SIGALRM, expire)
    outer_left, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield True
    finally:
        left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if outer_left:
            used = seconds - left
            # An outer timer that should already have fired fires almost at once.
            signal.setitimer(signal.ITIMER_REAL, max(outer_left - used, 1e-3), outer_interval)
