"""Which isolation layers this machine offers, and the command that starts a worker.

Each layer is probed once per process. A layer the configuration asks for but the
machine lacks is dropped with one loud warning (``SandboxWarning``); the sandbox
never silently runs with less than it was asked for.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..error import SandboxStartFailed, SandboxUnavailable
from .config import SandboxConfig

__all__ = [
    "SandboxWarning",
    "Capabilities",
    "capabilities",
    "worker_command",
    "worker_environment",
    "zygote_command",
]

log = logging.getLogger("spade_envs.sandbox")


class SandboxWarning(UserWarning):
    """An isolation layer was requested but is not available here."""


@dataclass(frozen=True)
class Capabilities:
    """What this machine can provide (probed once)."""

    bubblewrap: bool
    seccomp: bool
    root: bool
    bubblewrap_error: str = ""
    seccomp_error: str = ""


# A read-only view of the whole file system, a minimal /dev and the namespace's own /proc.
_BASE_MOUNTS = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")


def _probe_bubblewrap() -> tuple[bool, str]:
    path = shutil.which("bwrap")
    if path is None:
        return False, "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    cmd = [
        path,
        *_BASE_MOUNTS,
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--die-with-parent",
        "--",
        "/bin/true",
    ]
    if os.geteuid() != 0:
        cmd.insert(1, "--unshare-user")
    try:
        result = subprocess.run(cmd, capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap failed to start: {exc}"
    if result.returncode != 0:
        reason = result.stderr.decode(errors="replace").strip()[:200]
        return False, f"bwrap cannot create namespaces here ({reason})"
    return True, ""


def _probe_seccomp() -> tuple[bool, str]:
    try:
        import pyseccomp  # noqa: F401  (loads libseccomp through ctypes)
    except Exception as exc:
        return False, f"pyseccomp/libseccomp is not usable ({exc}); pip install pyseccomp"
    return True, ""


@functools.lru_cache(maxsize=1)
def capabilities() -> Capabilities:
    """Probe the machine once: bubblewrap, seccomp, running as root."""
    if not sys.platform.startswith("linux"):
        reason = f"only Linux is supported for bubblewrap and seccomp, this is {sys.platform}"
        return Capabilities(False, False, False, reason, reason)
    bwrap_ok, bwrap_error = _probe_bubblewrap()
    seccomp_ok, seccomp_error = _probe_seccomp()
    return Capabilities(bwrap_ok, seccomp_ok, os.geteuid() == 0, bwrap_error, seccomp_error)


_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    if key in _warned:
        return
    _warned.add(key)
    text = f"SANDBOX WEAKENED: {message}. Untrusted environment code runs with fewer protections."
    log.warning(text)
    warnings.warn(text, SandboxWarning, stacklevel=4)


def effective_layers(config: SandboxConfig) -> dict[str, bool]:
    """The layers that will actually be used: requested and available (warns otherwise)."""
    caps = capabilities()
    bubblewrap = config.bubblewrap and caps.bubblewrap
    if config.bubblewrap and not caps.bubblewrap:
        _warn_once("bwrap", f"no bubblewrap: {caps.bubblewrap_error}")
    seccomp = config.seccomp and caps.seccomp
    if config.seccomp and not caps.seccomp:
        _warn_once("seccomp", f"no seccomp filter: {caps.seccomp_error}")
    if not bubblewrap and not seccomp and not config.insecure_no_isolation:
        missing = "; ".join(
            reason
            for wanted, have, reason in (
                (config.bubblewrap, caps.bubblewrap, caps.bubblewrap_error or "switched off"),
                (config.seccomp, caps.seccomp, caps.seccomp_error or "switched off"),
            )
            if not (wanted and have)
        )
        raise SandboxUnavailable(
            "Refusing to run untrusted environment code: neither bubblewrap nor seccomp is "
            f"in effect ({missing}). Install them (Debian/Ubuntu: apt-get install bubblewrap "
            "libseccomp2; pip install pyseccomp), or pass "
            "SandboxConfig(insecure_no_isolation=True) to run with resource limits only."
        )
    return {
        "bubblewrap": bubblewrap,
        "seccomp": seccomp,
        "drop_uid": config.drop_uid and caps.root,
        "rlimits": config.rlimits,
    }


def worker_environment(config: SandboxConfig) -> dict[str, str]:
    """The worker's whole environment: nothing inherited from the parent."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",  # set iteration order identical across workers
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        # Matplotlib (which some suite tasks import) needs a writable config directory;
        # under bubblewrap /tmp is the private one it may write, and it makes no subdir.
        "MPLCONFIGDIR": "/tmp",
    }
    env.update(config.extra_env)
    return env


#: System directories the worker reads: the dynamic loader, libc, libseccomp, ldconfig.
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Single files of /etc the loader and the C library read.
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime")
#: Fresh, empty, writable file systems: /tmp (sized) and the usual runtime directories, so
#: nothing of the host's (sockets in /run, files in /var/tmp or /dev/shm) is visible.
SCRATCH_DIRS = ("/run", "/var/run", "/var/tmp", "/dev/shm")


def needed_paths(config: SandboxConfig | None = None) -> list[str]:
    """What the worker must read, and nothing more: the interpreter, its standard
    library and site-packages, this package, and ``config.read_only_paths``.

    Not ``sys.path`` as a whole: its first entry is the launching script's directory
    (or the current one), where a user keeps a ``.env``, a registry and checkpoints.
    """
    import site
    import sysconfig

    import spade_envs

    paths = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        str(Path(spade_envs.__file__).resolve().parent),
    }
    for scheme_vars in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        found = sysconfig.get_paths(vars=scheme_vars) if scheme_vars else sysconfig.get_paths()
        paths.update(found[key] for key in ("stdlib", "platstdlib", "purelib", "platlib"))
    try:
        paths.update(site.getsitepackages())
    except AttributeError:  # some embedded interpreters lack it
        pass
    if config is not None:
        paths.update(config.read_only_paths)
    real = {os.path.realpath(p) for p in paths if p and os.path.exists(p)}
    # Drop what an enclosing needed path already shows.
    return sorted(p for p in real if not any(_inside(p, q) for q in real if q != p))


def _inside(path: str, directory: str) -> bool:
    return directory == "/" or path.startswith(directory.rstrip(os.sep) + os.sep)


def _bind_with_parents(path: str, made: set[str]) -> list[str]:
    """``--ro-bind path path``, creating the directories above it as 0755 (bubblewrap would
    make them 0700, which the worker's unprivileged uid could not traverse)."""
    args: list[str] = []
    chain = []
    parent = os.path.dirname(path)
    while parent not in made and parent != "/":
        chain.append(parent)
        parent = os.path.dirname(parent)
    for directory in reversed(chain):
        args += ["--perms", "0755", "--dir", directory]
        made.add(directory)
    return args + ["--ro-bind", path, path]


def _bubblewrap_args(
    config: SandboxConfig, layers: dict[str, bool], capabilities: tuple[str, ...] | None = None
) -> list[str]:
    """bubblewrap's arguments up to its ``--``; ``capabilities`` replaces the uid-drop's."""
    args = [shutil.which("bwrap") or "bwrap"]
    system: list[str] = []
    for directory in _SYSTEM_DIRS:
        if os.path.islink(directory):  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            args += ["--ro-bind", directory, directory]
            system.append(directory)
    for file in _SYSTEM_FILES:
        if os.path.exists(file):
            args += ["--ro-bind", file, file]
    args += ["--dev", "/dev", "--proc", "/proc"]
    args += ["--perms", "1777", "--size", str(config.tmp_size_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    for scratch in SCRATCH_DIRS:
        args += ["--perms", "1777", "--size", str(1024 * 1024), "--tmpfs", scratch]
    made = {"/", "/tmp", "/etc", "/dev", "/proc", "/var", *SCRATCH_DIRS, *system}
    for path in needed_paths(config):
        if not any(_inside(path, s) for s in system):
            args += _bind_with_parents(path, made)
    args += [
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--chdir",
        "/tmp",
    ]
    if os.geteuid() != 0:
        args.append("--unshare-user")
    if capabilities is None and os.geteuid() == 0 and layers["drop_uid"]:
        # The worker drops to an unprivileged uid itself, once its imports are done.
        capabilities = ("CAP_SETUID", "CAP_SETGID")
    for capability in capabilities or ():
        args += ["--cap-add", capability]
    for key, value in worker_environment(config).items():
        args += ["--setenv", key, value]
    return args + ["--"]


#: The configuration fields a worker reads (see ``worker.main``).
_WORKER_SETTINGS = (
    "uid",
    "gid",
    "memory_mb",
    "cpu_seconds",
    "file_size_mb",
    "open_files",
    "max_processes",
    "max_message_bytes",
    "preload",
)

#: Per-worker uids come from [WORKER_UID_BASE, WORKER_UID_BASE + 2**30): far above the
#: uids and subuid ranges distributions hand out, and below the 32-bit ``(uid_t)-1``.
WORKER_UID_BASE = 1_000_000
_worker_serial = itertools.count()
#: Each uid this process handed out, and the worker (weakly) that runs under it.
_uid_holders: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def worker_uid() -> int:
    """A uid for one new worker: unique among the workers alive on this machine.

    Built from this process's pid (22 bits, Linux's maximum) and a per-process counter
    (8 bits), so two parents never hand out the same uid. The counter comes round after
    256 workers; a uid whose earlier worker still lives (a warm worker kept for an hour,
    an environment held open) is skipped, so no two live workers share a process limit
    or may signal each other. No passwd entry is needed: the kernel accepts any uid, and
    the worker reads only world-readable files.
    """
    for _ in range(256):
        plain = ((os.getpid() & 0x3FFFFF) << 8) | (next(_worker_serial) & 0xFF)
        uid = WORKER_UID_BASE + _permuted(plain)
        holder = _uid_holders.get(uid)
        if holder is None or holder.reaped:
            return uid
    log.warning("256 workers of this process are alive: two of them share a uid")
    return uid


def hold_uid(uid: int, worker: Any) -> None:
    """Record that ``worker`` runs under ``uid``: :func:`worker_uid` skips it until the
    worker's process is reaped (``worker.reaped``, read without polling the process, so
    safe from any thread)."""
    _uid_holders[uid] = worker


#: The uid permutation's key: one per machine, readable by root alone. Not bound into a
#: sandbox, and closed to workers' dropped uids without one. (The kernel's boot_id, the key
#: before, is world-readable: an environment that read it through ctypes could undo the
#: permutation and tell whose worker it was.)
UID_KEY_FILE = Path("/var/lib/spade-envs/uid-key")


_UID_KEY_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _uid_key() -> bytes:
    """A key shared by every parent on this machine (so uids stay unique across them)
    and unknown to workers. Only a root parent gives workers uids of their own; any
    other parent falls back to a fixed key, which then protects nothing.

    Raises:
        SandboxStartFailed: A root parent can neither read nor create the key file.
    """
    with _UID_KEY_LOCK:  # the pool's refill thread and a cold start can both get here first
        try:
            return UID_KEY_FILE.read_bytes()
        except OSError:
            pass
        if os.geteuid() != 0:
            return b"spade-envs"
        try:
            return _create_uid_key()
        except OSError as exc:
            raise SandboxStartFailed(
                f"Cannot create the sandbox's uid key {UID_KEY_FILE} ({exc.strerror}): a "
                "root parent keeps it there so that workers of different processes get "
                f"different uids. Make {UID_KEY_FILE.parent} writable by root (a read-only "
                "root file system: mount a small writable volume there), then try again."
            ) from exc


def _create_uid_key() -> bytes:
    UID_KEY_FILE.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # A draft of its own (another parent may be writing one), linked in place: the first
    # parent's key wins, and the others read it.
    fd, draft = tempfile.mkstemp(prefix=".uid-key.", dir=UID_KEY_FILE.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(32))
        try:
            os.link(draft, UID_KEY_FILE)
        except FileExistsError:
            pass
    finally:
        os.unlink(draft)
    return UID_KEY_FILE.read_bytes()


def _permuted(value: int) -> int:
    """A keyed permutation of 30-bit values (a four-round Feistel network): a worker's
    uid stays unique but no longer shows which process started it or how many workers
    came before it, which would tell a validator's worker from a rollout's."""
    key = _uid_key()
    left, right = value >> 15, value & 0x7FFF
    for round_ in range(4):
        digest = hashlib.sha256(key + bytes((round_,)) + right.to_bytes(2, "big")).digest()
        left, right = right, left ^ (int.from_bytes(digest[:2], "big") & 0x7FFF)
    return (left << 15) | right


def _worker_settings(config: SandboxConfig, layers: dict[str, bool], debug: bool) -> dict:
    # Only what the worker itself needs: no timeouts (the parent enforces them) or other
    # settings that would tell a validation worker from a play worker.
    settings = {key: getattr(config, key) for key in _WORKER_SETTINGS}
    settings.update(
        drop_uid=layers["drop_uid"],
        seccomp=layers["seccomp"],
        rlimits=layers["rlimits"],
        # Under bubblewrap the only writable place is the private /tmp.
        private_files=layers["bubblewrap"],
        debug=debug,
    )
    return settings


#: How a worker or zygote interpreter starts: no user site-packages, no bytecode files, and
#: (-P, Python 3.11+) no working directory on ``sys.path``. A worker starts as root, before
#: it drops its uid; without bubblewrap its working directory is the host's temporary
#: directory, where any local user could plant a module it would import (an adversary's
#: review). On 3.10, workers start in ``/`` instead (see ``worker_directory``).
_SAFE_PATH = sys.version_info >= (3, 11)
_PYTHON = (sys.executable, "-s", "-B", *(("-P",) if _SAFE_PATH else ()), "-m")


def worker_directory(layers: dict[str, bool]) -> str | None:
    """Where a cold worker starts: bubblewrap gives it a directory of its own; without it,
    the temporary directory, unless this Python cannot keep it off ``sys.path``."""
    if layers["bubblewrap"]:
        return None
    return tempfile.gettempdir() if _SAFE_PATH else "/"


def worker_command(
    config: SandboxConfig, *, debug: bool = False
) -> tuple[list[str], dict[str, bool]]:
    """The argv that starts a worker, and the layers it will have."""
    layers = effective_layers(config)
    settings = _worker_settings(config, layers, debug)
    if settings["uid"] is None:
        settings["uid"] = worker_uid()
    python = [*_PYTHON, "spade_envs.sandbox.worker", json.dumps(settings)]
    if layers["bubblewrap"]:
        return _bubblewrap_args(config, layers) + python, layers
    return python, layers


#: What a zygote needs to give each forked worker namespaces and mounts of its own, and
#: to empty its capability bounding set; every worker gives them all up before it serves.
ZYGOTE_CAPABILITIES = ("CAP_SYS_ADMIN", "CAP_SETPCAP", "CAP_SETUID", "CAP_SETGID")


def zygote_command(
    config: SandboxConfig, *, debug: bool = False
) -> tuple[list[str], dict[str, bool]] | None:
    """The argv that starts a zygote, and the layers of its workers; None without bubblewrap.

    A zygote runs only under bubblewrap: its workers' private ``/tmp`` and namespaces are
    made inside bubblewrap's view of the file system.
    """
    layers = effective_layers(config)
    if not layers["bubblewrap"]:
        return None
    settings = _worker_settings(config, layers, debug)
    settings["tmp_size_mb"] = config.tmp_size_mb
    python = [*_PYTHON, "spade_envs.sandbox.zygote_server", json.dumps(settings)]
    return _bubblewrap_args(config, layers, ZYGOTE_CAPABILITIES) + python, layers
