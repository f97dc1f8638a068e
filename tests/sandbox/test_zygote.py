"""Workers forked from a zygote: each is as isolated as a cold worker, and apart from its siblings.

Every worker here runs environment code that reports what it sees from inside; the
assertions compare two siblings forked from the same zygote, which share the most.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

import pytest

from spade_envs.error import SandboxCrashed, SandboxStartFailed, SandboxTimeout
from spade_envs.sandbox import WorkerPool, open_env
from spade_envs.sandbox.zygote import Zygote

from .conftest import TIGHT, env_source, requires_bwrap, requires_root

pytestmark = requires_bwrap

#: What a worker reports from inside (its /proc is closed to environment code, so the
#: parent reads that: the test runs where the parent may read a worker's /proc entry).
LOOK = """
import json
seen = {"pid": os.getpid(), "uid": os.getuid(), "tmp": sorted(os.listdir("/tmp")),
        "object_id": id(object())}
open("/tmp/left-by-" + str(os.getuid()), "w").write("x")
return json.dumps(seen), 0.0, False
"""


def look(env) -> dict:
    """What the worker says of itself, and what its /proc entry says (read from outside)."""
    env.reset(seed=0)
    seen = json.loads(env.step("look")[0])
    pid = env._worker.pid
    status = dict(
        line.split(":\t", 1)
        for line in open(f"/proc/{pid}/status").read().splitlines()
        if ":\t" in line
    )
    seen["caps"] = [status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")]
    seen["seccomp"] = status["Seccomp"].strip()
    seen["no_new_privs"] = status["NoNewPrivs"].strip()
    seen["nspid"] = status["NSpid"].split()
    seen["ns"] = {
        n: os.readlink(f"/proc/{pid}/ns/{n}") for n in ("mnt", "net", "pid", "ipc", "uts")
    }
    return seen


@pytest.fixture
def pool():
    with WorkerPool(TIGHT, size=0) as pool:
        yield pool


def test_a_forked_worker_is_locked_down_like_a_cold_one(pool):
    env = open_env(env_source(step=LOOK, header="import os"), pool=pool)
    try:
        seen = look(env)
        assert env._worker.layers["forked"] is True and pool.forked_starts == 1
    finally:
        env.close()
    # PID 2 of a namespace of its own (under bubblewrap's), where PID 1 is its init.
    assert seen["pid"] == 2 and seen["nspid"][-1] == "2" and len(seen["nspid"]) >= 3
    assert seen["caps"] == ["0000000000000000"] * 5  # not even in the bounding set
    assert seen["seccomp"] == "2" and seen["no_new_privs"] == "1"
    if os.geteuid() == 0:
        assert seen["uid"] >= 1_000_000  # a worker uid, not root


def test_siblings_share_no_namespace_file_or_process(pool):
    first = open_env(env_source(step=LOOK, header="import os"), pool=pool)
    second = open_env(env_source(step=LOOK, header="import os"), pool=pool)
    try:
        assert first._worker.lineage == second._worker.lineage  # one zygote forked both
        a, b = look(first), look(second)
    finally:
        first.close()
        second.close()
    for name in ("mnt", "net", "pid", "ipc", "uts"):
        assert a["ns"][name] != b["ns"][name], name
    # Each wrote a file into its /tmp; neither sees the other's (or any earlier worker's).
    assert a["tmp"] == [] and b["tmp"] == []
    if os.geteuid() == 0:
        assert a["uid"] != b["uid"]


#: Leaves a mark in every place a worker may write, opens a pty, and reports what it found.
MARKS = """
found = {}
for directory in ("/tmp", "/run", "/var/run", "/var/tmp", "/dev/shm"):
    found[directory] = sorted(os.listdir(directory))
    try:
        open(directory + "/mark-" + str(os.getuid()), "w").write("x")
    except OSError as exc:
        found[directory + " write"] = type(exc).__name__
found["/dev/pts"] = sorted(os.listdir("/dev/pts"))
ptys = [os.open("/dev/ptmx", os.O_RDWR) for _ in range(3)]
found["/dev/pts after"] = sorted(os.listdir("/dev/pts"))
return repr(found), 0.0, False
"""


def test_siblings_share_no_writable_file_system_and_no_ptys(pool):
    """A file system shared by siblings is a channel between environments (and a trace of
    what the validator called before), as /var/run and /dev/pts once were."""
    seen = []
    for _ in range(2):
        env = open_env(env_source(step=MARKS, header="import os"), pool=pool)
        try:
            env.reset(seed=0)
            seen.append(eval(env.step("mark")[0]))  # a repr of lists of names
        finally:
            env.close()
    first, second = seen
    for directory in ("/tmp", "/run", "/var/run", "/var/tmp", "/dev/shm"):
        assert second[directory] == [], (directory, second[directory])
        assert f"{directory} write" not in first  # each is writable (a channel if shared)
    assert second["/dev/pts"] == first["/dev/pts"]  # its own instance: none of the first's
    assert len(first["/dev/pts after"]) == len(first["/dev/pts"]) + 3


def test_one_zygote_repeats_addresses_so_the_validator_asks_for_another(pool):
    """Why ``acquire(distinct_from=...)`` exists: siblings agree on ``id()``, lineages don't."""
    first = pool.acquire()
    sibling = pool.acquire()
    other = pool.acquire(distinct_from=[first])
    assert first.lineage == sibling.lineage != other.lineage
    seen = []
    for worker in (first, sibling, other):
        env = open_env(env_source(step=LOOK, header="import os"), pool=_Handing(worker))
        try:
            seen.append(look(env)["object_id"])
        finally:
            env.close()
    assert seen[0] == seen[1]  # the same layout: a determinism check between these is blind
    assert seen[0] != seen[2]


class _Handing:
    """A pool that hands out one given worker (and compiles like a real one)."""

    def __init__(self, worker):
        self.worker = worker
        self.config = worker.config
        self._pool = WorkerPool(worker.config, size=0)

    def acquire(self, distinct_from=()):
        return self.worker

    def compiled(self, source):
        return self._pool.compiled(source)


def test_a_forked_worker_is_killed_and_its_end_named(pool):
    spin = "while True:\n    pass"
    env = open_env(env_source(step=spin), pool=pool)
    env.reset(seed=0)
    with pytest.raises(SandboxTimeout, match="did not finish within"):
        env.step("spin")
    assert env._worker._process.returncode == -9
    config = dataclasses.replace(TIGHT, cpu_seconds=1, call_timeout=20.0)
    with WorkerPool(config, size=0) as cpu_pool:
        env = open_env(env_source(step=spin), pool=cpu_pool)
        env.reset(seed=0)
        with pytest.raises(SandboxCrashed, match="SIGXCPU|SIGKILL"):
            env.step("spin")
        assert cpu_pool.forked_starts == 1


def test_workers_in_use_outlive_their_pool():
    pool = WorkerPool(TIGHT, size=0)
    env = open_env(env_source(step=LOOK, header="import os"), pool=pool)
    pool.close()
    try:
        assert look(env)["pid"] == 2
    finally:
        env.close()


def test_the_cpu_time_the_parent_reads_is_the_workers(pool):
    env = open_env(env_source(step="x = sum(range(3_000_000))\nreturn 'ok', 0.0, False"), pool=pool)
    try:
        before = env._worker.cpu_seconds()
        env.reset(seed=0)
        env.step("work")
        assert env._worker.cpu_seconds() > before
    finally:
        env.close()


def test_zygotes_switched_off_or_without_bubblewrap_start_cold():
    with WorkerPool(dataclasses.replace(TIGHT, zygote=False), size=0) as pool:
        env = open_env(env_source(), pool=pool)
        env.close()
        assert pool.forked_starts == 0 and "switched off" in pool.zygote_error
    with pytest.raises(SandboxStartFailed, match="only under bubblewrap"):
        Zygote(dataclasses.replace(TIGHT, bubblewrap=False))


@requires_root
def test_a_zygote_that_died_is_replaced(pool):
    worker = pool.acquire()
    worker.kill()
    (zygote,) = pool._zygotes
    zygote.kill()
    deadline = time.monotonic() + 5
    while zygote.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    replacement = pool.acquire()
    try:
        assert replacement.alive and replacement.lineage != zygote.lineage
    finally:
        replacement.kill()


def test_a_forked_copy_of_the_pool_leaves_the_parents_workers_alone():
    """AsyncVectorEnv forks this process: its copies of ready workers are not theirs."""
    import gymnasium as gym

    from spade_envs.sandbox import default_pool, open_seed

    default_pool().wait_ready()
    mine = open_seed("NumberGuess")
    mine.reset(seed=1)
    vec = gym.vector.AsyncVectorEnv([lambda: open_seed("NumberGuess") for _ in range(2)])
    try:
        observations, _ = vec.reset(seed=3)
        assert all(o.startswith("I am thinking of a whole number") for o in observations)
    finally:
        vec.close()
    try:
        assert mine.step("\\boxed{3}")[0]  # the parent's worker still answers
        assert default_pool().acquire().alive
    finally:
        mine.close()


def _open_in_child(pool, answers) -> None:
    import threading

    from spade_envs.sandbox import default_pool

    default_pool().close()  # the module's lock
    seen = []

    def play() -> None:  # from a thread: workers start through the spawner thread
        env = open_env(env_source(), pool=pool)
        try:
            seen.append(env.reset(seed=0)[0])
        finally:
            env.close()

    thread = threading.Thread(target=play)
    thread.start()
    thread.join()
    answers.send(seen[0] if seen else "no answer")


def test_a_process_forked_while_the_pool_starts_a_worker_opens_environments():
    """A fork copies the pool's locks but not the thread holding them (the refill thread
    starting a zygote, a request starting a worker): the copy must not wait for them."""
    import multiprocessing

    from spade_envs.sandbox import pool as sandbox_pool
    from spade_envs.sandbox import process as sandbox_process

    pool = WorkerPool(TIGHT, size=1)
    held = [
        pool._zygote_lock,
        pool._lock,
        sandbox_pool._default_lock,
        sandbox_process._spawner._lock,
    ]
    for lock in held:  # as if another thread were inside them at the fork
        lock.acquire()
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe()
    child = context.Process(target=_open_in_child, args=(pool, theirs))
    try:
        child.start()
        for lock in held:
            lock.release()
        answered = ours.poll(60)
        assert answered, "the forked process hung starting a worker"
        assert ours.recv() == "ready"
        child.join(10)
        assert child.exitcode == 0
        env = open_env(env_source(), pool=pool)  # the parent's pool still works
        assert env.reset(seed=0)[0] == "ready"
        env.close()
    finally:
        if child.is_alive():
            child.kill()
        pool.close()
