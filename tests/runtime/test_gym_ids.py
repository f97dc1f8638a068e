"""gym.make("spade/<Name>-v<N>") through the registry: sandboxed by default, in-process
for seeds (and for other code only with trust_code=True), the "module:id" form,
Gymnasium's own errors, and vector envs in subprocesses."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import warnings

import gymnasium as gym
import pytest

import spade_envs
import spade_envs.registry
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


def _lamp_grid(registry, versions=2, status="validated"):
    """``LampGrid`` (a LightsOut under another name, so not a seed) in ``versions`` versions."""
    source = seed_source("LightsOut").replace("class LightsOut(", "class LampGrid(")
    meta = dataclasses.replace(describe(seed_class("LightsOut")), name="LampGrid")
    return [
        registry.register(source + f"\n# v{v}\n", meta, status=status)
        for v in range(1, versions + 1)
    ]


def run_fresh(script: str, url: str) -> list[str]:
    """Run ``script`` in a fresh interpreter with ``SPADE_REGISTRY_URL=url``; its lines."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SPADE_REGISTRY_URL": url},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()


def test_gymnasium_lookups_see_spade_ids_in_a_fresh_process(registry_url):
    registry = Registry(registry_url)
    _lamp_grid(registry)
    registry.close()
    lines = run_fresh(
        """
        import sys
        import gymnasium as gym
        import spade_envs
        print("sqlalchemy" in sys.modules, "spade/NumberGuess-v1" in gym.registry,
              "spade/LampGrid-v2" in gym.registry)
        print(gym.spec("spade/NumberGuess-v1").entry_point)
        print(gym.spec("spade/LampGrid-v2").id, "spade/LampGrid-v2" in gym.registry)
        print(gym.envs.registration.spec("spade/LampGrid-v1").kwargs)
        for bad in ("spade/LampGrd-v1", "spade/LampGrid-v9", "spadez/LampGrid-v1"):
            try:
                gym.spec(bad)
            except gym.error.Error as exc:
                print(type(exc).__name__, exc)
        printed = gym.pprint_registry(disable_print=True)
        spade = printed[printed.index("===== spade ====="):].split()
        print(len([i for i in spade if i.startswith("spade/")]), "spade/LampGrid-v1" in spade)
        print(sum(k.startswith("spade/") for k in gym.registry))
        """,
        registry_url,
    )
    assert lines[0] == "False True False"  # seeds declared at import; no database read
    assert lines[1] == "spade_envs.runtime.gym_ids:make_env"
    assert lines[2] == "spade/LampGrid-v2 True"  # looked up from the registry on a miss
    assert lines[3] == "{'env_id': 'spade/LampGrid-v1'}"
    assert lines[4] == (
        "NameNotFound Environment `LampGrd` doesn't exist in namespace spade. "
        "Did you mean: `LampGrid`?"
    )
    assert lines[5] == (
        "VersionNotFound Environment version `v9` for environment `spade/LampGrid` doesn't "
        "exist. It provides versioned environments: [ `v1`, `v2` ]."
    )
    assert lines[6] == "NamespaceNotFound Namespace spadez not found. Did you mean: `spade`?"
    assert lines[7:] == ["34 True", "34"]  # 32 seeds + 2 versions, printed and registered


def test_gym_spec_of_a_seed_reads_no_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'never.db'}"
    lines = run_fresh(
        """
        import sys
        import gymnasium as gym
        import spade_envs
        from gymnasium import spec
        print(spec("spade/Mastermind-v1").id, gym.spec("spade/Nim-v1").name)
        print("sqlalchemy" in sys.modules)
        """,
        url,
    )
    assert lines == ["spade/Mastermind-v1 Nim", "False"]
    assert not (tmp_path / "never.db").exists()


def test_install_is_idempotent_and_keeps_gymnasiums_functions_wrapped_once():
    from gymnasium.envs import registration

    from spade_envs.runtime.gym_ids import install

    before = (registration._find_spec, gym.spec, gym.pprint_registry)
    install()
    assert (registration._find_spec, gym.spec, gym.pprint_registry) == before
    assert gym.spec is registration.spec is gym.envs.spec
    assert gym.pprint_registry is registration.pprint_registry
    assert getattr(gym.spec, "_spade_envs", False)
    assert "spade/NumberGuess-v1" in gym.registry
    assert gym.spec("CartPole-v1").id == "CartPole-v1"  # other IDs are untouched


def test_a_retired_version_still_makes_but_warns_naming_the_newest_validated(registry):
    _lamp_grid(registry, versions=3)
    registry.retire("spade/LampGrid-v1")
    registry.set_status("spade/LampGrid-v3", "candidate")
    with pytest.warns(
        spade_envs.registry.RetiredEnvWarning,
        match=r"^spade/LampGrid-v1 is retired: it still runs, but is no longer offered "
        r"\(listings hide it\)\. Use spade/LampGrid-v2, the newest validated version of "
        r"LampGrid, instead\.$",
    ) as caught:
        env = gym.make("spade/LampGrid-v1")
    retired = [w for w in caught if w.category is spade_envs.registry.RetiredEnvWarning]
    assert retired[0].filename == __file__  # attributed to the caller of gym.make
    assert play_solution(env) == 1.0
    env.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", spade_envs.registry.RetiredEnvWarning)
        gym.make("spade/LampGrid-v2").close()  # a validated one: no warning
        # A retired status is read again on each make: set back, it is not warned about.
        registry.set_status("spade/LampGrid-v1", "validated")
        gym.make("spade/LampGrid-v1").close()
    source = seed_source("Kayles").replace("class Kayles(", "class Pins(")
    meta = dataclasses.replace(describe(seed_class("Kayles")), name="Pins")
    registry.register(source, meta, status="validated")
    registry.retire("spade/Pins-v1")
    with pytest.warns(
        spade_envs.registry.RetiredEnvWarning,
        match=r"^spade/Pins-v1 is retired: .* No validated version of Pins is registered; "
        r"`spade-envs list` shows the versions that are offered\.$",
    ):
        gym.make("spade/Pins-v1").close()


def test_a_retired_seed_warns_on_gym_make(registry):
    registry.register_seeds()
    registry.retire("spade/NumberGuess-v1")
    with pytest.warns(spade_envs.registry.RetiredEnvWarning, match="NumberGuess-v1 is retired"):
        env = gym.make("spade/NumberGuess-v1", isolation="none")
    assert isinstance(env.unwrapped, TextEnv)
