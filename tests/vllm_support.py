"""What the tests of the real vLLM engine share (they run from ``.venv-vllm``).

``make test`` runs them in a second pytest from ``.venv-vllm`` (``-m vllm``); the main
suite deselects them (``-m "not vllm"``). In CI a missing vLLM fails instead of skipping.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

#: ``pytestmark`` of a module that starts a vLLM engine.
VLLM_MARKS = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None and not os.environ.get("CI"),
        reason="needs vLLM: run from .venv-vllm (make .venv-vllm)",
    ),
]

#: The engine settings of the tests: float32 (the transformers backend's dtype on a CPU,
#: so greedy replies can be compared), a small context and KV cache, no compilation,
#: weights that can be pushed (SmolLM2 ties its embeddings: an untied copy is served).
ENGINE = {
    "reloadable": True,
    "dtype": "float32",
    "max_model_len": 512,
    "enforce_eager": True,
    "kv_cache_memory_bytes": 1 << 30,
    # A small step budget: prefills of a batch do not fit in one step (see
    # test_seeded_sampling_survives_prefills_over_several_steps).
    "max_num_batched_tokens": 512,
    "seed": 0,
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: The generation pool's SkyPilot task, whose ``run`` script the tests start.
_ROOT = Path(__file__).resolve().parents[1]
POOL_TASK = _ROOT / "spade_envs" / "trainer" / "sky" / "pool" / "generation-pool.yaml"


#: ``vllm serve`` options for a small CPU: float32 (comparable with the transformers
#: backend), a short context, a 1 GiB KV cache, no compilation, a fixed seed.
CPU_SERVER_ARGS = (
    "--dtype", "float32", "--max-model-len", "2048", "--enforce-eager", "--seed", "0",
    "--kv-cache-memory-bytes", str(1 << 30),
)  # fmt: skip


@contextlib.contextmanager
def serving(
    command: list[str], port: int, log: Path, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Run ``command`` (a server listening on ``port`` of 127.0.0.1) until ``/health``
    answers; yields its URL and stops it afterwards. Its output goes to ``log``, shown
    when it fails to start."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", **(env or {})}
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"the server exited with {process.returncode}:\n{log.read_text()[-3000:]}"
                )
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server did not answer in 300 s:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
