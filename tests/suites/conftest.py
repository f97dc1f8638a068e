"""A small real import shared by the suite tests: a few reasoning-gym and RLVE tasks,
validated by the gate in the sandbox, in a SQLite registry made once per test session."""

from __future__ import annotations

import pytest

#: What the shared registry holds: (suite, tasks, levels).
SMALL_IMPORT = (
    ("reasoning-gym", ["basic_arithmetic", "chain_sum", "graph_color", "rush_hour"], ["0", "hard"]),
    ("rlve", ["CRT", "Knapsack"], ["0"]),
)


@pytest.fixture(scope="session")
def imported(tmp_path_factory):
    """``(url, results)``: a registry with :data:`SMALL_IMPORT` imported at the fast budget."""
    from spade_envs.registry import Registry
    from spade_envs.suites.importer import import_suite

    path = tmp_path_factory.mktemp("suites") / "registry.db"
    url = f"sqlite:///{path}"
    registry = Registry(url)
    results = [
        import_suite(
            registry,
            suite,
            tasks=tasks,
            levels=levels,
            budget="fast",
            seed=7,
            workers=1,
            progress=False,
        )
        for suite, tasks, levels in SMALL_IMPORT
    ]
    registry.close()
    return url, results


@pytest.fixture(autouse=True)
def one_validation_process(monkeypatch):
    """Imports validate in this process: the other xdist worker runs timing-sensitive
    validator tests, which extra validation processes would starve."""
    monkeypatch.setenv("SPADE_VALIDATION_WORKERS", "1")


@pytest.fixture
def registry(imported, monkeypatch):
    """The shared import's registry, also the default (``SPADE_REGISTRY_URL``)."""
    from spade_envs.registry import Registry

    url, _ = imported
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    reg = Registry(url)
    yield reg
    reg.close()
