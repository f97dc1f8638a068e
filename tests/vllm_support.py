"""What the tests of the real vLLM engine share (they run from ``.venv-vllm``).

``make test`` runs them in a second pytest from ``.venv-vllm`` (``-m vllm``); the main
suite deselects them (``-m "not vllm"``). In CI a missing vLLM fails instead of skipping.
"""

from __future__ import annotations

import importlib.util
import os
import socket

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
