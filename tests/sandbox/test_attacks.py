"""The hostile corpus: every program in ``attacks/`` in every sandbox configuration.

Each program is one environment module written by an attacker who has read this
project's source. Its first line is its label::

    # attack: <category> expect: rejected [check, other-check]
    # attack: <category> expect: denied denied-unless: no-seccomp(socketpair) no-bwrap
    # attack: <category> expect: contained

- ``rejected``: :class:`~spade_envs.validation.Validator` must reject it. The checks in
  brackets (any one of them) must be among the failures, unless the static filter
  (``imports``/``no_input``) already rejected the source.
- ``denied``: the module attacks inside ``_reset()`` and returns a JSON observation
  ``{"attempt": "denied" | "ESCAPED: ..."}``; every attempt must be denied (a worker
  killed with SIGSYS, seccomp's answer to another ABI, denies them all). Attempts
  named under ``denied-unless: <config>(<attempt>, ...)`` may succeed in that
  configuration (``<config>`` alone: every attempt), because the layer that stops them
  is off there (say why in the program). Besides the program's own report, the runner
  checks the side effects itself: no connection reached its listeners, no file
  appeared or changed outside the sandbox, no secret came back.
- ``contained``: opening and playing it must end in a typed
  :class:`~spade_envs.error.SandboxError` (never a raw exception, never a hang), and
  the pool must still serve a seed afterwards.

``only: <config>,...`` after the label restricts a program to some configurations
(for programs whose attack does not depend on the sandbox layers at all).

Sources may name values of this test run as ``@@NAME@@`` (see :class:`Canaries`):
the port of a TCP listener, Unix sockets, a secret file next to the test's working
directory, the test process's pid.

Configurations (``SPADE_ATTACK_CONFIGS``, a comma list, restricts them, so CI can run
each as its own step): ``all`` (every layer), ``no-bwrap``, ``no-seccomp``, and for
``rejected`` programs ``static-off`` (every layer, ``Validator(static_gate=False)``).

Every program bounds itself (at most 20 forks, 2 GB, 10 s of CPU; network only to
127.0.0.1), so a sandbox bug fails a test instead of harming the machine.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import select
import socket
import stat
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

from spade_envs.error import SandboxCrashed, SandboxError
from spade_envs.sandbox import (
    SandboxConfig,
    SandboxedGame,
    WorkerPool,
    capabilities,
    open_env,
    open_seed,
)
from spade_envs.validation import Validator

# The whole matrix takes about four minutes on two busy cores (one minute per configuration).
pytestmark = pytest.mark.slow

ATTACKS = Path(__file__).with_name("attacks")

LABEL = re.compile(
    r"^# attack: (?P<category>[a-z0-9_-]+) expect: (?P<expect>rejected|denied|contained)"
    r"(?: \[(?P<checks>[a-z_, ]+)\])?"
    r"(?P<unless>(?: denied-unless:(?: [a-z-]+(?:\([a-z0-9_, ]+\))?)+))?"
    r"(?: only: (?P<only>[a-z, -]+))?"
    r"(?: residual: (?P<residual>.+?))?\s*$"
)
_UNLESS_ITEM = re.compile(r"([a-z-]+)(?:\(([a-z0-9_, ]+)\))?")

#: Limits of every worker here: generous for honest code, bounded for the machine.
LIMITS = dict(memory_mb=1024, cpu_seconds=60, call_timeout=10.0, load_timeout=10.0)
#: name -> (sandbox configuration, static gate on, layers the configuration needs)
CONFIGS: dict[str, tuple[SandboxConfig, bool, tuple[str, ...]]] = {
    "all": (SandboxConfig(**LIMITS), True, ("bubblewrap", "seccomp")),
    "no-bwrap": (SandboxConfig(bubblewrap=False, **LIMITS), True, ("seccomp",)),
    "no-seccomp": (SandboxConfig(seccomp=False, **LIMITS), True, ("bubblewrap",)),
    "static-off": (SandboxConfig(**LIMITS), False, ("bubblewrap", "seccomp")),
}
#: Wall-clock bound on opening and playing one program before it counts as a parent hang.
PLAY_SECONDS = 60.0
#: Control characters a terminal interprets (C0 but newline and tab, DEL, C1).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _selected() -> list[str]:
    wanted = os.environ.get("SPADE_ATTACK_CONFIGS", "").strip()
    names = [n.strip() for n in wanted.split(",") if n.strip()] if wanted else list(CONFIGS)
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise ValueError(f"SPADE_ATTACK_CONFIGS names unknown configurations: {unknown}")
    return names


@dataclasses.dataclass(frozen=True)
class Program:
    path: Path
    category: str
    expect: str
    checks: tuple[str, ...]
    allowed: dict[str, tuple[str, ...]]  # config -> attempts that may succeed ("*": all)
    only: tuple[str, ...]
    #: A hole known and written down in the closing note: the case is a strict xfail, so
    #: it shows in every run and turns red once the hole is closed.
    residual: str = ""

    @property
    def name(self) -> str:
        return self.path.stem

    def configs(self) -> list[str]:
        names = [n for n in CONFIGS if self.expect == "rejected" or n != "static-off"]
        return [n for n in names if not self.only or n in self.only]

    def may_escape(self, config: str, attempt: str) -> bool:
        allowed = self.allowed.get(config, ())
        return "*" in allowed or attempt in allowed


def parse_label(path: Path) -> Program:
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    match = LABEL.match(first)
    if not match:
        raise ValueError(f"{path.name}: malformed label {first!r}")
    allowed: dict[str, tuple[str, ...]] = {}
    if match["unless"]:
        body = match["unless"].split("denied-unless:", 1)[1]
        for config, names in _UNLESS_ITEM.findall(body):
            if config not in CONFIGS:
                raise ValueError(f"{path.name}: denied-unless names unknown config {config!r}")
            allowed[config] = tuple(n.strip() for n in names.split(",")) if names else ("*",)
    only = tuple(n.strip() for n in (match["only"] or "").split(",") if n.strip())
    checks = tuple(c.strip() for c in (match["checks"] or "").split(",") if c.strip())
    residual = (match["residual"] or "").strip()
    return Program(path, match["category"], match["expect"], checks, allowed, only, residual)


PROGRAMS = [parse_label(p) for p in sorted(ATTACKS.glob("*.py"))]
CASES = [
    pytest.param(
        program,
        config,
        id=f"{config}-{program.name}",
        marks=[pytest.mark.xfail(strict=True, reason=program.residual)] if program.residual else [],
    )
    for program in PROGRAMS
    for config in program.configs()
    if config in _selected()
]


# ----- the canaries: what an escape would touch, watched from outside -------------------------
class Canaries:
    """Listeners, secret files and marks an escaping program would reach.

    Substituted into sources as ``@@NAME@@``:

    - ``TCP_PORT``: a TCP listener on 127.0.0.1 (every accepted connection is counted);
    - ``UNIX_SOCKET``: a world-connectable AF_UNIX listener in the host's ``/tmp``;
    - ``BOUND_UNIX_SOCKET``: one inside ``sys.prefix``, a directory bubblewrap binds;
    - ``ABSTRACT_SOCKET``: an abstract-namespace AF_UNIX listener (name without NUL);
    - ``CANARY_FILE`` / ``CANARY_SECRET``: a world-readable secret in the test's cwd;
    - ``VICTIM_FILE``: a world-writable file in the cwd whose bytes, mode and mtime must
      not change;
    - ``HOST_TMP_MARK``, ``CWD_MARK``, ``PACKAGE_MARK``, ``MARK_NAME``: paths (and a bare
      name for /var/tmp and /dev/shm) that must not appear on the host;
    - ``CWD``: the test process's working directory; ``PARENT_PID``: its pid.
    """

    def __init__(self) -> None:
        import sys

        import spade_envs

        token = uuid.uuid4().hex[:12]
        self.token = token
        self.secret = f"spade-canary-secret-{uuid.uuid4().hex}"
        self.cwd = Path.cwd()
        self.dir = Path(tempfile.mkdtemp(prefix="spade-attack-"))
        os.chmod(self.dir, 0o755)
        self.accepted: dict[str, int] = {}
        self._lock = threading.Lock()
        self._listeners: dict[socket.socket, str] = {}
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", 0))
        self.tcp_port = tcp.getsockname()[1]
        self.unix_path = str(self.dir / "canary.sock")
        self.bound_unix_path = str(Path(sys.prefix) / f".spade-attack-{token}.sock")
        self.abstract_name = f"spade-attack-{token}"
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind(self.unix_path)
        os.chmod(self.unix_path, 0o777)
        abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        abstract.bind("\0" + self.abstract_name)
        listeners = [("tcp", tcp), ("unix", unix), ("abstract", abstract)]
        bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:  # a read-only installation has no such place; the attempt then finds nothing
            bound.bind(self.bound_unix_path)
            os.chmod(self.bound_unix_path, 0o777)
            listeners.append(("bound_unix", bound))
        except OSError:
            bound.close()
        for name, listener in listeners:
            listener.listen(16)
            listener.setblocking(False)
            self._listeners[listener] = name
            self.accepted[name] = 0
        self._stop = False
        self._thread = threading.Thread(target=self._accept, daemon=True, name="canaries")
        self._thread.start()

        self.canary_file = self.cwd / f".spade-attack-canary-{token}"
        self.canary_file.write_text(self.secret, encoding="utf-8")
        os.chmod(self.canary_file, 0o644)
        self.victim_file = self.cwd / f".spade-attack-victim-{token}"
        self.victim_file.write_text(f"victim {token}\n", encoding="utf-8")
        os.chmod(self.victim_file, 0o666)
        self.victim_state = self._victim()
        self.marks = [
            Path(f"/tmp/spade-attack-mark-{token}"),
            self.cwd / f".spade-attack-mark-{token}",
            Path(spade_envs.__file__).resolve().parent / f".spade-attack-mark-{token}",
            Path(f"/var/tmp/spade-attack-mark-{token}"),
            Path(f"/dev/shm/spade-attack-mark-{token}"),
        ]
        self.values = {
            "TCP_PORT": str(self.tcp_port),
            "UNIX_SOCKET": self.unix_path,
            "BOUND_UNIX_SOCKET": self.bound_unix_path,
            "ABSTRACT_SOCKET": self.abstract_name,
            "CANARY_FILE": str(self.canary_file),
            "CANARY_SECRET": self.secret,
            "VICTIM_FILE": str(self.victim_file),
            "HOST_TMP_MARK": str(self.marks[0]),
            "CWD_MARK": str(self.marks[1]),
            "PACKAGE_MARK": str(self.marks[2]),
            "MARK_NAME": f"spade-attack-mark-{token}",
            "CWD": str(self.cwd),
            "PARENT_PID": str(os.getpid()),
        }

    def _accept(self) -> None:
        # Keeps the backlogs short while a program runs; counting happens in _drain.
        while not self._stop:
            select.select(list(self._listeners), [], [], 0.2)
            self._drain()

    def _drain(self) -> None:
        """Accept and count every connection waiting now. Under the lock, so a connection
        the thread has taken off a queue is counted before anyone reads the counts."""
        with self._lock:
            for listener, name in self._listeners.items():
                while True:
                    try:
                        conn, _ = listener.accept()
                    except OSError:  # BlockingIOError: this queue is empty
                        break
                    self.accepted[name] += 1
                    conn.close()

    def _victim(self) -> tuple[bytes, int, int]:
        info = self.victim_file.stat()
        return self.victim_file.read_bytes(), stat.S_IMODE(info.st_mode), info.st_mtime_ns

    def source(self, program: Program) -> str:
        text = program.path.read_text(encoding="utf-8")
        for key, value in self.values.items():
            text = text.replace(f"@@{key}@@", value)
        leftover = re.findall(r"@@[A-Z_]+@@", text)
        assert not leftover, f"{program.name}: unknown placeholders {leftover}"
        return text

    def connections(self) -> dict[str, int]:
        """Connections made so far, per listener. No waiting: a connect() to a local
        listener that returned has put its connection on the listener's queue, and the
        program's call returned before this is read, so draining the queues finds it."""
        self._drain()
        with self._lock:
            return dict(self.accepted)

    def assert_no_new_connections(self, before: dict[str, int], program: Program, config: str):
        """No listener was reached, except one an attempt allowed in ``config`` reaches."""
        after = self.connections()
        reached = [name for name in after if after[name] != before[name]]
        allowed = {
            name for name, attempt in REACHED_BY.items() if program.may_escape(config, attempt)
        }
        unexpected = [name for name in reached if name not in allowed]
        assert not unexpected, f"{program.name} reached listeners on the host: {unexpected}"

    def assert_untouched(self, what: str) -> None:
        """No mark appeared on the host and the victim file is as it was."""
        found = [str(m) for m in self.marks if os.path.lexists(m)]
        for mark in found:
            Path(mark).unlink(missing_ok=True)
        assert not found, f"{what} wrote outside the sandbox: {found}"
        assert self._victim() == self.victim_state, f"{what} changed {self.victim_file}"

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=2)
        for listener in self._listeners:
            listener.close()
        for path in (self.unix_path, self.bound_unix_path):
            Path(path).unlink(missing_ok=True)
        for path in (self.canary_file, self.victim_file, *self.marks):
            path.unlink(missing_ok=True)
        self.dir.rmdir()


#: Listener -> the attempt that may reach it where a label allows that attempt. The Unix
#: socket inside sys.prefix is reachable without seccomp: a read-only bind does not stop
#: connect(), and network namespaces do not cover filesystem sockets.
REACHED_BY = {"bound_unix": "runner_socket_in_bound_dir"}


@pytest.fixture(scope="module")
def canaries():
    watched = Canaries()
    yield watched
    watched.close()


# ----- shared validators and pools, one per configuration ------------------------------------
def _require_layers(config: str) -> None:
    caps = capabilities()
    missing = [layer for layer in CONFIGS[config][2] if not getattr(caps, layer)]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"configuration {config} needs {missing}, which CI must provide")
        pytest.skip(f"configuration {config} needs {missing}, not usable on this machine")


@pytest.fixture(scope="module")
def validators():
    made: dict[str, Validator] = {}

    def get(config: str) -> Validator:
        _require_layers(config)
        if config not in made:
            sandbox, static_gate, _ = CONFIGS[config]
            made[config] = Validator("fast", config=sandbox, pool_size=2, static_gate=static_gate)
        return made[config]

    yield get
    for validator in made.values():
        validator.close()


@pytest.fixture(scope="module")
def pools():
    made: dict[str, WorkerPool] = {}

    def get(config: str) -> WorkerPool:
        _require_layers(config)
        if config not in made:
            made[config] = WorkerPool(CONFIGS[config][0], size=1)
        return made[config]

    yield get
    for pool in made.values():
        pool.close()


# ----- the corpus itself -----------------------------------------------------------------------
REQUIRED_CATEGORIES = {
    "forgery",
    "detection",
    "per-process",
    "peeking",
    "time-bomb",
    "info-lie",
    "hint-leak",
    "io-uring",
    "sockets",
    "launch-dir",
    "homes",
    "proc",
    "ptrace",
    "write",
    "processes",
    "wire",
    "terminal",
}


def test_the_corpus_is_labelled_and_large_enough():
    assert len(PROGRAMS) >= 30
    assert REQUIRED_CATEGORIES <= {p.category for p in PROGRAMS}
    for program in PROGRAMS:
        assert program.expect == "denied" or not program.allowed, program.name
        assert program.expect == "rejected" or not program.checks, program.name
        for config in program.only:
            assert config in CONFIGS, program.name


def test_the_canaries_count_a_connection_made_just_before_they_are_read(canaries):
    """The runner reads the counts right after a program's call returns, without waiting:
    a connection made just before must already be counted."""
    before = canaries.connections()
    with socket.create_connection(("127.0.0.1", canaries.tcp_port)):
        pass
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
        unix.connect(canaries.unix_path)
    after = canaries.connections()
    assert after["tcp"] == before["tcp"] + 1 and after["unix"] == before["unix"] + 1


@pytest.mark.parametrize("config", [c for c in CONFIGS if c in _selected()])
def test_an_honest_environment_validates(validators, config):
    """The control: each configuration can validate at all, so a rejection means something."""
    from spade_envs.seeds import seed_source

    report = validators(config).validate(seed_source("NumberGuess"))
    assert report.passed, report.summary()


#: Probes that must find something to take from a worker with no isolation layer at all
#: (only the uid drop and rlimits): proof that their attempts are real, not vacuous.
UNPROTECTED = SandboxConfig(bubblewrap=False, seccomp=False, insecure_no_isolation=True, **LIMITS)
REAL_PROBES = {
    "io_uring_sockets": "io_uring_connect_runner_tcp",
    "sockets_unix": "runner_socket_in_host_tmp",
    "sockets_inet": "runner_listener",
    "sockets_other": "socketpair",
    "read_launch_dir": "canary_next_to_cwd",
    "read_proc": "parent_cmdline",
    "processes_bounded": "fork",
}


@pytest.mark.skipif("all" not in _selected(), reason="runs with the 'all' configuration")
@pytest.mark.parametrize("name", sorted(REAL_PROBES))
def test_the_probes_escape_an_unprotected_worker(name, canaries):
    program = next(p for p in PROGRAMS if p.name == name)
    with WorkerPool(UNPROTECTED, size=0) as pool:
        env = open_env(canaries.source(program), pool=pool)
        try:
            observation, info = env.reset(seed=0)
        finally:
            env.close()
    verdicts = json.loads(observation)
    attempt = REAL_PROBES[name]
    if name == "read_proc" and not verdicts[attempt].startswith("ESCAPED"):
        # /proc shows uptime and boot time: the virtual clock's audit hook refuses it in
        # every worker, layers or not. The probe got as far as the open, so it is real.
        why = str((info.get("why") or {}).get(attempt, ""))
        assert "does not let environment code open /proc" in why, (verdicts, why)
        return
    assert verdicts[attempt].startswith("ESCAPED"), (verdicts, info.get("why"))


@pytest.mark.parametrize(("program", "config"), CASES)
def test_attack(program: Program, config: str, canaries, validators, pools):
    source = canaries.source(program)
    before = canaries.connections()
    if program.expect == "rejected":
        _rejected(program, config, source, validators(config))
    elif program.expect == "denied":
        _denied(program, config, source, pools(config), canaries)
    else:
        _contained(program, config, source, pools(config))
    canaries.assert_no_new_connections(before, program, config)
    canaries.assert_untouched(program.name)


def _rejected(program: Program, config: str, source: str, validator: Validator) -> None:
    report = validator.validate(source, filename=f"{program.name}.py")
    assert not report.passed, f"{program.name} was VALIDATED in {config}:\n{report.summary()}"
    failed = {c.name for c in report.failures}
    filtered = failed & {"imports", "no_input"}
    if program.checks and not filtered:
        assert failed & set(program.checks), (
            f"{program.name} was rejected, but not by {program.checks}:\n{report.summary()}"
        )
    _assert_bounded(program, report)
    try:  # the report is stored (registry), printed and written: it must be valid Unicode
        report.to_json().encode("utf-8")
    except UnicodeEncodeError as exc:
        raise AssertionError(f"the report of {program.name} is not valid Unicode: {exc}") from None
    if program.category == "terminal":
        for text in (report.summary(), report.feedback()):
            found = sorted(set(_CONTROL.findall(text)))
            assert not found, f"the report carries raw control characters {found!r}"


def _assert_bounded(program: Program, report) -> None:
    """What keeps a hostile validation short, read from its report rather than a clock:
    the ``fast`` budget's limits applied, and a hang costs one time-out, not one per check
    (the first call past its wall-clock limit skips every check after it)."""
    assert report.budget == "fast", report.budget
    timed_out = [
        i for i, c in enumerate(report.checks) if not c.skipped and "wall-clock" in c.reason
    ]
    assert len(timed_out) <= 1, f"{program.name} timed out more than once:\n{report.summary()}"
    if timed_out:
        assert all(c.skipped for c in report.checks[timed_out[0] + 1 :]), report.summary()


def _denied(program: Program, config: str, source: str, pool: WorkerPool, canaries) -> None:
    env = open_env(source, pool=pool, filename=f"{program.name}.py")
    try:
        observation, info = env.reset(seed=0)
    except SandboxCrashed as exc:
        # seccomp's kill action (a system call of another ABI) denies every attempt at once.
        assert "SIGSYS" in str(exc), f"{program.name} crashed the worker in {config}: {exc}"
        return
    finally:
        env.close()
    verdicts = json.loads(observation)
    why = info.get("why", {})
    assert isinstance(verdicts, dict) and verdicts, observation
    for attempt, verdict in verdicts.items():
        assert verdict == "denied" or verdict.startswith("ESCAPED"), (attempt, verdict)
    escaped = {
        attempt: verdict
        for attempt, verdict in verdicts.items()
        if verdict != "denied" and not program.may_escape(config, attempt)
    }
    assert not escaped, f"{program.name} escaped in {config}: {escaped} (denials: {why})"
    if not program.allowed.get(config):
        assert canaries.secret not in observation + json.dumps(why)


def _contained(program: Program, config: str, source: str, pool: WorkerPool) -> None:
    outcome: dict[str, BaseException | None] = {}

    def play() -> None:
        try:
            env = open_env(source, pool=pool, filename=f"{program.name}.py")
            try:
                if isinstance(env, SandboxedGame):
                    env.reset(seed=0)
                    for _ in range(3):
                        agent = env.agent_selection
                        env.observe(agent)
                        env.step(env.legal_moves(agent)[0])
                else:
                    env.reset(seed=0)
                    for action in ("", "\\boxed{1}", "go"):
                        env.step(action)
                    env.hint()
                    env.solution()
            finally:
                env.close()
        except BaseException as exc:  # judged below, in the test's thread
            outcome["raised"] = exc
        else:
            outcome["raised"] = None

    thread = threading.Thread(target=play, daemon=True, name=f"play-{program.name}")
    thread.start()
    thread.join(PLAY_SECONDS)
    assert not thread.is_alive(), f"the parent hung for {PLAY_SECONDS:.0f} s on {program.name}"
    raised = outcome["raised"]
    assert raised is not None, f"{program.name} opened and played without any error in {config}"
    assert isinstance(raised, SandboxError), (
        f"{program.name} raised a raw {type(raised).__module__}.{type(raised).__name__} "
        f"out of the sandbox in {config}: {str(raised)[:300]}"
    )
    env = open_seed("NumberGuess", pool=pool)
    try:
        env.reset(seed=1)
        rewards = [env.step(action)[1] for action in env.solution()]
        assert sum(rewards) == 1.0, "the pool no longer serves a working seed"
    finally:
        env.close()
