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

No reference to an original clock function survives the install (the calendar
functions are computed in Python, in UTC), and an audit hook (which Python code cannot
remove) refuses opening ``/proc``, ``/sys`` and ``/dev/rtc`` however the path is spelled.

What can still observe real time (``docs/architecture.md``, "The runtime"): the C
``date``/``datetime`` types (static types, still listed by ``object.__subclasses__()``),
a fresh import of ``time`` or ``_datetime`` after deleting them from ``sys.modules`` (a
cached module comes back with no audit event), file timestamps (``os.stat`` of a file the
code writes in its private ``/tmp``) and CPU time (``resource.getrusage``). Each needs
names the static checks refuse, reached through an allowed module's attributes
(``dataclasses.sys``) or ``getattr`` with a computed name. The audits are the backstop: a
latency cheat diverges when replayed at once in a fresh worker, and a date fuse lets
wrong answers win, which a counterfactual replay shows.
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


_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January February March April May June July August September October November December"
).split()


def _civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of ``days`` after 1970-01-01 (proleptic Gregorian)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _struct(seconds: Any) -> time.struct_time:
    """``time.gmtime(seconds)`` computed in Python (the worker's local time is UTC)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"'{type(seconds).__name__}' object cannot be interpreted as a time")
    whole = int(seconds // 1)
    days, rest = divmod(whole, 86_400)
    year, month, day = _civil(days)
    yday = _days_before(year, month) + day
    fields = (year, month, day, rest // 3600, rest // 60 % 60, rest % 60, (days + 3) % 7, yday, 0)
    return time.struct_time(fields, {"tm_zone": "UTC", "tm_gmtoff": 0})


def _days_before(year: int, month: int) -> int:
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    lengths = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    return sum(lengths[: month - 1])


def _fields(value: Any) -> tuple[int, ...]:
    fields = tuple(value)
    if len(fields) < 9 or not all(isinstance(f, int) for f in fields[:9]):
        raise TypeError("a time tuple of 9 integers is required")
    return fields[:9]


def _strftime(fmt: str, value: Any) -> str:
    """``time.strftime`` in Python for the C locale's directives, in UTC."""
    if not isinstance(fmt, str):
        raise TypeError("strftime() argument 1 must be str")
    year, month, day, hour, minute, second, wday, yday, _dst = _fields(value)
    sunday_week = (yday - 1 + 7 - (wday + 1) % 7) // 7
    monday_week = (yday - 1 + 7 - wday) // 7
    values = {
        "a": _DAYS[wday % 7][:3],
        "A": _DAYS[wday % 7],
        "b": _MONTHS[(month - 1) % 12][:3],
        "h": _MONTHS[(month - 1) % 12][:3],
        "B": _MONTHS[(month - 1) % 12],
        "d": f"{day:02d}",
        "e": f"{day:2d}",
        "H": f"{hour:02d}",
        "I": f"{(hour % 12) or 12:02d}",
        "j": f"{yday:03d}",
        "m": f"{month:02d}",
        "M": f"{minute:02d}",
        "p": "AM" if hour < 12 else "PM",
        "S": f"{second:02d}",
        "U": f"{sunday_week:02d}",
        "W": f"{monday_week:02d}",
        "w": str((wday + 1) % 7),
        "u": str(wday + 1),
        "y": f"{year % 100:02d}",
        "Y": str(year),
        "Z": "UTC",
        "z": "+0000",
        "n": "\n",
        "t": "\t",
        "%": "%",
    }
    composite = {
        "c": "%a %b %e %H:%M:%S %Y",
        "x": "%m/%d/%y",
        "X": "%H:%M:%S",
        "D": "%m/%d/%y",
        "F": "%Y-%m-%d",
        "T": "%H:%M:%S",
        "R": "%H:%M",
        "r": "%I:%M:%S %p",
    }
    out, i = [], 0
    while i < len(fmt):
        char = fmt[i]
        if char != "%" or i + 1 == len(fmt):
            out.append(char)
            i += 1
            continue
        code = fmt[i + 1]
        if code in composite:
            out.append(_strftime(composite[code], value))
        elif code in values:
            out.append(values[code])
        else:
            raise ValueError(f"the sandbox's strftime does not support %{code}")
        i += 2
    return "".join(out)


def _virtual_time_functions(clock: VirtualClock) -> dict[str, Any]:
    """The replacements of the ``time`` module's clock functions.

    None of them keeps a reference to an original: a closure or default argument holding
    one would hand the real clock to any code that reads it (``__closure__``). Calendar
    conversions are computed in Python, in UTC.
    """

    def ns(seconds: float) -> int:
        return round(seconds * 1e9)

    def clock_gettime(clk_id: int) -> float:
        if clk_id == getattr(time, "CLOCK_REALTIME", 0):
            return clock.wall()
        return clock.monotonic()

    def gmtime(seconds: Any = None) -> time.struct_time:
        return _struct(clock.wall() if seconds is None else seconds)

    def asctime(value: Any = None) -> str:
        return _strftime("%a %b %e %H:%M:%S %Y", gmtime() if value is None else value)

    def ctime(seconds: Any = None) -> str:
        return asctime(gmtime(seconds))

    def strftime(fmt: str, value: Any = None) -> str:
        return _strftime(fmt, gmtime() if value is None else value)

    return {
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
        "localtime": gmtime,
        "gmtime": gmtime,
        "ctime": ctime,
        "asctime": asctime,
        "strftime": strftime,
        "sleep": clock.sleep,
    }


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
            elif isinstance(value, type) and value.__module__ == getattr(module, "__name__", ""):
                _replace_in_class(value, replacements)


def _replace_in_class(cls: type, replacements: dict[int, Any]) -> None:
    """The same for a class's own attributes (``logging.Formatter.converter``)."""
    for key, value in list(vars(cls).items()):
        replacement = replacements.get(id(value))
        if replacement is not None and replacement is not value:
            try:
                setattr(cls, key, staticmethod(replacement))
            except Exception:  # a built-in type's attributes cannot be set
                pass


def install() -> VirtualClock:
    """Install the virtual clock in this process (a sandbox worker, before env code).

    Returns:
        The clock; the worker restarts it at every reset.
    """
    clock = VirtualClock()
    # The originals are kept only until every reference to them is replaced: then they
    # are freed, and no object in the process leads back to the real clock through them.
    real = [getattr(time, name) for name in _CLOCK_NAMES if hasattr(time, name)]
    replacements: dict[int, Any] = {}
    for name, fn in _virtual_time_functions(clock).items():
        if hasattr(time, name):
            replacements[id(getattr(time, name))] = fn
            setattr(time, name, fn)
    for name, value in (("timezone", 0), ("altzone", 0), ("daylight", 0)):
        setattr(time, name, value)
    time.tzname = ("UTC", "UTC")
    real.append(os.times)
    virtual_times = _virtual_os_times(clock)
    replacements[id(os.times)] = virtual_times
    os.times = virtual_times  # type: ignore[assignment]

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
    del real
    _no_time_uuids()
    sys.addaudithook(_refuse_clock_files)
    return clock


def _no_time_uuids() -> None:
    """``uuid.uuid1`` asks libuuid for the real time when it can: it computes from the
    (virtual) ``time.time_ns`` instead."""
    try:
        import uuid
    except ImportError:  # pragma: no cover - the standard library has it
        return
    uuid._generate_time_safe = None  # type: ignore[attr-defined]
    uuid._has_uuid_generate_time_safe = False  # type: ignore[attr-defined]


#: Files that show real time (uptime, boot time, the clock device).
_CLOCK_FILES = ("/proc/", "/sys/", "/dev/rtc")


def _refuse_clock_files(event: str, args: tuple[Any, ...]) -> None:
    """An audit hook (Python code cannot remove one): refuses opening the files that
    show real time, however the path is spelled (``//proc``, ``/./proc``, relative)."""
    if event not in ("open", "os.listdir", "os.scandir") or not args:
        return
    path = args[0]
    if isinstance(path, bytes):
        path = path.decode("utf-8", "replace")
    if not isinstance(path, str):  # a file descriptor: opened earlier, or refused then
        return
    normal = os.path.normpath(os.path.join(os.getcwd(), path)).replace("//", "/", 1)
    if normal in ("/proc", "/sys") or normal.startswith(_CLOCK_FILES):
        raise PermissionError(f"the sandbox does not let environment code open {path}")


def _virtual_os_times(clock: VirtualClock) -> Any:
    def times() -> Any:
        elapsed = clock.elapsed()
        return os.times_result((elapsed, 0.0, 0.0, 0.0, _MONOTONIC_START + elapsed))

    return times
