"""Limits and isolation layers of the sandbox: one documented dataclass."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..error import SpadeError

__all__ = ["SandboxConfig"]


@dataclass(frozen=True)
class SandboxConfig:
    """How a sandbox worker is isolated and limited.

    Every layer is on by default and can be switched off one by one (the tests do,
    to check each layer alone). A layer this machine cannot provide is dropped
    with one loud warning, never silently.

    Attributes:
        bubblewrap: Run the worker under ``bwrap``: read-only root, private ``/tmp``,
            no network, new PID/IPC/UTS namespaces, home directories hidden, empty
            environment, dies with its parent.
        drop_uid: When started as root, switch the worker to ``uid``/``gid`` before any
            untrusted code runs (RLIMIT_NPROC does not apply to root).
        seccomp: Install the seccomp allow-list (:mod:`~spade_envs.sandbox.seccomp`):
            every system call not listed fails with ``EPERM``.
        rlimits: Apply the resource limits below.
        uid: The unprivileged user id for ``drop_uid``. ``None`` (the default) gives every
            worker a uid of its own from an unused range (see
            :func:`~spade_envs.sandbox.isolation.worker_uid`): RLIMIT_NPROC counts all
            processes of a uid on the machine, so with one shared uid (``nobody``) a few
            dozen busy workers would use up each other's limit and new workers would fail
            to start.
        gid: Its group id (65534 is ``nogroup``).
        memory_mb: Address-space limit of the worker (RLIMIT_AS).
        cpu_seconds: CPU-time limit of the worker over its whole life (RLIMIT_CPU).
        file_size_mb: Largest file the worker may write (RLIMIT_FSIZE).
        open_files: Most file descriptors the worker may hold (RLIMIT_NOFILE).
        max_processes: Most processes the worker's user may have (RLIMIT_NPROC,
            effective once the uid is dropped).
        tmp_size_mb: Size of the worker's private ``/tmp``.
        start_timeout: Wall-clock seconds a worker may take to start (generous: a busy
            machine can slow Python's start-up a lot, and that is not the code's fault).
        load_timeout: Wall-clock seconds for loading a module and building the env.
        call_timeout: Wall-clock seconds for any other call (reset, step, ...).
        max_message_bytes: Largest answer the worker may send (bounds observations
            and info dicts).
        max_source_chars: Largest module source the parent compiles for a worker.
        max_observation_chars: Longest observation accepted from the worker.
        extra_env: Extra environment variables for the worker (the rest is cleared).
        preload: Extra modules the worker imports before it drops privileges and
            installs seccomp (an environment's extra dependencies).
        read_only_paths: Extra paths the worker may read (bound read-only under
            bubblewrap, which otherwise shows only the interpreter and this package).
        zygote: Fork workers from pre-imported zygote processes (under bubblewrap only;
            each worker still gets namespaces, a uid, limits and seccomp of its own)
            instead of starting a new interpreter for each. False: every worker cold.
        insecure_no_isolation: Start workers even when neither bubblewrap nor seccomp is
            in effect (only rlimits, a dropped uid when root). Untrusted code could then
            read what this user reads and open sockets; off by default, and a worker
            refuses to start without it (``SandboxUnavailable``) in that case.
    """

    bubblewrap: bool = True
    drop_uid: bool = True
    seccomp: bool = True
    rlimits: bool = True
    uid: int | None = None
    gid: int = 65534
    memory_mb: int = 1024
    cpu_seconds: int = 600
    file_size_mb: int = 16
    open_files: int = 64
    max_processes: int = 64
    tmp_size_mb: int = 32
    start_timeout: float = 60.0
    load_timeout: float = 20.0
    call_timeout: float = 10.0
    max_message_bytes: int = 4_000_000
    max_source_chars: int = 1_000_000
    max_observation_chars: int = 65_536
    extra_env: dict[str, str] = field(default_factory=dict)
    preload: tuple[str, ...] = ()
    read_only_paths: tuple[str, ...] = ()
    zygote: bool = True
    insecure_no_isolation: bool = False

    def __post_init__(self) -> None:
        for name in (
            "memory_mb",
            "cpu_seconds",
            "file_size_mb",
            "open_files",
            "max_processes",
            "tmp_size_mb",
            "max_message_bytes",
            "max_source_chars",
            "max_observation_chars",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise SpadeError(f"SandboxConfig.{name} must be a positive int, got {value!r}.")
        if self.uid is not None and (
            isinstance(self.uid, bool) or not isinstance(self.uid, int) or self.uid <= 0
        ):
            raise SpadeError(
                f"SandboxConfig.uid must be a positive int (not root) or None, got {self.uid!r}."
            )
        for name in ("start_timeout", "load_timeout", "call_timeout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise SpadeError(f"SandboxConfig.{name} must be positive seconds, got {value!r}.")
        if self.memory_mb < 256:
            raise SpadeError(
                f"SandboxConfig.memory_mb={self.memory_mb} is too small for a Python worker "
                "(it needs about 200 MB of address space); use 256 or more."
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
