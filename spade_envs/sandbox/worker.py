"""The sandbox worker: a child process that hosts one untrusted environment.

Started as ``python -m spade_envs.sandbox.worker '<json settings>'`` (inside
bubblewrap when available). Before reading any untrusted code it moves the
protocol onto private file descriptors, points stdin/stdout/stderr at /dev/null,
pre-imports what environments commonly use, drops root, applies resource limits
and installs a seccomp filter. Then it serves requests until its pipe closes.

Everything the worker sends is JSON; the parent validates it again, because code
running here may have tampered with anything in this process.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import marshal
import os
import resource
import sys
import traceback
import types
from typing import Any

# Modules environments commonly import, loaded while the worker may still read
# everything (after the uid drop some library paths can be unreadable).
_PRELOAD = (
    "random math re itertools functools collections dataclasses fractions decimal string "
    "heapq bisect typing enum textwrap statistics copy operator json abc numbers array "
    "datetime calendar unicodedata difflib hashlib inspect pprint resource socket"
).split()

# Syscalls no environment needs: creating processes, running programs, networking,
# debugging other processes, mounting, namespaces, privilege changes, kernel modules.
_DENIED_SYSCALLS = (
    "fork vfork clone execve execveat socket socketpair connect bind listen accept accept4 "
    "sendto sendmsg sendmmsg recvfrom recvmsg recvmmsg ptrace process_vm_readv process_vm_writev "
    "mount umount2 pivot_root chroot unshare setns kexec_load kexec_file_load init_module "
    "finit_module delete_module reboot swapon swapoff bpf perf_event_open keyctl add_key "
    "request_key userfaultfd personality setuid setgid setreuid setregid setresuid setresgid "
    "setgroups setfsuid setfsgid iopl ioperm open_by_handle_at name_to_handle_at acct "
    "settimeofday clock_settime adjtimex clock_adjtime mknod mknodat pidfd_open pidfd_getfd "
    "memfd_create"
).split()

_MAX_TEXT = 4000


class _BoundedSink:
    """Replaces sys.stdout/stderr: keeps only the last few KB of what code prints."""

    def __init__(self) -> None:
        self.tail = ""

    def write(self, text: str) -> int:
        text = str(text)
        self.tail = (self.tail + text)[-_MAX_TEXT:]
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        raise RuntimeError("could not drop root")


def _apply_rlimits(settings: dict[str, Any]) -> None:
    mb = 1024 * 1024
    limits = {
        resource.RLIMIT_AS: settings["memory_mb"] * mb,
        resource.RLIMIT_CPU: settings["cpu_seconds"],
        resource.RLIMIT_FSIZE: settings["file_size_mb"] * mb,
        resource.RLIMIT_NOFILE: settings["open_files"],
        resource.RLIMIT_NPROC: settings["max_processes"],
        resource.RLIMIT_CORE: 0,
    }
    for which, value in limits.items():
        soft, hard = resource.getrlimit(which)
        new_hard = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (new_hard, new_hard))


def _install_seccomp() -> None:
    import pyseccomp  # imported before the uid drop (see main)

    denied = pyseccomp.ERRNO(errno.EPERM)
    flt = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    for name in _DENIED_SYSCALLS:
        try:
            flt.add_rule(denied, name)
        except (OSError, ValueError, RuntimeError):
            pass  # not a syscall on this architecture
    try:  # glibc falls back from clone3 to clone on ENOSYS, which is then denied
        flt.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    except (OSError, ValueError, RuntimeError):
        pass
    flt.load()


def _jsonable(value: Any) -> Any:
    """Default hook for json: numpy scalars become Python numbers; anything else fails."""
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":
        return item()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class _Host:
    """The environment this worker hosts and the operations on it."""

    def __init__(self, sink: _BoundedSink) -> None:
        self.envs: list[Any] = []
        self.kind = ""
        self.sink = sink
        self._ended: list[bool] = []

    @property
    def env(self) -> Any:
        return self.envs[0]

    # ----- loading --------------------------------------------------------------------------
    def load(
        self,
        source: str,
        filename: str,
        knobs: dict,
        seat: int | None,
        opponent: str,
        code: str | None = None,
        copies: int = 1,
    ) -> dict[str, Any]:
        from spade_envs.core.game_env import GameSeatEnv
        from spade_envs.core.loader import find_env_class
        from spade_envs.core.metadata import describe
        from spade_envs.core.text_game import TextGame

        digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
        compiled_here = code is None
        if code is None:
            compiled = compile(source, filename, "exec")
        else:
            compiled = marshal.loads(base64.b64decode(code))
        name = f"spade_env_{digest[:16]}"
        module = types.ModuleType(name)
        module.__file__ = filename
        sys.modules[name] = module
        exec(compiled, module.__dict__)
        cls = find_env_class(module)
        meta = describe(cls).to_dict()
        self.cls, self.knobs = cls, dict(knobs)
        for _ in range(max(1, int(copies))):
            env = cls(**knobs)
            if isinstance(env, TextGame) and seat is not None:
                env = GameSeatEnv(env, seat=seat, opponent=opponent)
                meta.update(kind="text", max_turns=env.max_turns, description=env.description)
            self.envs.append(env)
        self._ended = [False] * len(self.envs)
        self.kind = "game" if isinstance(env, TextGame) else "env"
        meta["possible_agents"] = list(getattr(env, "possible_agents", []))
        meta["render_modes"] = list(env.metadata.get("render_modes", []))
        if meta["kind"] == "tool":
            meta["tool_schemas"] = env.function_schemas()
        if compiled_here:
            meta["code"] = base64.b64encode(marshal.dumps(compiled)).decode("ascii")
        return meta

    # ----- single-agent calls ---------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> Any:
        return list(self.env.reset(seed=seed, options=options))

    def step(self, action: str) -> Any:
        return list(self.env.step(action))

    def hint(self, agent: str | None = None) -> Any:
        return self.env.hint() if agent is None else self.env.hint(agent)

    def solution(self) -> Any:
        return self.env.solution()

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> Any:
        for env in self.envs:
            close = getattr(env, "close", None)
            if close:
                close()

    # ----- several copies, stepped as one batch (SandboxVectorEnv) --------------------------
    def vector_reset(self, seeds: list, options: dict | None = None) -> Any:
        self._ended = [False] * len(self.envs)
        return [list(env.reset(seed=seed, options=options)) for env, seed in zip(self.envs, seeds)]

    def vector_step(self, actions: list) -> Any:
        """Step every copy; a copy whose episode ended last time is reset instead
        (Gymnasium's next-step autoreset), with reward 0 and both flags False."""
        results = []
        for i, (env, action) in enumerate(zip(self.envs, actions)):
            if self._ended[i]:
                observation, info = env.reset()
                self._ended[i] = False
                results.append([observation, 0.0, False, False, info])
                continue
            result = list(env.step(action))
            self._ended[i] = bool(result[2] or result[3])
            results.append(result)
        return results

    # ----- games ----------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        g = self.env
        return {
            "agents": list(g.agents),
            "agent_selection": getattr(g, "agent_selection", None),
            "rewards": dict(g.rewards),
            "cumulative_rewards": dict(g._cumulative_rewards),
            "terminations": dict(g.terminations),
            "truncations": dict(g.truncations),
            "infos": dict(g.infos),
        }

    def game_reset(self, seed: int | None = None, options: dict | None = None) -> Any:
        self.env.reset(seed=seed, options=options)
        return self.snapshot()

    def game_step(self, action: str | None) -> Any:
        self.env.step(action)
        return self.snapshot()

    def observe(self, agent: str) -> Any:
        return str(self.env.observe(agent))

    def legal_moves(self, agent: str) -> Any:
        return self.env.legal_moves(agent)

    def best_move(self, agent: str) -> Any:
        return self.env.best_move(agent)

    def winning_line(self, agent: str) -> Any:
        return self.env.winning_line(agent)

    def output(self) -> Any:
        return self.sink.tail

    def run_check(self, name: str, budget: dict) -> Any:
        """One validation check on fresh instances of the loaded class."""
        from spade_envs.validation.checks import run_check

        return run_check(name, lambda: self.cls(**self.knobs), budget)


_OPERATIONS = (
    "load reset step hint solution render close game_reset game_step observe legal_moves "
    "best_move winning_line output vector_reset vector_step run_check"
).split()


def serve(channel: Any, host: _Host, max_bytes: int) -> None:
    """Answer requests until the parent closes the pipe."""
    from spade_envs.sandbox.wire import frame

    encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_jsonable)
    while True:
        try:
            request = channel.receive(deadline=None, max_bytes=1 << 30, what="a request")
        except Exception:
            return  # the parent is gone
        op = request.get("op")
        try:
            if op not in _OPERATIONS:
                raise ValueError(f"unknown operation {op!r}")
            result = getattr(host, op)(**request.get("args", {}))
            data = encoder.encode({"ok": True, "result": result}).encode("utf-8", "surrogatepass")
        except BaseException as exc:  # SystemExit and friends from env code included
            data = json.dumps({"ok": False, "error": _describe(exc)}).encode()
        if len(data) > max_bytes:
            # Still answer, so the parent can name the problem instead of seeing a kill.
            data = json.dumps(
                {
                    "ok": False,
                    "error": {
                        "type": "ResultTooLarge",
                        "message": f"{op}() returned {len(data)} bytes, "
                        f"over the {max_bytes}-byte limit",
                        "traceback": "",
                    },
                }
            ).encode()
        channel.send_bytes(frame(data))
        if op == "close":
            return


def _describe(exc: BaseException) -> dict[str, str]:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if isinstance(exc, TypeError) and "JSON serializable" in str(exc):
        return {"type": "UnserializableResult", "message": str(exc)[:_MAX_TEXT], "traceback": ""}
    return {
        "type": type(exc).__name__,
        "message": str(exc)[:_MAX_TEXT],
        "traceback": tb[-_MAX_TEXT:],
    }


def main() -> None:
    settings = json.loads(sys.argv[1])
    fd_in, fd_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    if not settings.get("debug"):
        os.dup2(devnull, 2)
    sink = _BoundedSink()
    sys.stdout = sink
    if not settings.get("debug"):
        sys.stderr = sink
    sys.stdin = None
    for name in _PRELOAD:
        __import__(name)
    for name in settings.get("preload", ()):
        __import__(name)
    if settings["seccomp"]:
        # After the uid drop the interpreter's own directory may be unreadable (Python
        # under /root, as with pyenv or conda): everything is imported before it.
        import pyseccomp  # noqa: F401
    import spade_envs  # noqa: F401  (protocol classes, before the uid drop)
    from spade_envs.core import game_env, loader, metadata  # noqa: F401
    from spade_envs.sandbox import wire

    layers = {"uid": os.getuid()}
    if settings["drop_uid"] and os.getuid() == 0:
        _drop_privileges(settings["uid"], settings["gid"])
        layers["uid"] = os.getuid()
    if settings["rlimits"]:
        _apply_rlimits(settings)
    layers["rlimits"] = settings["rlimits"]
    layers["seccomp"] = False
    if settings["seccomp"]:
        _install_seccomp()
        layers["seccomp"] = True
    layers["pid"] = os.getpid()
    channel = wire.Channel(fd_in, fd_out)
    channel.send({"ready": True, "layers": layers})
    serve(channel, _Host(sink), settings["max_message_bytes"])


if __name__ == "__main__":
    main()
