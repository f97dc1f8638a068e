"""In-process deadlines: SIGALRM interrupts trusted Python code that runs too long."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from spade_envs.agent.deadline import deadline, deadlines_available
from spade_envs.error import StepTimeout


def test_a_python_loop_past_its_deadline_is_interrupted():
    with pytest.raises(StepTimeout, match="step of Loop ran past its 0.2 s deadline"):
        with deadline(0.2, "step of Loop") as enforced:
            assert enforced
            while True:
                pass
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_quick_body_leaves_no_timer_or_handler_behind():
    before = signal.getsignal(signal.SIGALRM)
    with deadline(5.0):
        total = sum(range(100))
    assert total == 4950
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before


def test_deadlines_nest_and_the_outer_one_still_fires():
    with pytest.raises(StepTimeout, match="outer"):
        with deadline(0.5, "outer"):
            with deadline(5.0, "inner"):
                pass  # the inner one ends early and hands the outer timer back
            while True:
                pass


def test_outside_the_main_thread_the_body_runs_without_a_deadline():
    seen = []

    def worker():
        seen.append(deadlines_available())
        with deadline(0.01) as enforced:
            time.sleep(0.05)
            seen.append(enforced)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [False, False]


def test_bad_seconds_are_refused():
    with pytest.raises(ValueError, match="positive"):
        with deadline(0):
            pass
