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


def test_import_declares_the_seed_ids_without_a_database_or_the_seed_modules(tmp_path):
    code = (
        "import sys, gymnasium as gym, spade_envs\n"
        "print(sum(k.startswith('spade/') for k in gym.registry), 'spade/Nim-v1' in gym.registry)\n"
        "print([m for m in sys.modules if m.startswith('spade_envs.seeds.')])\n"
        "print([m for m in ('sqlite3', 'sqlalchemy') if m in sys.modules])"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "d")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.split("\n")[:3] == ["32 True", "[]", "[]"]
    assert list(tmp_path.iterdir()) == []  # no registry was opened or created
