"""What the verifiers tests share: the venv verifiers lives in, a scripted model served
over our OpenAI-compatible server, and the runner (``verifiers_runner.py``) that plays
through verifiers in that venv.

verifiers 0.4 needs openai<3 (our .venv has 3.x), so it runs in ``.venv-verifiers``
(``make .venv-verifiers``; ``.ci/run`` builds it). In CI a missing venv fails the tests;
locally it skips them and says how to build it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from spade_envs.llm.server import serve

from ..agent.conftest import ScriptedModel

REPO = Path(__file__).resolve().parents[2]
VF_BIN = REPO / ".venv-verifiers" / "bin"
VF_PYTHON = VF_BIN / "python"
RUNNER = Path(__file__).with_name("verifiers_runner.py")


def require_verifiers_venv() -> None:
    if VF_PYTHON.exists():
        return
    message = f"{VF_PYTHON} is missing: build it with `make .venv-verifiers`"
    if os.environ.get("CI"):
        pytest.fail(message + " (.ci/run does this)")
    pytest.skip(message)


def vf_environ(**extra: str) -> dict[str, str]:
    """The environment of a verifiers process: its venv first on PATH (the null
    harness runs its chat loop with that venv's ``uv``), offline hub, our test key."""
    env = dict(os.environ)
    env["PATH"] = f"{VF_BIN}:{env.get('PATH', '')}"
    # The null harness starts its chat program (openai, mcp, httpx) once per model turn,
    # in a uv environment that `uv sync --script` leaves without bytecode; where
    # PYTHONDONTWRITEBYTECODE is set (as on the 2-core machines this suite is timed on),
    # every start compiled it all again: 2 s a turn instead of 1. verifiers syncs that
    # environment before the first turn of a process; this has the sync compile it
    # (once: later syncs find it compiled).
    env["UV_COMPILE_BYTECODE"] = "1"
    env["HF_HUB_OFFLINE"] = "1"
    env["SPADE_TEST_KEY"] = "unused"
    env.pop("VIRTUAL_ENV", None)
    env.update(extra)
    return env


class PlanModel(ScriptedModel):
    """A scripted model that answers the moves of the current plan, one per turn
    (``plan`` is set by the test before each task), or asks ``fallback``."""

    def __init__(self, fallback: Callable | None = None) -> None:
        super().__init__(self._reply)
        self.plan: list[str] = []
        self.fallback = fallback

    def _reply(self, conversation, seed):
        if not self.plan and self.fallback is not None:
            return self.fallback(conversation, seed)
        turn = sum(1 for m in conversation if m["role"] == "assistant")
        return self.plan[min(turn, len(self.plan) - 1)] if self.plan else "no idea"


def serve_model(model):
    """Our OpenAI-compatible server on 127.0.0.1 (a context manager)."""
    return serve(model, "127.0.0.1", 0)


class _Runner:
    """One ``verifiers_runner.py`` process, serving run after run (see its docstring)."""

    def __init__(self) -> None:
        # stderr to a file: verifiers logs freely, and a full pipe would stall the runs.
        self.log = tempfile.TemporaryFile()
        env = vf_environ()
        # Every request names its registry; a runner started during one test must not
        # carry that test's default registry into the next ones.
        env.pop("SPADE_REGISTRY_URL", None)
        self.proc = subprocess.Popen(
            [str(VF_PYTHON), str(RUNNER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
            cwd=REPO,
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_since(self, offset: int) -> str:
        # Read once the runner is dead: it shares the file's offset while it writes.
        self.log.seek(offset)
        return self.log.read().decode(errors="replace")

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()  # its loop ends with its input
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.log.close()


#: This pytest process's runner (each xdist worker has its own), started at the first
#: run; a run that did not end cleanly (a crash, its timeout, a failing test) kills it,
#: and the next run starts a fresh one.
_runner: _Runner | None = None


@atexit.register
def _close_runner() -> None:
    if _runner is not None:
        _runner.close()


def run_verifiers(
    args: dict,
    plans: Callable[[dict], list[str]] | None = None,
    model: PlanModel | None = None,
    timeout: float = 600,
) -> tuple[list[dict], dict | None, dict | None]:
    """Play ``args`` (a request of ``verifiers_runner.py``) through verifiers in its venv;
    with ``plans``, set ``model.plan`` before each task from its info (``env_id``,
    ``seed``). Returns (episodes, counts, refusal).

    Every call is a run of its own (its own Env, registry and served model), in a runner
    process that serves all the calls of this pytest process: starting Python and
    importing verifiers costs seconds, and is paid once."""
    global _runner
    require_verifiers_venv()
    if _runner is None or not _runner.alive():
        if _runner is not None:
            _runner.close()
        _runner = _Runner()
    runner, proc = _runner, _runner.proc
    offset = runner.log.seek(0, os.SEEK_END)
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    episodes, counts, refusal = [], None, None
    try:
        proc.stdin.write(json.dumps({**args, "step": plans is not None}) + "\n")
        proc.stdin.flush()
        for line in proc.stdout:
            if not line.startswith("{"):
                continue
            row = json.loads(line)
            if "next" in row:
                model.plan = plans(row["next"])
                proc.stdin.write("\n")
                proc.stdin.flush()
            elif "counts" in row:
                counts = row["counts"]
                break
            elif "error" in row:
                refusal = row
                break
            else:
                episodes.append(row)
    except BrokenPipeError:
        pass  # the runner had died: said below, with its stderr
    finally:
        watchdog.cancel()
        if counts is None and refusal is None:
            # Cut off mid-run (crashed, killed at its timeout, or this test failed while
            # it waited): never handed the next run.
            proc.kill()
            proc.wait()
    if counts is None and refusal is None:
        raise AssertionError(
            f"the verifiers runner failed ({proc.returncode}):\n"
            + runner.stderr_since(offset)[-4000:]
        )
    return episodes, counts, refusal
