"""gym.make("spade/<Name>-v<N>") through the registry: sandboxed by default, in-process
for seeds (and for other code only with trust_code=True), the "module:id" form,
Gymnasium's own errors, and vector envs in subprocesses."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import gymnasium as gym
import pytest

import spade_envs
from spade_envs import GameSeatEnv, TextEnv, describe, seed_class
from spade_envs.error import UntrustedCodeError
from spade_envs.registry import Registry
from spade_envs.sandbox import SandboxedEnv
from spade_envs.seeds import seed_source


@pytest.fixture
def registry(monkeypatch, tmp_path):
    url = f"sqlite:///{tmp_path / 'gym.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    yield Registry(url)


def play_solution(env) -> float:
    env.reset(seed=5)
    total = 0.0
    for action in env.unwrapped.solution():
        total += env.step(action)[1]
    return total


def test_seeds_are_registered_on_first_use_and_sandboxed_by_default(registry):
    env = gym.make("spade/Mastermind-v1")
    assert isinstance(env.unwrapped, SandboxedEnv)
    assert play_solution(env) == 1.0
    env.close()
    record = registry.get("spade/Mastermind-v1")
    assert record.origin == "seed" and record.status == "validated"


def test_trusted_mode_and_module_form(registry):
    env = gym.make("spade_envs:spade/NumberGuess-v1", isolation="none", upper=10)
    assert isinstance(env.unwrapped, TextEnv) and env.unwrapped.upper == 10
    assert play_solution(env) == 1.0
    game = gym.make("spade/Nim-v1", isolation="none", opponent="random")
    assert isinstance(game.unwrapped, GameSeatEnv)


def test_new_versions_of_registered_code(registry):
    source = seed_source("LightsOut").replace("class LightsOut(", "class LampGrid(")
    meta = dataclasses.replace(describe(seed_class("LightsOut")), name="LampGrid")
    assert registry.register(source, meta).id == "spade/LampGrid-v1"
    record = registry.register(source + "\n# v2\n", meta)
    assert record.id == "spade/LampGrid-v2"
    # Not a packaged seed: in-process only when the caller says it trusts the code.
    with pytest.raises(UntrustedCodeError, match=r"spade/LampGrid-v2 is not a packaged seed"):
        gym.make("spade/LampGrid-v2", isolation="none")
    env = gym.make("spade/LampGrid-v2", isolation="none", trust_code=True)
    assert isinstance(env.unwrapped, TextEnv) and play_solution(env) == 1.0


def test_unknown_ids_raise_gymnasiums_errors_with_suggestions(registry):
    source = seed_source("Kayles").replace("class Kayles(", "class Skittles(")
    meta = dataclasses.replace(describe(seed_class("Kayles")), name="Skittles")
    registry.register(source, meta)
    registry.register(source + "\n#2\n", meta)
    with pytest.raises(gym.error.VersionNotFound, match=r"\[ `v1`, `v2` \]"):
        gym.make("spade/Skittles-v5")
    with pytest.raises(gym.error.NameNotFound, match="Did you mean: `Skittles`"):
        gym.make("spade/Skitles-v1")


def test_async_vector_env_over_four_registered_envs_in_a_fresh_process(registry):
    for name in ("NumberGuess", "Mastermind", "CodeTrace", "SequenceRule"):
        registry.register(seed_source(name), describe(seed_class(name)), status="validated")
    script = textwrap.dedent("""
        import gymnasium as gym
        import spade_envs
        ids = ["spade/NumberGuess-v1", "spade/Mastermind-v1", "spade/CodeTrace-v1",
               "spade/SequenceRule-v1"]
        vec = gym.vector.AsyncVectorEnv([lambda i=i: gym.make(i) for i in ids])
        observations, _ = vec.reset(seed=1)
        _, rewards, *_ = vec.step(("\\\\boxed{1}",) * 4)
        vec.close()
        print(len(observations), len(rewards))
        print(observations[1][:9])
    """)
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-2:] == ["4 4", "Mastermin"]


def test_make_vec_async_rebuilds_envs_from_their_id(registry):
    vec = gym.make_vec(
        "spade/NumberGuess-v1", num_envs=2, vectorization_mode="async", isolation="none"
    )
    observations, _ = vec.reset(seed=0)
    assert len(observations) == 2 and all("whole number" in o for o in observations)
    vec.close()


def test_import_stays_light():
    out = subprocess.run(
        [sys.executable, "-c", "import sys, spade_envs; print('sqlalchemy' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "False"
    assert spade_envs.__version__
