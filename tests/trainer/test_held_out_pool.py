"""Adversary review (commits after af3db19): envs_to_play + stages.suite_held_out.

Expected SAFE outcome: no version of a task that ``eval.suites`` evaluates on is ever drawn
into the self-play training pool. ``suite_held_out`` holds out only the *newest* version's
ID per task (``_suite_records``); an older validated version of the same suite task (a
re-import whose generated source differs: new package version, new import seed, ...) keeps
its own ID and its name is not held out, so it is still a pool candidate."""

from __future__ import annotations

import random

from spade_envs.core.metadata import EnvMetadata
from spade_envs.registry import Registry
from spade_envs.suites.evaluation import eval_set
from spade_envs.trainer.config_io import load_config
from spade_envs.trainer.setup import envs_to_play

SOURCE = "class RgHardLeak:\n    pass\n"


def _register(registry: Registry, source: str) -> str:
    meta = EnvMetadata(
        name="RgHardLeak",
        kind="text",
        skill="math",
        description="A held-out rg-hard task.",
        max_turns=2,
        reward_range=(0.0, 1.0),
        origin="imported",
    )
    extra = {"suite": {"task": "leak_task", "level": "hard", "category": "math"}}
    [record] = registry.register_many(
        [(source, meta)], status="validated", extra=extra, suite="reasoning-gym"
    )
    return record.id


def test_reimported_suite_task_older_version_is_not_trained_on(tmp_path):
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    try:
        old = _register(registry, SOURCE)
        new = _register(registry, SOURCE + "# re-imported (another package version)\n")
        assert old != new
        held = {t.env_id for t in eval_set("rg-hard", registry).tasks}
        assert held == {new}  # the evaluation plays the newest version of the task
        config = load_config(
            "cpu-test",
            ["agent.pool_envs=1000", "agent.pool_kinds=text,tool", "eval.suites=rg-hard"],
        )
        drawn = set(envs_to_play(config, registry, [], [], random.Random(0)))
    finally:
        registry.close()
    assert new not in drawn
    # SAFE: the same task's older version is held out too.
    assert old not in drawn
