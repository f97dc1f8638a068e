"""``import spade_envs`` stays light: no torch, transformers, vllm or skypilot."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "transformers", "vllm", "sky", "sentence_transformers", "sqlalchemy")


def test_import_does_not_load_heavy_libraries():
    code = f"import sys, spade_envs; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_public_api_names():
    import spade_envs

    for name in ("TextEnv", "ToolEnv", "TextGame", "make", "SpadeError"):
        assert hasattr(spade_envs, name)
    assert set(spade_envs.__all__) <= set(dir(spade_envs))
