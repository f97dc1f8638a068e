"""Shared helpers of the CLI tests: a fresh registry per test and a renamed seed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_envs.seeds import seed_source

#: NumberGuess's code under a name that is not a seed's: not trusted, runs sandboxed.
ORBIT = seed_source("NumberGuess").replace("class NumberGuess(", "class OrbitGuess(")


def orbit_file(tmp_path: Path) -> Path:
    """``ORBIT`` written to ``tmp_path/orbit.py``."""
    path = tmp_path / "orbit.py"
    path.write_text(ORBIT)
    return path


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    """A CliRunner whose registry commands use a fresh SQLite registry in ``tmp_path``,
    without the packaged seeds the CLI gives a new registry (the test registers what it
    counts; ``seeded_runner`` keeps them)."""
    from spade_envs.registry import Registry

    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setattr("spade_envs.cli.registry.open_registry", lambda **_: Registry())
    return CliRunner()


@pytest.fixture
def seeded_runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    """A CliRunner on a fresh registry in ``tmp_path``, opened as the CLI opens it (the
    file exists, as `spade-envs init` leaves it, but was never given the seeds: the
    CLI's first open gives them)."""
    from spade_envs.registry import Registry

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    Registry(url).close()
    return CliRunner()
