"""Importing suites into real registries: statuses, reasons, idempotence, interruption,
version changes, the suite filter, and gym.make on an imported ID in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from spade_envs.registry import Registry
from spade_envs.suites.importer import import_suite


def _by_task(results):
    return {(e.task, e.level): e for r in results for e in r.envs}


def test_gold_answers_win_so_the_tasks_are_validated(imported):
    url, results = imported
    envs = _by_task(results)
    for key in [
        ("basic_arithmetic", "0"),
        ("chain_sum", "hard"),
        ("graph_color", "0"),
        ("CRT", "0"),
    ]:
        assert envs[key].status == "validated", envs[key]
    registry = Registry(url)
    record = registry.get(envs[("CRT", "0")].env_id)
    assert record.origin == "imported" and record.suite == "rlve"
    assert record.extra["suite"] == {
        "id": "rlve",
        "task": "CRT",
        "level": "0",
        "version": "0.0.1",
        "distribution": "rlve-gym",
        "licence": "MIT",
        "homepage": "https://github.com/Zhiyuan-Zeng/RLVE",
    }
    assert registry.validations(record.id)[0].passed


def test_a_stored_problem_survives_the_registry_unchanged(registry):
    import types

    from spade_envs.suites import plan

    (spec,) = [s for s in plan("reasoning-gym", ["basic_arithmetic"], ["0"])[0]]
    record = registry.get("spade/RgBasicArithmeticL0-v1")
    assert record.source == spec.source
    module = types.ModuleType("m")
    exec(record.source, module.__dict__)
    assert module.RgBasicArithmeticL0.config == {"max_terms": 2, "max_digits": 1}
    env = module.RgBasicArithmeticL0()
    fresh = types.ModuleType("f")
    exec(spec.source, fresh.__dict__)
    assert env.reset(seed=9) == fresh.RgBasicArithmeticL0().reset(seed=9)


def test_tasks_with_nothing_to_replay_are_stored_unproven_never_validated(imported):
    url, results = imported
    envs = _by_task(results)
    for key in [("rush_hour", "0"), ("Knapsack", "0")]:
        env = envs[key]
        assert env.status == "unvalidated" and env.category == "unproven"
        assert "stores no" in env.reason or "no reference answer" in env.reason
    record = Registry(url).get(envs[("Knapsack", "0")].env_id)
    assert "no reference answer" in record.extra["suite"]["unproven"]
    counts = [r.counts() for r in results]
    assert counts[0]["unproven"] == 2 and counts[1]["unproven"] == 1  # rush_hour 0 and hard
    assert counts[0]["unavailable"] == 0  # all four tasks have an A.3 configuration


def test_the_suite_filter_and_counts(registry):
    rlve = registry.list(suite="rlve", limit=100)
    assert {r.name for r in rlve} == {"RlveCRTL0", "RlveKnapsackL0"}
    assert registry.counts()["suite"] == {"reasoning-gym": 8, "rlve": 2}
    assert registry.list(suite="reasoning-gym", status="validated", limit=100)


def test_reimport_is_idempotent(imported):
    url, _ = imported
    registry = Registry(url)
    before = registry.count()
    again = import_suite(registry, "rlve", tasks=["CRT", "Knapsack"], progress=False)
    assert again.counts()["already_registered"] == 2 and not any(e.new for e in again.envs)
    assert registry.count() == before


def test_an_interrupted_import_keeps_only_whole_versions_and_continues(tmp_path):
    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    seen = []

    def stop_after_first(done, total, env):
        seen.append(env)
        raise KeyboardInterrupt

    first = import_suite(
        registry, "rlve", tasks=["CRT", "TwoSAT", "Binario"], progress=stop_after_first
    )
    assert first.interrupted and len(first.envs) == 1
    assert registry.count() == 1
    assert registry.validations(first.envs[0].env_id), "a version was stored without its report"
    second = import_suite(registry, "rlve", tasks=["CRT", "TwoSAT", "Binario"], progress=False)
    assert second.counts()["already_registered"] == 1
    assert sum(e.new for e in second.envs) == 2 and registry.count() == 3


def test_a_new_suite_version_adds_versions_and_keeps_the_old(tmp_path, monkeypatch):
    from spade_envs.suites import rlve

    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    import_suite(registry, "rlve", tasks=["CRT"], progress=False)
    monkeypatch.setattr(rlve, "package_version", lambda: "0.0.2")
    later = import_suite(registry, "rlve", tasks=["CRT"], progress=False)
    assert later.envs[0].env_id == "spade/RlveCRTL0-v2"
    assert registry.versions("RlveCRTL0") == ["spade/RlveCRTL0-v1", "spade/RlveCRTL0-v2"]


def test_an_environment_whose_gold_fails_its_scorer_is_rejected_with_the_reason(tmp_path):
    # RLVE 0.0.1's PolyaModel scorer parses the whole output, tags included (it calls
    # _process, not processor), so its own reference answer never passes.
    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    result = import_suite(registry, "rlve", tasks=["PolyaModel"], progress=False)
    (env,) = result.envs
    assert env.status == "rejected" and env.category == "gold_fails_scorer"
    assert "its own gold answer" in env.reason and "under its own scorer, not 1" in env.reason
    assert result.rejected_by_reason() == {"gold_fails_scorer": 1}
    assert "rejected: spade/RlvePolyaModelL0-v1" in result.summary()
    assert "its own gold answer" in registry.get(env.env_id).extra["suite"]["rejected"]


def test_gym_make_plays_an_imported_id_sandboxed_in_a_fresh_process(imported):
    url, results = imported
    env_id = _by_task(results)[("chain_sum", "hard")].env_id
    code = (
        "import gymnasium as gym, spade_envs\n"
        f"env = gym.make({env_id!r})\n"
        "obs, info = env.reset(seed=4)\n"
        "print(type(env.unwrapped).__name__, 'Put your final answer' in obs, info['problem_seed'])\n"
    )
    env = {**os.environ, "SPADE_REGISTRY_URL": url, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.stdout.split() == ["SandboxedEnv", "True", "4"], done.stderr


@pytest.mark.parametrize("suite", ["reasoning-gym", "rlve"])
def test_import_into_sqlite_and_postgresql(registry_url, suite):
    registry = Registry(registry_url)
    task = "chain_sum" if suite == "reasoning-gym" else "CycleCounting"  # one right answer
    result = import_suite(registry, suite, tasks=[task], progress=False, seed=7)
    assert result.counts()["validated"] == 1
    assert [r.suite for r in registry.list(suite=suite)] == [suite]
