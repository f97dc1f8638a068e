"""Each isolation layer, checked on its own (the others switched off)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
import warnings
from pathlib import Path

import pytest

from spade_envs.error import (
    SandboxCrashed,
    SandboxStartFailed,
    SandboxTimeout,
    SandboxUnavailable,
)
from spade_envs.sandbox import (
    SandboxConfig,
    SandboxWarning,
    WorkerPool,
    isolation,
    open_env,
    open_seed,
)
from spade_envs.sandbox.isolation import WORKER_UID_BASE, worker_uid

from .conftest import (
    BOUNDED_FORK_LOOP,
    TIGHT,
    env_source,
    requires_bwrap,
    requires_root,
    requires_seccomp,
)

NOTHING = dataclasses.replace(
    TIGHT,
    bubblewrap=False,
    drop_uid=False,
    seccomp=False,
    rlimits=False,
    insecure_no_isolation=True,  # each layer is tested alone: the others are off on purpose
)


def run_step(config: SandboxConfig, code: str) -> str:
    with WorkerPool(config, size=0) as pool:
        env = open_env(env_source(step=code, header="import os"), pool=pool)
        env.reset(seed=0)
        try:
            return env.step("go")[0]
        finally:
            env.close()


def attempt(call: str) -> str:
    """Code that runs ``call`` and returns 'ok' or the exception's class name."""
    return textwrap.dedent(f"""
        try:
            {call}
        except BaseException as exc:
            return type(exc).__name__, 0.0, False
        return "ok", 0.0, False
    """)


@requires_bwrap
def test_bubblewrap_alone_read_only_root_private_tmp_no_network():
    config = dataclasses.replace(NOTHING, bubblewrap=True)
    assert run_step(config, attempt('open("/usr/spade-pwned", "w")')) == "OSError"
    assert run_step(config, attempt('open("/tmp/inside", "w").write("x")')) == "ok"
    assert not Path("/tmp/inside").exists()
    assert run_step(
        config, attempt('import socket; socket.create_connection(("127.0.0.1", 5432), timeout=1)')
    ) in ("ConnectionRefusedError", "OSError")
    assert run_step(config, "return str(os.getpid()), 0.0, False") in ("1", "2", "3")
    assert run_step(config, 'return os.environ.get("HOME", ""), 0.0, False') == "/tmp"


def test_each_worker_gets_its_own_uid():
    uids = [worker_uid() for _ in range(300)]
    assert all(WORKER_UID_BASE <= uid < WORKER_UID_BASE + 2**30 for uid in uids)
    # A repeat only after 256 newer workers, less those skipped because their uid is still
    # held (other tests' live workers in this process).
    assert len(set(uids[:200])) == 200
    # Consecutive workers' uids do not count up: a worker cannot tell how many came
    # before it, or which process started it (a validator's from a rollout's).
    steps = {b - a for a, b in itertools.pairwise(uids)}
    assert len(steps) > 200


def test_a_module_planted_in_the_temporary_directory_is_not_imported(tmp_path, monkeypatch):
    """Without bubblewrap a worker starts, as root, in the host's temporary directory, which
    any local user may write; ``-m`` once put it first on ``sys.path`` (an adversary's
    review ran a planted ``colorsys.py`` as uid 0)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / "colorsys.py").write_text("PLANTED = True\n")
    code = 'import colorsys, sys; return str(hasattr(colorsys, "PLANTED")), 0.0, False'
    assert run_step(NOTHING, code) == "False"


@requires_root
def test_two_threads_creating_the_uid_key_agree_on_it(tmp_path, monkeypatch):
    """The pool's refill thread and a cold start can both be first on a new machine: both
    once wrote one draft name, and one of them raised FileNotFoundError or kept a key that
    was not the one on disk (an adversary's review, 61 of 600 calls)."""

    def first_worker(barrier: threading.Barrier, got: list[object]) -> None:
        barrier.wait(10)
        try:
            got.append(isolation._uid_key())
        except Exception as exc:  # the test reports whatever it was
            got.append(exc)

    for trial in range(30):
        monkeypatch.setattr(isolation, "UID_KEY_FILE", tmp_path / str(trial) / "uid-key")
        isolation._uid_key.cache_clear()
        barrier = threading.Barrier(2)
        got: list[object] = []
        threads = [threading.Thread(target=first_worker, args=(barrier, got)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        on_disk = isolation.UID_KEY_FILE.read_bytes()
        assert got == [on_disk, on_disk] and len(on_disk) == 32, (trial, got)
        assert sorted(p.name for p in isolation.UID_KEY_FILE.parent.iterdir()) == ["uid-key"]
        assert isolation.UID_KEY_FILE.stat().st_mode & 0o777 == 0o600
    isolation._uid_key.cache_clear()


@requires_root
def test_a_root_parent_that_cannot_keep_the_uid_key_says_where_and_what_to_do(monkeypatch):
    # A read-only root file system (a container's): /proc stands in, where mkdir fails too.
    monkeypatch.setattr(isolation, "UID_KEY_FILE", Path("/proc/spade-envs-test/uid-key"))
    isolation._uid_key.cache_clear()
    try:
        with pytest.raises(
            SandboxStartFailed, match=r"uid key /proc/spade-envs-test/uid-key .*Make "
        ):
            worker_uid()
    finally:
        monkeypatch.undo()
        isolation._uid_key.cache_clear()


@requires_root
def test_a_uid_is_not_handed_out_again_while_its_worker_lives():
    # The per-process counter comes round after 256 workers; a warm worker kept that long
    # (a default pool's) once shared its uid, and its process limit, with a new one.
    with WorkerPool(dataclasses.replace(NOTHING, drop_uid=True), size=0) as pool:
        env = open_env(env_source(), pool=pool)
        held = env._worker.layers["uid"]
        try:
            assert held >= WORKER_UID_BASE
            assert held not in {worker_uid() for _ in range(512)}
        finally:
            env.close()
        assert held in {worker_uid() for _ in range(256)}


@requires_root
def test_process_limit_is_per_worker_not_per_machine():
    # RLIMIT_NPROC counts every task (process or thread) of a uid on the machine. With
    # one shared uid, three live workers already exceed a limit of 2 and none could start
    # a thread; with a uid per worker each counts only itself (1 process + 1 thread).
    config = dataclasses.replace(NOTHING, drop_uid=True, rlimits=True, max_processes=2)
    code = attempt("t = threading.Thread(target=print); t.start(); t.join()")
    source = env_source(step=code, header="import os, threading")
    with WorkerPool(config, size=0) as pool:
        envs = [open_env(source, pool=pool) for _ in range(3)]
        try:
            for env in envs:
                env.reset(seed=0)
            assert [env.step("go")[0] for env in envs] == ["ok", "ok", "ok"]
        finally:
            for env in envs:
                env.close()


@requires_root
def test_uid_drop_alone():
    config = dataclasses.replace(NOTHING, drop_uid=True)
    assert int(run_step(config, "return str(os.getuid()), 0.0, False")) >= WORKER_UID_BASE
    named = dataclasses.replace(config, uid=65534)
    assert run_step(named, "return str(os.getuid()), 0.0, False") == "65534"
    with tempfile.TemporaryDirectory(dir="/var/tmp") as root_only:
        os.chmod(root_only, 0o755)
        assert run_step(config, attempt(f'open("{root_only}/x", "w")')) == "PermissionError"


@requires_seccomp
def test_seccomp_alone_denies_fork_exec_and_sockets():
    config = dataclasses.replace(NOTHING, seccomp=True)
    assert run_step(config, attempt("os.fork()")) == "PermissionError"
    assert run_step(config, attempt('os.execv("/bin/true", ["true"])')) == "PermissionError"
    assert run_step(config, attempt("import socket; socket.socket()")) == "PermissionError"


@requires_root
def test_rlimit_nproc_stops_a_bounded_fork_loop_once_the_uid_is_dropped():
    config = dataclasses.replace(NOTHING, drop_uid=True, rlimits=True, max_processes=1)
    assert run_step(config, BOUNDED_FORK_LOOP) == "BlockingIOError after 0"


def test_rlimits_alone_memory_files_and_open_files():
    config = dataclasses.replace(NOTHING, rlimits=True, file_size_mb=1, open_files=32)
    assert (
        run_step(
            config,
            """
        import resource
        return str(resource.getrlimit(resource.RLIMIT_AS)[0] // (1 << 20)), 0.0, False
    """,
        )
        == "512"
    )
    big = attempt('open("/tmp/spade-rlimit-test", "wb").write(b"x" * (2 << 20))')
    try:
        assert run_step(config, big) == "OSError"  # EFBIG (Python ignores SIGXFSZ)
    finally:
        Path("/tmp/spade-rlimit-test").unlink(missing_ok=True)
    assert run_step(config, attempt('[open("/dev/null") for _ in range(100)]')) == "OSError"


def test_rlimit_cpu_kills_a_busy_worker():
    config = dataclasses.replace(NOTHING, rlimits=True, cpu_seconds=1, call_timeout=10.0)
    with pytest.raises(SandboxCrashed, match="SIGXCPU|SIGKILL"):
        run_step(config, "while True:\n    pass")


def test_wall_clock_timeout_kills_a_busy_worker():
    config = dataclasses.replace(NOTHING, call_timeout=1.0)
    with pytest.raises(SandboxTimeout, match="within 1 s"):
        run_step(config, "while True:\n    pass")


def test_sleeping_moves_the_virtual_clock_without_stalling_the_caller():
    # In every configuration (here: no layer at all) the worker's clock is virtual.
    config = dataclasses.replace(NOTHING, call_timeout=5.0)
    code = textwrap.dedent("""
        import time, datetime
        before = time.time()
        time.sleep(3600)
        return f"{time.time() - before:.0f} {datetime.date.today()}", 0.0, False
    """)
    assert run_step(config, code) == "3600 2026-01-01"


@requires_bwrap
def test_workers_die_with_their_parent():
    marker = uuid.uuid4().hex
    script = textwrap.dedent(f"""
        import sys, time
        from spade_envs.sandbox import SandboxConfig, WorkerPool, open_seed
        pool = WorkerPool(SandboxConfig(extra_env={{"SPADE_MARKER": "{marker}"}}), size=0)
        env = open_seed("NumberGuess", pool=pool)
        env.reset(seed=0)
        print("ready", flush=True)
        time.sleep(60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "ready"
        assert _processes_with(marker)
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
    deadline = time.monotonic() + 10
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(marker) == []


def _processes_with(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(int(pid))
            except OSError:
                pass
    return found


def test_missing_layers_are_announced_once_and_loudly(monkeypatch):
    fake = isolation.Capabilities(
        bubblewrap=False,
        seccomp=False,
        root=os.geteuid() == 0,
        bubblewrap_error="bwrap is not installed",
        seccomp_error="no libseccomp",
    )
    monkeypatch.setattr(isolation, "capabilities", lambda: fake)
    monkeypatch.setattr(isolation, "_warned", set())
    with pytest.warns(SandboxWarning) as record:
        layers = isolation.effective_layers(SandboxConfig(insecure_no_isolation=True))
    messages = sorted(str(w.message) for w in record)
    assert messages[0].startswith("SANDBOX WEAKENED: no bubblewrap: bwrap is not installed")
    assert messages[1].startswith("SANDBOX WEAKENED: no seccomp filter: no libseccomp")
    assert layers == {"bubblewrap": False, "seccomp": False, "drop_uid": fake.root, "rlimits": True}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        isolation.effective_layers(SandboxConfig(insecure_no_isolation=True))  # said once: silent
    # With neither bubblewrap nor seccomp, untrusted code is refused unless asked for by name...
    with pytest.raises(SandboxUnavailable, match=r"neither bubblewrap nor seccomp.*insecure_no"):
        isolation.effective_layers(SandboxConfig())
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        run_step(SandboxConfig(memory_mb=512), 'return "alive", 0.0, False')
    # ...and then the weakened worker still runs, with what is left.
    weak = SandboxConfig(memory_mb=512, insecure_no_isolation=True)
    assert run_step(weak, 'return "alive", 0.0, False') == "alive"


def test_trusted_mode_runs_in_process():
    env = open_env(
        env_source(step="return str(os.getpid()), 0.0, False", header="import os"),
        isolation="none",
        trust_code=True,
    )
    env.reset(seed=0)
    assert env.step("x")[0] == str(os.getpid())


def test_config_is_checked():
    with pytest.raises(Exception, match="memory_mb=100 is too small"):
        SandboxConfig(memory_mb=100)
    with pytest.raises(Exception, match="call_timeout must be positive seconds"):
        SandboxConfig(call_timeout=0)


def test_parents_of_a_bind_are_created_traversable():
    made = {"/", "/tmp"}
    args = isolation._bind_with_parents("/tmp/ci/repo/.venv", made)
    assert args == [
        "--perms", "0755", "--dir", "/tmp/ci",
        "--perms", "0755", "--dir", "/tmp/ci/repo",
        "--ro-bind", "/tmp/ci/repo/.venv", "/tmp/ci/repo/.venv",
    ]  # fmt: skip
    assert isolation._bind_with_parents("/tmp/ci/repo/spade_envs", made)[:1] == ["--ro-bind"]


def test_only_the_interpreter_and_the_package_are_bound(tmp_path, monkeypatch):
    """Not sys.path as a whole: its first entry is the launching script's directory."""
    monkeypatch.syspath_prepend(str(tmp_path))
    needed = isolation.needed_paths(SandboxConfig())
    assert str(tmp_path) not in needed
    import spade_envs

    package = os.path.dirname(os.path.realpath(spade_envs.__file__))
    assert package in needed and os.path.dirname(package) not in needed
    assert os.path.realpath(sys.base_prefix) in needed or any(
        os.path.realpath(sys.base_prefix).startswith(p + os.sep) for p in needed
    )


@requires_bwrap
def test_the_launching_directory_and_homes_are_invisible(tmp_path, monkeypatch):
    secret = tmp_path / ".env"
    secret.write_text("TOKEN=hunter2")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    code = attempt(f"open({str(secret)!r}).read()")
    assert run_step(TIGHT, code) == "FileNotFoundError"
    assert run_step(TIGHT, attempt("open('/root/.bashrc').read()")) == "FileNotFoundError"
    for socket_dir in ("/run/postgresql", "/var/run/postgresql"):
        assert run_step(TIGHT, attempt(f"os.listdir({socket_dir!r}) or 1/0")) in (
            "FileNotFoundError",
            "ZeroDivisionError",  # the directory exists (an empty tmpfs) and lists nothing
        )


@requires_seccomp
def test_the_seccomp_filter_is_an_allow_list_that_denies_each_probe():
    """The filter, dumped as PFC text, allows only the documented system calls; each
    call in DENIED_PROBES, made for real through ctypes in a worker, fails with EPERM."""
    import pyseccomp

    from spade_envs.sandbox import seccomp

    with tempfile.TemporaryFile("w+") as dump:
        seccomp.build_filter().export_pfc(dump)
        dump.seek(0)
        pfc = dump.read()
    assert "action ERRNO(1);" in pfc  # the default: everything not listed fails with EPERM
    arch = pyseccomp.system_arch()
    numbers = {}
    for name in seccomp.DENIED_PROBES:
        try:
            numbers[name] = pyseccomp.resolve_syscall(arch, name)
        except Exception:
            continue  # not a system call on this architecture
        assert name not in seccomp.ALLOWED
        assert f'# filter for syscall "{name}"' not in pfc, f"{name} has a rule"
    assert {"socket", "io_uring_setup", "clone", "execve", "ptrace", "bpf"} <= set(numbers)
    code = attempt(
        "import ctypes, json\n"
        "            libc = ctypes.CDLL(None, use_errno=True)\n"
        "            out = {}\n"
        f"            for name, nr in {numbers!r}.items():\n"
        "                result = libc.syscall(nr, 0, 0, 0, 0, 0)\n"
        "                out[name] = (result, ctypes.get_errno())\n"
        "            return json.dumps(out), 0.0, False"
    )
    config = dataclasses.replace(TIGHT, bubblewrap=False)  # seccomp alone must deny them
    result = json.loads(run_step(config, code))
    denied = {name: value for name, value in result.items() if value == [-1, 1]}
    assert denied == result, {k: v for k, v in result.items() if k not in denied}


def test_a_worker_that_cannot_start_says_why():
    config = dataclasses.replace(TIGHT, preload=("no_such_module_for_the_worker",))
    with pytest.raises(SandboxCrashed, match=r"(?s)failed to start.*No module named 'no_such_m"):
        with WorkerPool(config, size=0) as pool:
            pool.acquire()


@requires_root
def test_without_bubblewrap_as_root_with_python_under_root():
    """The bare-machine case: as root, no bubblewrap, the interpreter under /root (pyenv,
    conda). The worker drops its uid only after every import."""
    config = dataclasses.replace(TIGHT, bubblewrap=False)
    with WorkerPool(config, size=0) as pool:
        env = open_seed("NumberGuess", pool=pool)
        env.reset(seed=3)
        assert env.isolation["uid"] >= WORKER_UID_BASE and env.isolation["seccomp"] is True
        assert env.step(env.solution()[0])[0]
        env.close()


def test_validation_and_play_workers_get_the_same_command_line():
    """Nothing in argv tells a validation worker from a play worker (timeouts are the
    parent's business), so code cannot behave well only while it is being validated."""
    from spade_envs.validation.validator import validation_config

    play = dataclasses.replace(TIGHT, call_timeout=30.0, load_timeout=60.0, uid=123_456)
    check = dataclasses.replace(validation_config(TIGHT), uid=123_456)
    assert check.call_timeout != play.call_timeout
    play_argv, _ = isolation.worker_command(play)
    check_argv, _ = isolation.worker_command(check)
    assert play_argv == check_argv
    assert "timeout" not in play_argv[-1]
