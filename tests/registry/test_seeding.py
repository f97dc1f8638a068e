"""The packaged seeds in a registry: given once on a user-facing open, recorded, and never
forced back; ``seeds=False`` (the default) opens a database as it is."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from sqlalchemy import text

from spade_envs.registry import Registry
from spade_envs.registry.seeding import recorded_seeds
from spade_envs.seeds import declared_seed_names, seed_names

from .test_migrations import make_old

SEEDS = 32


def test_declared_seed_names_match_the_seed_classes():
    assert len(declared_seed_names()) == SEEDS
    assert list(declared_seed_names()) == seed_names()


def test_a_fresh_registry_gets_every_seed_once(registry_url):
    assert Registry(registry_url).count() == 0  # the default opens the database as it is
    registry = Registry(registry_url, seeds=True)
    records = registry.list(sort="name", limit=100)
    assert [r.id for r in records] == [f"spade/{n}-v1" for n in seed_names()]
    assert {(r.origin, r.status) for r in records} == {("seed", "validated")}
    assert recorded_seeds(registry.engine) == set(seed_names())
    registry.close()
    again = Registry(registry_url, seeds=True)
    assert again.count() == SEEDS
    assert again.register_seeds(once=True) == 0
    again.close()


def test_a_retired_or_removed_seed_does_not_come_back(registry_url):
    registry = Registry(registry_url, seeds=True)
    registry.retire("spade/Nim-v1")
    with registry.engine.begin() as conn:  # a user removes one by hand
        conn.execute(text("DELETE FROM environments WHERE name = 'Chomp'"))
    registry.close()
    reopened = Registry(registry_url, seeds=True)
    assert reopened.count() == SEEDS - 1
    assert reopened.versions("Chomp") == []
    assert reopened.get("spade/Nim-v1").status == "retired"
    # The designer asks for every seed explicitly: that brings the removed one back.
    assert reopened.register_seeds() == 1
    assert reopened.versions("Chomp") == ["spade/Chomp-v1"]
    reopened.close()


def test_seeds_of_a_later_release_are_given_on_the_next_open(registry_url, monkeypatch):
    import spade_envs.seeds as seeds

    earlier = seeds.declared_seed_names()[:10]
    monkeypatch.setattr(seeds, "declared_seed_names", lambda: earlier)
    registry = Registry(registry_url, seeds=True)
    assert registry.count() == 10 and recorded_seeds(registry.engine) == set(earlier)
    registry.retire(f"spade/{earlier[0]}-v1")
    registry.close()
    monkeypatch.undo()
    upgraded = Registry(registry_url, seeds=True)
    assert upgraded.count() == SEEDS
    assert upgraded.get(f"spade/{earlier[0]}-v1").status == "retired"
    upgraded.close()


@pytest.mark.parametrize("version", [1, 3])
def test_an_upgraded_registry_gets_the_seeds_it_lacks(registry_url, version):
    make_old(registry_url, version)  # holds an old NumberGuess-v1
    assert Registry(registry_url).count() == 1  # upgraded, nothing added
    registry = Registry(registry_url, seeds=True)
    assert registry.count() == SEEDS
    assert registry.versions("NumberGuess") == ["spade/NumberGuess-v1"]
    assert registry.get("spade/NumberGuess-v1").description == "old row"
    registry.close()


def test_concurrent_first_opens_register_each_seed_once(registry_url):
    script = textwrap.dedent(f"""
        from spade_envs.registry import Registry
        Registry({registry_url!r}, seeds=True).close()
    """)
    Registry(registry_url).close()  # the schema exists: the race is about the seeds
    processes = [
        subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-2000:]
    registry = Registry(registry_url)
    assert registry.count() == SEEDS
    assert recorded_seeds(registry.engine) == set(seed_names())
    registry.close()


def test_gym_make_in_a_fresh_process_gives_a_fresh_registry_its_seeds(registry_url):
    script = textwrap.dedent("""
        import gymnasium as gym
        import spade_envs
        env = gym.make("spade/NumberGuess-v1", isolation="none")
        env.reset(seed=0)
        print(type(env.unwrapped).__name__)
    """)
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SPADE_REGISTRY_URL": registry_url},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["NumberGuess"]
    registry = Registry(registry_url)
    assert registry.count() == SEEDS
    registry.close()
