"""Progress of a long phase: redrawn in place on a terminal and cleared at the end; in a
log, a plain line at most once per interval; a broken stream never fails the phase."""

from __future__ import annotations

import io
import threading

from spade_envs.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_in_a_log_a_line_at_most_once_per_interval():
    clock, stream = Clock(), io.StringIO()
    with Progress("[iter 1/2] play", 48, unit="episodes", stream=stream, interval=60,
                  clock=clock) as bar:  # fmt: skip
        for _ in range(10):
            clock.now += 10
            bar.tick("an episode")
    # 100 s in ten steps: shown at 60 s only (the next would be due at 120 s).
    assert stream.getvalue() == "[iter 1/2] play: 6/48 episodes, 60 s\n"
    assert bar.count == 10


def test_on_a_terminal_the_line_is_redrawn_in_place_and_cleared_at_the_end():
    clock, stream = Clock(), Terminal()
    bar = Progress("evaluation", None, stream=stream, clock=clock)
    for _ in range(3):
        clock.now += 1
        bar.advance()
    text = stream.getvalue()
    assert text.count("\r") == 3 and "\n" not in text
    assert text.endswith("\revaluation: 3, 3 s")
    bar.close()
    assert stream.getvalue().endswith("\r" + " " * len("evaluation: 3, 3 s") + "\r")
    bar.advance()  # after close nothing more is shown
    assert stream.getvalue().count("\r") == 5


def test_an_interval_of_zero_shows_nothing_even_on_a_terminal():
    clock, stream = Clock(), Terminal()
    with Progress("rank 1's plays", 4, stream=stream, interval=0, clock=clock) as bar:
        for _ in range(4):
            clock.now += 10
            bar.tick()
    assert stream.getvalue() == "" and bar.count == 4


def test_counting_from_many_threads_loses_nothing():
    bar = Progress("plays", stream=io.StringIO(), interval=0)
    threads = [threading.Thread(target=lambda: [bar.tick() for _ in range(500)]) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert bar.count == 4000


def test_a_closed_stream_never_fails_the_phase():
    clock, stream = Clock(), io.StringIO()
    bar = Progress("plays", stream=stream, interval=1, clock=clock)
    stream.close()
    clock.now += 5
    bar.advance()  # the write fails: the phase goes on, and shows nothing more
    clock.now += 5
    bar.advance()
    bar.close()
    assert bar.count == 2


class Log(io.StringIO):
    """A log file that says when a line arrives."""

    def __init__(self) -> None:
        super().__init__()
        self.wrote = threading.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        self.wrote.set()
        return written


def test_a_heartbeat_shows_the_line_while_no_item_finishes():
    """Batched plays finish together near the end: the play phase of `make demo` once
    printed its first line after two minutes of silence."""
    clock, stream = Clock(), Log()
    bar = Progress("[iter 1/2] play", 48, unit="episodes", stream=stream, interval=1,
                   clock=clock, heartbeat=True)  # fmt: skip
    clock.now += 1.5  # a second and a half of silence, no episode finished
    assert stream.wrote.wait(10), "no line without a finished item"
    bar.close()
    assert stream.getvalue().splitlines()[0] == "[iter 1/2] play: 0/48 episodes, 2 s"
    assert not bar._beats.is_alive()  # closing stops the heartbeat


def test_without_a_heartbeat_nothing_is_shown_between_items():
    clock, stream = Clock(), Log()
    with Progress("x", 3, stream=stream, interval=1, clock=clock) as bar:
        clock.now += 5
        assert not stream.wrote.wait(1.5)
    assert bar._beats is None and stream.getvalue() == ""
