"""Progress of a long phase (plays, an evaluation, a cold start's steps), shown as it goes.

On a terminal, one line is redrawn in place (``[iter 1/2] play: 12/48 episodes, 40 s``) at
most a few times a second and cleared when the phase ends, so the phase's own summary line
follows on a clean screen. Anywhere else (a log file, CI, a pipe) nothing is redrawn: a
plain line is written at most once per ``interval`` seconds (a minute by default), so a
long phase shows it is alive without a line per item. With ``heartbeat``, the line is also
shown when no item finished for that long (batched plays finish together, near the end:
a play phase was silent for two minutes). Only the standard library is used.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["Progress"]


class Progress:
    """Counts the items of one phase and shows how far it is.

    Args:
        label: What the phase is (``"[iter 1/2] play"``).
        total: How many items it has (None: unknown).
        unit: What an item is, for the line (``"episodes"``).
        stream: Where to write (default: standard error).
        interval: Seconds between lines when ``stream`` is not a terminal; 0 shows
            nothing anywhere (a rank other than 0, a quiet run).
        clock: Seconds, monotonic (tests pass their own).
        heartbeat: Also show the line when no item finished for an interval (a thread of
            its own; on a terminal, the elapsed seconds move once a second).

    Use it as a context manager, or call :meth:`close`; :meth:`advance` is thread-safe and
    can be handed to code that calls back once per finished item (``progress=bar.tick``).
    """

    #: Seconds between redraws on a terminal.
    REDRAW = 0.2

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        unit: str = "",
        stream: TextIO | None = None,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        heartbeat: bool = False,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.count = 0
        self._stream = stream if stream is not None else sys.stderr
        isatty = getattr(self._stream, "isatty", None)
        self._live = bool(isatty()) if callable(isatty) else False
        self._interval = 0.0 if not interval else self.REDRAW if self._live else interval
        self._clock = clock
        self._started = clock()
        self._shown = self._started  # nothing is shown before the first interval passes
        self._drawn = 0  # width of the line on the terminal
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._beats: threading.Thread | None = None
        if heartbeat and self._interval:
            self._beats = threading.Thread(
                target=self._beat, args=(max(self._interval, 1.0),), daemon=True
            )
            self._beats.start()

    def line(self) -> str:
        """How far the phase is, as one line."""
        done = f"{self.count}/{self.total}" if self.total is not None else str(self.count)
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.label}: {done}{unit}, {self._clock() - self._started:.0f} s"

    def advance(self, items: int = 1) -> None:
        """Count ``items`` more finished, and show the line when it is time."""
        with self._lock:
            self.count += items
            now = self._clock()
            if self._interval and now - self._shown >= self._interval:
                self._shown = now
                self._show()

    def _beat(self, every: float) -> None:
        while not self._closed.wait(every):
            with self._lock:
                now = self._clock()
                if self._interval and now - self._shown >= min(every, self._interval):
                    self._shown = now
                    self._show()

    def tick(self, *_: Any) -> None:
        """One more item finished (takes and ignores a callback's arguments)."""
        self.advance()

    def _show(self) -> None:
        text = self.line()
        try:
            if self._live:
                pad = " " * max(0, self._drawn - len(text))
                self._stream.write("\r" + text + pad)
                self._drawn = len(text)
            else:
                self._stream.write(text + "\n")
            self._stream.flush()
        except (OSError, ValueError):
            self._interval = 0  # a closed stream: stop showing, never fail the phase

    def close(self) -> None:
        """End the phase: clear the redrawn line (a terminal) so a summary can follow."""
        self._closed.set()
        if self._beats is not None and self._beats is not threading.current_thread():
            self._beats.join(5)
        with self._lock:
            if self._live and self._drawn:
                try:
                    self._stream.write("\r" + " " * self._drawn + "\r")
                    self._stream.flush()
                except (OSError, ValueError):
                    pass
                self._drawn = 0
            self._interval = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()
