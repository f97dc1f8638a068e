"""What the verifiers tests share: the venv verifiers lives in, a scripted model served
over our OpenAI-compatible server, and the runner (``verifiers_runner.py``) that plays
through verifiers in that venv.

verifiers 0.4 needs openai<3 (our .venv has 3.x), so it runs in ``.venv-verifiers``
(``make .venv-verifiers``; ``.ci/run`` builds it). In CI a missing venv fails the tests;
locally it skips them and says how to build it.
"""

from __future__ import annotations

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


def run_verifiers(
    args: dict,
    plans: Callable[[dict], list[str]] | None = None,
    model: PlanModel | None = None,
    timeout: float = 600,
) -> tuple[list[dict], dict | None, dict | None]:
    """Run the runner with ``args``; with ``plans``, set ``model.plan`` before each task
    from its info (``env_id``, ``seed``). Returns (episodes, counts, refusal)."""
    require_verifiers_venv()
    args = {**args, "step": plans is not None}
    # stderr to a file: verifiers logs freely, and a full pipe would stall the handshake.
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(
        [str(VF_PYTHON), str(RUNNER), json.dumps(args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=vf_environ(),
        cwd=REPO,
    )
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    episodes, counts, refusal = [], None, None
    try:
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
            elif "error" in row:
                refusal = row
            else:
                episodes.append(row)
        proc.wait(timeout=30)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
        log.seek(0)
        stderr = log.read()
        log.close()
    if refusal is None and proc.returncode != 0:
        raise AssertionError(f"the verifiers runner failed ({proc.returncode}):\n{stderr[-4000:]}")
    return episodes, counts, refusal
