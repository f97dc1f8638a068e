"""The play-time attack corpus through each integration: TRL's environment object,
OpenEnv's client over a real server and verifiers (in ``.venv-verifiers``) play through
the door, so a cheat that fires only
once played (a model's seconds between reset and step; a reset without a seed) does not
fire there either.

Bounded like every hostile test: one sandbox worker per play, the sandbox's limits
(``tests/runtime/test_play_attacks.py``'s ``LIMITS``).
"""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from openenv.core import GenericEnvClient

from spade_envs.integrations.trl import environment_factory
from spade_envs.sandbox import SandboxConfig
from spade_envs.web.config import ServeConfig

from ..runtime.test_play_attacks import LIMITS, WRONG, register
from ..web.conftest import stop
from .verifiers_support import PlanModel, run_verifiers, serve_model

ATTACKS = ("latency_dataclasses_time", "seedless_reset")


@pytest.fixture
def registry(tmp_path, monkeypatch):
    from spade_envs.registry import Registry

    url = f"sqlite:///{tmp_path / 'attacks.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    reg = Registry(url)
    yield reg
    reg.close()


@contextlib.contextmanager
def openenv_server(registry):
    """``spade-envs serve`` on a free port of 127.0.0.1, under the attack limits."""
    from spade_envs.web.server import make_server

    server = make_server(
        ServeConfig(port=0, quiet=True, embedder="hashing"),
        registry=registry,
        sandbox=SandboxConfig(**LIMITS),
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.port
    finally:
        stop(server, thread)


@pytest.mark.parametrize("stem", ATTACKS)
def test_attack_is_neutralized_through_trl(registry, stem):
    env_id = register(registry, stem)
    factory = environment_factory([env_id], registry=registry)
    env = factory()
    env.reset(env_id=env_id, seed=None)  # TRL passes no seed unless the row has one
    time.sleep(1.2)  # a model's reply time, in real seconds
    env.act(WRONG)
    assert env.rewards == [0.0] and env.get_reward() == 0.0
    assert factory.counts.wins == 0


@pytest.mark.parametrize("stem", ATTACKS)
def test_attack_is_neutralized_through_openenv(registry, stem):
    env_id = register(registry, stem)
    with openenv_server(registry) as port:
        base = f"http://127.0.0.1:{port}/api/v1/openenv/{env_id}"
        with GenericEnvClient(base_url=base).sync() as client:
            client.reset()  # no seed: the server draws one, as the door does
            time.sleep(1.2)
            step = client.step({"text": WRONG})
        assert step.reward == 0.0 and not step.observation["won"]


#: Cheats that fire once played (any answer wins on a fresh worker's first episode at a
#: small seed; after a date): every reset of TRL and OpenEnv is such a play, so their wins
#: are audited before they count.
CAUGHT = ("first_episode_small_seed", "date_fuse_static_type")


@pytest.mark.parametrize("stem", CAUGHT)
def test_cheat_is_quarantined_through_trl(registry, stem):
    env_id = register(registry, stem)
    factory = environment_factory([env_id], registry=registry)
    env = factory()
    env.reset(env_id=env_id, seed=0)
    env.act(WRONG)
    assert env.get_reward() is None  # the "win" never reaches TRL's advantage
    assert factory.counts.failed["audit_divergence"] == 1 and factory.counts.wins == 0
    assert registry.get(env_id).status == "quarantined"


@pytest.mark.parametrize("stem", CAUGHT)
def test_cheat_is_quarantined_through_openenv(registry, stem):
    env_id = register(registry, stem)
    with openenv_server(registry) as port:
        base = f"http://127.0.0.1:{port}/api/v1/openenv/{env_id}"
        with GenericEnvClient(base_url=base).sync() as client:
            client.reset(seed=0)
            with pytest.raises(RuntimeError, match="quarantined"):
                client.step({"text": WRONG})
        assert registry.get(env_id).status == "quarantined"


@pytest.mark.parametrize("stem", CAUGHT)
def test_cheat_is_quarantined_through_verifiers(registry, stem):
    env_id = register(registry, stem)
    model = PlanModel()
    model.plan = [WRONG]
    with serve_model(model) as server:
        episodes, counts, refusal = run_verifiers(
            {
                "registry": registry.url,
                "envs": [env_id],
                "seeds": [0],
                "base_url": f"{server.url}/v1",
                "model": model.name,
            }
        )
    assert refusal is None
    (episode,) = episodes
    # The "win" is audited before it is scored: an errored episode, never a reward.
    assert not episode["ok"] and "episode_return" not in episode["rewards"]
    assert any("audit_divergence" in e for e in episode["errors"])
    assert counts["spade/failed_audit_divergence"] == 1 and counts["spade/wins"] == 0
    assert registry.get(env_id).status == "quarantined"


@pytest.mark.parametrize("stem", ATTACKS)
def test_attack_is_neutralized_through_verifiers(registry, stem):
    env_id = register(registry, stem)
    model = PlanModel()
    model.plan = [WRONG]
    with serve_model(model) as server:
        episodes, counts, _ = run_verifiers(
            {
                "registry": registry.url,
                "envs": [env_id],
                "seeds": [5],
                "max_turns": 1,
                "base_url": f"{server.url}/v1",
                "model": model.name,
            }
        )
    (episode,) = episodes
    assert episode["ok"] and episode["rewards"]["episode_return"] == 0.0
    assert counts["spade/wins"] == 0


@pytest.mark.xfail(
    strict=True,
    reason="open: see tests/runtime/attacks/first_episode_shape.py; the integrations share "
    "the counterfactual audit that misses it",
)
def test_first_episode_shape_is_quarantined_through_the_shared_play_loop(registry):
    env_id = register(registry, "first_episode_shape")
    factory = environment_factory([env_id], registry=registry)
    env = factory()
    env.reset(env_id=env_id, seed=0)
    env.act("\\boxed{0}")  # 0 is never the secret (1..1000)
    assert env.get_reward() is None and registry.get(env_id).status == "quarantined"
