"""The virtual clock a sandbox worker shows environment code.

An environment that reads the clock can tell a validator (which answers at once) from a
model (which takes seconds per reply), or a validation date from a later play. In a
worker, every Python-level clock therefore reads a value that depends only on the
episode and on how many times a clock was read since it began:

- ``time.time``/``monotonic``/``perf_counter``/``process_time``/``thread_time`` (and
  their ``_ns`` forms), ``clock_gettime``, ``localtime``/``gmtime``/``ctime``/
  ``asctime``/``strftime`` without an explicit time, and ``os.times``;
- ``datetime.datetime.now``/``utcnow``/``today`` and ``datetime.date.today``: the
  worker's ``datetime`` module is replaced by the standard library's pure-Python
  implementation, whose classes read ``time.time()`` (the C accelerator's classes read
  the system clock directly and are removed from the interpreter's module table);
- ``time.sleep(s)`` returns at once and moves the clock on by ``s``: a sleeping
  environment cannot stall its caller, and one that waits for time to pass sees it pass.

Every reset restarts the clock at :data:`EPOCH`, so the same episode reads the same
times under the validator, in a rollout, in a web session and in a replay audit.

An audit hook (which Python code cannot remove) refuses opening ``/proc``, ``/sys`` and
``/dev/rtc`` files, which show uptime and boot time.

What can still observe real time (``docs/architecture.md``, "Play looks like
validation"): importing ``time`` or ``_datetime`` afresh after deleting them from
``sys.modules`` (a cached extension or built-in module is re-created without an audit
event, with its original functions), file timestamps through ``os.stat``
(``/proc/self``'s own is the worker's start), CPU time through ``resource.getrusage``,
and a reference to an original clock function that a preloaded module keeps somewhere
other than a module attribute. Each needs ``sys``, ``os`` or ``resource``, which the
static checks refuse by name and which environment code reaches only through the
attributes of an allowed module (``dataclasses.sys``). A play whose rewards depend on
elapsed time is still caught by the replay audit, which replays it at once in a fresh
worker under this clock; a date fuse that reads the real date this way and fired before
validation and play alike is what neither the clock nor the audit can see.
"""

from __future__ import annotations

import os
import sys
import time
import types
from typing import Any

__all__ = ["EPOCH", "TICK", "VirtualClock", "install"]

#: What every episode's clock starts at: 2026-01-01T00:00:00Z.
EPOCH = 1_767_225_600.0
#: How far one clock read moves the clock (1 ms): time passes, but only as code reads it.
TICK = 0.001
#: Where monotonic clocks (``monotonic``, ``perf_counter``, …) start.
_MONOTONIC_START = 1000.0

_CLOCK_NAMES = (
    "time",
    "time_ns",
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "process_time",
    "process_time_ns",
    "thread_time",
    "thread_time_ns",
    "clock_gettime",
    "clock_gettime_ns",
    "localtime",
    "gmtime",
    "ctime",
    "asctime",
    "strftime",
    "sleep",
)


class VirtualClock:
    """A clock that moves only when it is read (or slept on)."""

    def __init__(self) -> None:
        self.reads = 0
        self.slept = 0.0

    def restart(self) -> None:
        """A new episode: the clock starts again at :data:`EPOCH`."""
        self.reads = 0
        self.slept = 0.0

    def elapsed(self) -> float:
        """Seconds since the episode began; each read moves the clock by :data:`TICK`."""
        self.reads += 1
        return self.reads * TICK + self.slept

    def wall(self) -> float:
        return EPOCH + self.elapsed()

    def monotonic(self) -> float:
        return _MONOTONIC_START + self.elapsed()

    def sleep(self, seconds: Any) -> None:
        seconds = float(seconds)  # TypeError for what time.sleep refuses
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        if seconds == seconds and seconds != float("inf"):
            self.slept += seconds


def _virtual_time_functions(clock: VirtualClock, real: dict[str, Any]) -> dict[str, Any]:
    """The replacements of the ``time`` module's clock functions."""

    def ns(seconds: float) -> int:
        return round(seconds * 1e9)

    def clock_gettime(clk_id: int) -> float:
        if clk_id == getattr(time, "CLOCK_REALTIME", 0):
            return clock.wall()
        return clock.monotonic()

    def with_now(name: str) -> Any:
        original = real[name]

        def call(*args: Any) -> Any:
            if not args or args[0] is None:
                return original(clock.wall())
            return original(*args)

        call.__name__ = name
        return call

    def asctime(*args: Any) -> str:
        if not args:
            return real["asctime"](real["localtime"](clock.wall()))
        return real["asctime"](*args)

    def strftime(fmt: str, *args: Any) -> str:
        if not args:
            return real["strftime"](fmt, real["localtime"](clock.wall()))
        return real["strftime"](fmt, *args)

    functions: dict[str, Any] = {
        "time": clock.wall,
        "time_ns": lambda: ns(clock.wall()),
        "monotonic": clock.monotonic,
        "monotonic_ns": lambda: ns(clock.monotonic()),
        "perf_counter": clock.monotonic,
        "perf_counter_ns": lambda: ns(clock.monotonic()),
        "process_time": clock.elapsed,
        "process_time_ns": lambda: ns(clock.elapsed()),
        "thread_time": clock.elapsed,
        "thread_time_ns": lambda: ns(clock.elapsed()),
        "clock_gettime": clock_gettime,
        "clock_gettime_ns": lambda clk_id: ns(clock_gettime(clk_id)),
        "localtime": with_now("localtime"),
        "gmtime": with_now("gmtime"),
        "ctime": with_now("ctime"),
        "asctime": asctime,
        "strftime": strftime,
        "sleep": clock.sleep,
    }
    return {name: fn for name, fn in functions.items() if name in real}


def _pure_datetime() -> types.ModuleType:
    """The standard library's pure-Python ``datetime`` (it reads ``time.time()``)."""
    try:
        import _pydatetime  # Python 3.12 and later

        return _pydatetime
    except ImportError:
        pass
    import importlib.util

    saved = sys.modules.get("_datetime")
    spec = importlib.util.find_spec("datetime")
    if spec is None or spec.loader is None:
        raise ImportError("the standard library's datetime module cannot be found")
    module = importlib.util.module_from_spec(spec)
    sys.modules["_datetime"] = None  # type: ignore[assignment]  # makes its accelerator import fail
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is not None:
            sys.modules["_datetime"] = saved
        else:
            sys.modules.pop("_datetime", None)
    return module


def _replace_references(replacements: dict[int, Any]) -> None:
    """Point every module attribute that holds a replaced object at its replacement
    (``threading._time``, ``calendar.datetime``, …): the originals stay reachable only
    through what is not a module attribute."""
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            replacement = replacements.get(id(value))
            if replacement is not None and replacement is not value:
                try:
                    namespace[key] = replacement
                except Exception:  # a read-only namespace keeps its reference
                    pass


def install() -> VirtualClock:
    """Install the virtual clock in this process (a sandbox worker, before env code).

    Returns:
        The clock; the worker restarts it at every reset.
    """
    clock = VirtualClock()
    real = {name: getattr(time, name) for name in _CLOCK_NAMES if hasattr(time, name)}
    virtual = _virtual_time_functions(clock, real)
    replacements: dict[int, Any] = {}
    for name, fn in virtual.items():
        replacements[id(real[name])] = fn
        setattr(time, name, fn)
    real_times = os.times
    virtual_times = _virtual_os_times(clock, real_times)
    os.times = virtual_times  # type: ignore[assignment]
    replacements[id(real_times)] = virtual_times

    pure = _pure_datetime()
    accelerated = sys.modules.get("datetime")
    if accelerated is not None and accelerated is not pure:
        replacements[id(accelerated)] = pure
        for name in ("date", "datetime", "time", "timedelta", "timezone", "tzinfo"):
            old, new = getattr(accelerated, name, None), getattr(pure, name, None)
            if old is not None and new is not None:
                replacements[id(old)] = new
    sys.modules["datetime"] = pure
    # The C classes read the system clock themselves: they leave the module table.
    sys.modules["_datetime"] = None  # type: ignore[assignment]
    _replace_references(replacements)
    sys.addaudithook(_refuse_clock_files)
    return clock


#: Files that show real time (uptime, boot time, the clock device).
_CLOCK_FILES = ("/proc/", "/sys/", "/dev/rtc")


def _refuse_clock_files(event: str, args: tuple[Any, ...]) -> None:
    """An audit hook (Python code cannot remove one): refuses opening the files that
    show real time."""
    if event == "open" and args and isinstance(args[0], (str, bytes)):
        path = args[0].decode("utf-8", "replace") if isinstance(args[0], bytes) else args[0]
        if path.startswith(_CLOCK_FILES):
            raise PermissionError(f"the sandbox does not let environment code open {path}")


def _virtual_os_times(clock: VirtualClock, real_times: Any) -> Any:
    def times() -> Any:
        elapsed = clock.elapsed()
        return os.times_result((elapsed, 0.0, 0.0, 0.0, _MONOTONIC_START + elapsed))

    del real_times
    return times
