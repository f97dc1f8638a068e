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
import hashlib
import json
import marshal
import os
import re
import resource
import sys
import traceback
import types
from typing import Any

# Modules environments commonly import (a superset of the validator's allow-list),
# loaded while the worker may still read everything: after the uid drop the
# interpreter's own directory can be unreadable, and the seccomp filter refuses
# nothing that reading them needs, but there is no reason to read them later.
PRELOAD = (
    "__future__ abc array bisect calendar cmath collections copy dataclasses datetime "
    "decimal difflib enum fractions functools hashlib heapq inspect itertools json math "
    "numbers operator pprint random re resource statistics string textwrap types typing "
    "unicodedata zlib"
).split()
#: The standard-library modules ``import math_verify`` (sympy, latex2sympy2_extended)
#: loads beyond PRELOAD. math_verify itself is imported by the environments that use it,
#: when they load (about 0.4 s); these cost every worker about 10 ms. Without bubblewrap
#: an interpreter under /root (pyenv) is unreadable after the uid drop, and the import
#: would fail on the first of them.
MATH_VERIFY_STDLIB = "colorsys csv email.parser importlib.metadata timeit".split()

_MAX_TEXT = 4000

#: A line that imports math_verify (``import math_verify``, ``from math_verify import``,
#: ``import re, math_verify``): such an environment gets it warmed before it loads.
_IMPORTS_MATH_VERIFY = re.compile(
    r"^[ \t]*(?:import[^\n#]*\bmath_verify\b|from[ \t]+math_verify\b)", re.M
)


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


def _disarm_alarm() -> None:
    """Make ``signal.alarm`` arm nothing and answer 0 (no earlier alarm pending).

    math_verify bounds ``parse()`` and ``verify()`` with ``signal.alarm`` (5 s), so an
    answer that is slow to compare would score 0 or not depending on the real time the
    call took: a reward a replay audit on a busier machine would not reproduce, and real
    time the virtual clock otherwise hides. The seccomp filter refuses alarm() anyway
    (which then arms nothing, without an error); this makes the configurations without
    seccomp behave the same. The parent's wall-clock limit on every call bounds a slow
    comparison instead (``SandboxTimeout``).
    """
    import operator
    import signal

    def alarm(seconds: int, /) -> int:
        operator.index(seconds)  # the same TypeError as the real one for a non-integer
        return 0

    signal.alarm = alarm


def _warm_math_verify() -> None:
    """Import math_verify and grade one answer, before the environment's code runs.

    Its first ``parse()`` builds the LaTeX grammar and sympy's caches: 0.1 s of CPU on a
    quiet machine, past the 0.5 s a ``step()`` may take on a loaded one. Paid here, it
    counts against loading (which is allowed seconds) and the environment's first
    ``step()`` costs what its others do. It runs before the environment's code, so nothing
    that code does to the module can change what this call does.
    """
    import math_verify

    math_verify.verify(math_verify.parse("$\\frac{1}{2}$"), math_verify.parse("$0.5$"))


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


def _jsonable(value: Any) -> Any:
    """Default hook for json: numpy scalars become Python numbers; anything else fails."""
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":
        return item()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class _Host:
    """The environment this worker hosts and the operations on it."""

    def __init__(self, sink: _BoundedSink, clock: Any = None) -> None:
        self.envs: list[Any] = []
        self.kind = ""
        self.sink = sink
        self._ended: list[bool] = []
        # The virtual clock (sandbox.vclock), restarted at every reset; each copy of a
        # vector env keeps its own reading of it. None: the real clock (tests of the host).
        self.clock = clock
        self._clocks: list[tuple[int, float]] = []

    def _restart_clock(self) -> None:
        if self.clock is not None:
            self.clock.restart()

    def _on_copy(self, index: int, call: Any) -> Any:
        """Run ``call`` with copy ``index``'s clock (copies share one process clock)."""
        if self.clock is None:
            return call()
        self.clock.reads, self.clock.slept = self._clocks[index]
        try:
            return call()
        finally:
            self._clocks[index] = (self.clock.reads, self.clock.slept)

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
        from spade_envs.core.dialect import prepare_namespace
        from spade_envs.core.game_env import GameSeatEnv
        from spade_envs.core.loader import find_env_class
        from spade_envs.core.metadata import describe
        from spade_envs.core.text_game import TextGame

        digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
        # The parent compiles (it never takes code back from a worker, which could have
        # patched marshal); a worker given no code compiles the source itself.
        from spade_envs.sandbox.pool import MODULE_FILENAME

        if code is None:
            compiled = compile(source, MODULE_FILENAME, "exec")
        else:
            compiled = marshal.loads(base64.b64decode(code))
        name = f"spade_env_{digest[:16]}"
        module = types.ModuleType(name)
        module.__file__ = MODULE_FILENAME  # the same whoever loads it
        sys.modules[name] = module
        # A SPADE-dialect module finds the names SPADE's loader predefines (only modules
        # it could import anyway) and ToolUseBaseEnv.
        dialect = prepare_namespace(module.__dict__, source)
        if _IMPORTS_MATH_VERIFY.search(source):
            _warm_math_verify()
        exec(compiled, module.__dict__)
        cls = find_env_class(module, dialect)
        meta = describe(cls).to_dict()
        self.cls, self.knobs = cls, dict(knobs)
        agents: list[str] = []
        self._restart_clock()
        for _ in range(max(1, int(copies))):
            env = cls(**knobs)
            if isinstance(env, TextGame):
                agents = list(env.possible_agents)
                if seat is not None:
                    env = GameSeatEnv(env, seat=seat, opponent=opponent)
                    meta.update(kind="text", max_turns=env.max_turns, description=env.description)
            self.envs.append(env)
        self._ended = [False] * len(self.envs)
        self._clocks = [(0, 0.0)] * len(self.envs)
        self.kind = "game" if isinstance(env, TextGame) else "env"
        meta["possible_agents"] = agents
        meta["render_modes"] = list(env.metadata.get("render_modes", []))
        if meta["kind"] == "tool":
            meta["tool_schemas"] = env.function_schemas()
        elif callable(getattr(env, "spade_tool_schemas", None)):
            # A SPADE tool game lists its tools only after a reset: the probes must know
            # them as they know a ToolEnv's (a tool may be the way to a wrong win).
            meta["tool_schemas"] = env.spade_tool_schemas()
        return meta

    # ----- single-agent calls ---------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> Any:
        self._restart_clock()
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
        self._clocks = [(0, 0.0)] * len(self.envs)
        return [
            self._on_copy(
                i,
                lambda env=env, seed=seed: self._guarded(
                    lambda: list(env.reset(seed=seed, options=options))
                ),
            )
            for i, (env, seed) in enumerate(zip(self.envs, seeds))
        ]

    def vector_step(self, actions: list, seeds: list | None = None) -> Any:
        """Step every copy; a copy whose episode ended last time is reset instead
        (Gymnasium's next-step autoreset) with its seed from ``seeds`` (the parent draws
        them), with reward 0 and both flags False. A copy whose code raised answers
        ``{"error": ...}`` and is reset on its next step."""
        results = []
        seeds = list(seeds or [])
        for i, (env, action) in enumerate(zip(self.envs, actions)):
            if self._ended[i]:
                self._ended[i] = False
                seed = seeds[i] if i < len(seeds) else None
                self._clocks[i] = (0, 0.0)
                row = self._on_copy(
                    i,
                    lambda env=env, seed=seed: self._guarded(lambda: [*env.reset(seed=seed), None]),
                )
                if isinstance(row, list):
                    row = [row[0], 0.0, False, False, row[1]]
                else:
                    self._ended[i] = True
                results.append(row)
                continue
            row = self._on_copy(
                i, lambda env=env, action=action: self._guarded(lambda: list(env.step(action)))
            )
            self._ended[i] = not isinstance(row, list) or bool(row[2] or row[3])
            results.append(row)
        return results

    @staticmethod
    def _guarded(call: Any) -> Any:
        """One copy's answer, or its error: one failing copy does not end the batch."""
        try:
            return call()
        except Exception as exc:
            return {"error": _describe(exc)}

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
        self._restart_clock()
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

    # ----- fresh instances and self-reports, for the validating parent -------------------
    def renew(self, seat: int | None = None, opponent: str = "best") -> dict[str, Any]:
        """Replace the hosted environment by a fresh instance of the loaded class.

        The validator asks for fresh instances (and other seats or opponents) without
        paying for a new worker. The answer is metadata the parent checks again.
        """
        from spade_envs.core.game_env import GameSeatEnv
        from spade_envs.core.text_game import TextGame

        for env in self.envs:
            close = getattr(env, "close", None)
            if close:
                try:
                    close()
                except Exception:
                    pass
        self._restart_clock()
        env = self.cls(**self.knobs)
        meta: dict[str, Any] = {}
        if isinstance(env, TextGame) and seat is not None:
            env = GameSeatEnv(env, seat=seat, opponent=opponent)
            meta.update(kind="text", max_turns=env.max_turns)
        self.envs = [env]
        self._ended = [False]
        self._clocks = [(0, 0.0)]
        return meta

    def claims(self) -> dict[str, Any]:
        """What the environment says about its own episode (``won``, already over).

        Self-reports: the parent uses them only to reject, never to accept.
        """
        env = self.env
        return {
            "won": bool(getattr(env, "won", False)),
            "ended": getattr(env, "_ended", None) is not None,
        }


_OPERATIONS = (
    "load reset step hint solution render close game_reset game_step observe legal_moves "
    "best_move winning_line output vector_reset vector_step renew claims"
).split()


def serve(channel: Any, host: _Host, max_bytes: int) -> None:
    """Answer requests until the parent closes the pipe."""
    from spade_envs.sandbox.wire import frame

    # allow_nan=False: NaN and infinity are not JSON; the parent would have to guess.
    encoder = json.JSONEncoder(
        ensure_ascii=False, separators=(",", ":"), default=_jsonable, allow_nan=False
    )
    while True:
        try:
            request = channel.receive(deadline=None, max_bytes=1 << 30, what="a request")
        except Exception:
            return  # the parent is gone
        op = request.get("op") if isinstance(request, dict) else None
        try:
            if op not in _OPERATIONS:
                raise ValueError(f"unknown operation {op!r}")
            result = getattr(host, op)(**request.get("args", {}))
        except BaseException as exc:  # SystemExit and friends from env code included
            data = json.dumps({"ok": False, "error": _describe(exc)}, ensure_ascii=False).encode()
        else:
            try:
                data = encoder.encode({"ok": True, "result": result})
                data = data.encode("utf-8")  # strict: a lone surrogate is not text
            except (TypeError, ValueError, RecursionError) as exc:
                error = {
                    "type": "UnserializableResult",
                    "message": f"{op}() returned a value that cannot cross the wire "
                    f"({_plain(str(exc)[:_MAX_TEXT])}): a reward must be a finite number and "
                    "observations, info and answers plain JSON values (no NaN, infinity, "
                    "cycles or objects)",
                    "traceback": "",
                }
                data = json.dumps({"ok": False, "error": error}, ensure_ascii=False).encode()
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
    return {
        "type": _plain(type(exc).__name__),
        "message": _plain(str(exc)[:_MAX_TEXT]),
        "traceback": _plain(tb[-_MAX_TEXT:]),
    }


def _plain(text: str) -> str:
    """``text`` with lone surrogates written out (``\\udc80``): valid UTF-8 for the wire."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def quiet_stdio() -> tuple[int, _BoundedSink]:
    """Point stdin and stdout at /dev/null and ``sys.stdout`` at a bounded sink.

    Returns /dev/null's descriptor (stderr goes there once the worker is ready).
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    sink = _BoundedSink()
    sys.stdout = sink
    sys.stdin = None
    return devnull, sink


def preload(settings: dict[str, Any]) -> None:
    """Import what every worker needs, while the whole interpreter can still be read.

    A cold worker does this itself; a zygote does it once for all the workers it forks.
    """
    for name in (*PRELOAD, *MATH_VERIFY_STDLIB):
        __import__(name)
    for name in settings.get("preload", ()):
        __import__(name)
    if settings["seccomp"]:
        import pyseccomp  # noqa: F401  (finds libseccomp through ldconfig: before the drop)

        from spade_envs.sandbox import seccomp  # noqa: F401
    os.environ["SPADE_ENVS_SANDBOX_WORKER"] = "1"  # no Gymnasium ID lookups in a worker
    import spade_envs  # noqa: F401  (protocol classes, before the uid drop)
    from spade_envs.core import game_env, loader, metadata  # noqa: F401
    from spade_envs.sandbox import vclock, wire  # noqa: F401


def enter(
    settings: dict[str, Any],
    fd_in: int,
    fd_out: int,
    devnull: int,
    sink: _BoundedSink,
    layers: dict[str, Any] | None = None,
) -> None:
    """Lock this process down (virtual clock, uid, limits, seccomp), say ready, serve.

    ``layers`` adds what the caller already put in place (a forked worker's namespaces).
    """
    from spade_envs.sandbox import vclock, wire

    # Before any environment code, while the standard library can still be read: every
    # Python-level clock the environment can reach becomes the virtual one.
    clock = vclock.install()
    _disarm_alarm()
    layers = {**(layers or {}), "uid": os.getuid()}
    if settings["drop_uid"] and os.getuid() == 0:
        _drop_privileges(settings["uid"], settings["gid"])
        layers["uid"] = os.getuid()
    if settings["rlimits"]:
        _apply_rlimits(settings)
    layers["rlimits"] = settings["rlimits"]
    layers["seccomp"] = False
    if settings["seccomp"]:
        from spade_envs.sandbox import seccomp

        seccomp.install(writable_files=bool(settings.get("private_files")))
        layers["seccomp"] = True
    layers["pid"] = os.getpid()
    if not settings.get("debug"):
        os.dup2(devnull, 2)
        sys.stderr = sink
    channel = wire.Channel(fd_in, fd_out)
    channel.send({"ready": True, "layers": layers})
    serve(channel, _Host(sink, clock), settings["max_message_bytes"])


def main() -> None:
    settings = json.loads(sys.argv[1])
    fd_in, fd_out = os.dup(0), os.dup(1)
    devnull, sink = quiet_stdio()
    # Until the worker is ready, stderr stays the parent's start-up log: a worker that
    # cannot start says why there (an import error, a failed uid drop).
    preload(settings)
    enter(settings, fd_in, fd_out, devnull, sink)


if __name__ == "__main__":
    main()
