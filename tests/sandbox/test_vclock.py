"""The worker's virtual clock: what it shows, what it leaves no way back to, and that its
calendar arithmetic is the C library's (property tests against ``time`` in UTC)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_envs.sandbox import vclock

# ~ years 1 to 9999, as time.gmtime accepts them here.
SECONDS = st.integers(min_value=-62_135_596_800, max_value=253_402_300_799)
DIRECTIVES = "aAbBcdDeFHIjmMpRrSTuUwWxXyY%"


@settings(max_examples=300, deadline=None)
@given(SECONDS)
def test_gmtime_is_the_c_librarys(seconds):
    assert tuple(vclock._struct(seconds)) == tuple(time.gmtime(seconds))


@settings(max_examples=200, deadline=None)
@given(SECONDS, st.text(alphabet=DIRECTIVES, min_size=1, max_size=6))
def test_strftime_is_the_c_librarys_in_the_c_locale(seconds, codes):
    fmt = "".join(f"%{c}" for c in codes) + " x"
    value = time.gmtime(seconds)
    if value.tm_year < 1000:
        return  # glibc does not pad %Y and %C; the sandbox's years are 2026 on
    assert vclock._strftime(fmt, value) == time.strftime(fmt, value)


def test_unsupported_directives_say_so():
    with pytest.raises(ValueError, match="does not support %Q"):
        vclock._strftime("%Q", time.gmtime(0))


def _run(code: str) -> str:
    """Run ``code`` after installing the clock, in a process of its own."""
    script = "from spade_envs.sandbox import vclock\nclock = vclock.install()\n"
    done = subprocess.run(
        [sys.executable, "-c", script + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_every_clock_reads_the_episode_and_nothing_leads_back_to_the_real_one():
    out = _run("""
        import dataclasses, datetime, gc, logging, os, threading, time, uuid
        names = {"time", "time_ns", "monotonic", "perf_counter", "process_time",
                 "localtime", "gmtime", "strftime", "ctime", "asctime", "clock_gettime"}
        left = [o for o in gc.get_objects()
                if type(o).__name__ == "builtin_function_or_method"
                and getattr(o, "__self__", None) is time and o.__name__ in names]
        cells = [c.cell_contents for f in vars(time).values()
                 for c in (getattr(f, "__closure__", None) or ())]
        real = [c for c in cells if getattr(c, "__self__", None) is time]
        years = {datetime.datetime.now().year, datetime.date.today().year,
                 time.localtime().tm_year, int(time.strftime("%Y")),
                 datetime.datetime.fromtimestamp(time.time()).year,
                 datetime.datetime.utcfromtimestamp(uuid.uuid1().time / 1e7 - 12219292800).year,
                 dataclasses.sys.modules["time"].gmtime().tm_year}
        threading._time()
        logging.Formatter.converter(0)
        print(len(left), len(real), sorted(years), os.times().elapsed > 999)
    """)
    assert out == "0 0 [2026] True"


def test_sleep_moves_the_clock_and_reset_restarts_it():
    out = _run("""
        import time
        start = time.monotonic()
        time.sleep(90)
        moved = round(time.monotonic() - start)
        clock.restart()
        print(moved, time.time() - 1767225600.0 < 0.01)
    """)
    assert out == "90 True"


@pytest.mark.parametrize("path", ["/proc/uptime", "//proc/uptime", "/./proc/uptime", "/proc"])
def test_files_that_show_real_time_are_refused_however_spelled(path):
    out = _run(f"""
        try:
            open({path!r}).read()
            print("read")
        except PermissionError as exc:
            print("refused", "does not let environment code open" in str(exc))
    """)
    assert out == "refused True"
