"""A worker stopped from one thread while another thread is in a call with it.

The web server does this: a request's deadline ends a play session (killing its worker)
while the call itself still runs in an executor thread. The channel reads and writes raw
descriptor numbers, so the pipes must stay open until that thread leaves (a closed number is
the next socket's: the call would read another client's request), and a zygote worker's
pidfd must be closed exactly once (a second close closes whatever has the number by then).
Before this was fixed, tests/web/test_play_stall.py failed about one run in five with
"Remote end closed connection without response" or "Bad file descriptor".
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import types

import pytest

from spade_envs.error import SandboxCrashed, SandboxError, SandboxProtocolError
from spade_envs.sandbox import WorkerPool, open_env
from spade_envs.sandbox import process as process_module
from spade_envs.sandbox import zygote as zygote_module
from spade_envs.sandbox.wire import encode

from .conftest import TIGHT, env_source, requires_bwrap

SPIN = env_source(step="while True:\n    pass")


@pytest.fixture(params=["cold", pytest.param("zygote", marks=requires_bwrap)])
def pool(request):
    config = dataclasses.replace(TIGHT, zygote=request.param == "zygote")
    with WorkerPool(config, size=0) as pool:
        yield pool


def _gate_receive(worker, monkeypatch) -> tuple[threading.Event, threading.Event]:
    """Hold a worker's next read of its answer: ``inside`` is set when a thread reaches it,
    and the read goes on once ``go`` is set."""
    inside, go = threading.Event(), threading.Event()
    receive = worker._channel.receive

    def gated(*args, **kwargs):
        inside.set()
        go.wait(10)
        return receive(*args, **kwargs)

    monkeypatch.setattr(worker._channel, "receive", gated)
    return inside, go


def test_a_kill_from_another_thread_leaves_the_pipes_to_the_call_in_flight(pool, monkeypatch):
    env = open_env(SPIN, pool=pool)
    env.reset(seed=0)
    worker = env._worker
    inside, go = _gate_receive(worker, monkeypatch)
    outcome: list[type] = []

    def play() -> None:
        try:
            env.step("x")
        except SandboxError as exc:
            outcome.append(type(exc))

    thread = threading.Thread(target=play)
    thread.start()
    try:
        assert inside.wait(10), "the call never reached the channel"
        worker.kill()  # this thread: the request whose deadline passed
        assert not (worker._process.stdout.closed or worker._process.stdin.closed), (
            "kill() closed the pipes while another thread was reading them"
        )
    finally:
        go.set()
        thread.join(30)
    assert outcome == [SandboxCrashed]
    assert worker._process.stdout.closed and worker._process.stdin.closed
    env.close()


@requires_bwrap
def test_a_zygote_worker_is_reaped_once_whoever_waits(monkeypatch):
    closed: list[int] = []
    real_close = os.close

    def recording_close(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    with WorkerPool(dataclasses.replace(TIGHT, zygote=True), size=0) as pool:
        env = open_env(SPIN, pool=pool)
        env.reset(seed=0)
        process = env._worker._process
        assert isinstance(process, zygote_module.ForkedProcess)
        pidfd = process._pidfd
        monkeypatch.setattr(zygote_module.os, "close", recording_close)
        process.kill()
        threads = [threading.Thread(target=process.wait, args=(10,)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        monkeypatch.undo()
        assert process.returncode is not None
        assert closed.count(pidfd) == 1
        process.kill()  # after the reaping: nothing is signalled through a closed number
        env.close()


def test_two_threads_calling_one_worker_take_turns_or_are_refused(pool, monkeypatch):
    """A web session's reaper closes it while a request steps it: two calls on one worker.
    The second is refused at once ("still waiting"); before, both passed the check, shared
    the channel's buffer, and every later call got the answer to the one before it (found
    by an adversarial review, with this barrier holding both threads past the check)."""
    env = open_env(env_source(), pool=pool)
    env.reset(seed=0)
    worker = env._worker
    barrier = threading.Barrier(2)

    def monotonic() -> float:  # both threads reach send()'s deadline before either goes on
        try:
            barrier.wait(2)
        except threading.BrokenBarrierError:
            pass
        return time.monotonic()

    monkeypatch.setattr(process_module, "time", types.SimpleNamespace(monotonic=monotonic))
    got: dict[str, object] = {}

    def run(op: str, **args: object) -> None:
        try:
            got[op] = worker.call(op, **args)
        except SandboxError as exc:
            got[op] = exc

    threads = [
        threading.Thread(target=run, args=("hint",), kwargs={"agent": None}),
        threading.Thread(target=run, args=("step",), kwargs={"action": "x"}),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    monkeypatch.undo()
    refused = [op for op, answer in got.items() if isinstance(answer, SandboxError)]
    # Usually the second is refused; a fast worker can answer the first before the second
    # thread runs again (a loaded CI, zygote workers), and then they took turns.
    assert len(refused) <= 1, got
    for op in refused:
        assert "is still waiting for its answer" in str(got[op])
    for op in set(got) - set(refused):
        assert isinstance(got[op], list if op == "step" else str), got
    # The channel is in step with the worker: each call gets its own answer.
    assert isinstance(worker.call("hint", agent=None), str)
    assert isinstance(worker.call("step", action="x"), list)
    env.close()


def test_a_step_sent_from_one_thread_is_collected_from_another(pool):
    """asyncio's run_in_executor hands step_async and step_wait to whichever pool thread is
    free; the answer was once refused to any thread but the sender's, and the worker stayed
    waiting for good (an adversary's review)."""
    env = open_env(env_source(), pool=pool)
    env.reset(seed=0)
    thread = threading.Thread(target=env.step_async, args=("x",))
    thread.start()
    thread.join(20)
    observation, reward, terminated, truncated, info = env.step_wait()
    assert info["turn"] == 1
    assert env.step("y")[4]["turn"] == 2  # the channel is in step
    env.close()


def test_two_threads_collecting_one_answer_are_one_at_a_time(pool, monkeypatch):
    env = open_env(env_source(), pool=pool)
    env.reset(seed=0)
    worker = env._worker
    inside, go = _gate_receive(worker, monkeypatch)
    worker.send("step", action="x")
    got: list[object] = []
    first = threading.Thread(target=lambda: got.append(worker.receive()))
    first.start()
    assert inside.wait(10)
    with pytest.raises(SandboxError, match=r"another thread is receiving the answer to step\(\)"):
        worker.receive()
    go.set()
    first.join(20)
    monkeypatch.undo()
    assert isinstance(got[0], list) and got[0][4]["turn"] == 1
    assert worker.call("step", action="y")[4]["turn"] == 2
    env.close()


def test_bytes_after_an_answer_are_never_the_next_answer(pool, monkeypatch):
    """A worker that wrote two frames at once would have its second taken as the answer
    to the next call: a forged result (an adversary's review; the worker's side keeps
    environment code off the channel, and this is the parent's own guard)."""
    env = open_env(env_source(), pool=pool)
    env.reset(seed=0)
    worker = env._worker
    receive = worker._channel.receive

    def with_a_second_frame(*args, **kwargs):
        answer = receive(*args, **kwargs)
        worker._channel._buffer += encode({"ok": True, "result": ["forged", 1.0, True]})
        return answer

    monkeypatch.setattr(worker._channel, "receive", with_a_second_frame)
    with pytest.raises(SandboxProtocolError, match=r"more than its answer to step\(\)"):
        worker.call("step", action="x")
    assert not worker.alive and "more than one answer" in worker.broken_reason
    env.close()
