"""One episode per seed, whoever plays it: ``gym.make``, our rollouts, TRL's environment
object, OpenEnv's own client over a real server, and verifiers' ``Env.run_episode``
(in ``.venv-verifiers``, its model served over HTTP) give the same first observation and
the same rewards for the same ID, seed and actions.

The actions are each seed's reference solution, so every channel must show the win.
"""

from __future__ import annotations

import threading

import gymnasium as gym
import pytest
from openenv.core import GenericEnvClient

from spade_envs.agent import RolloutConfig, rollout
from spade_envs.integrations.trl import environment_factory
from spade_envs.runtime import register_seed
from spade_envs.web.config import ServeConfig

from ..agent.conftest import ScriptedModel
from ..play_support import play_episode, reference_solution
from ..web.conftest import stop
from .verifiers_support import PlanModel, run_verifiers, serve_model

SEEDS = (0, 13)


@pytest.fixture
def registry(tmp_path, monkeypatch):
    from spade_envs.registry import Registry

    url = f"sqlite:///{tmp_path / 'registry.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    reg = Registry(url)
    reg.ids = {name: register_seed(reg, name) for name in ("NumberGuess", "CounterfeitCoin")}
    yield reg
    reg.close()


def by_gym(env_id, seed, actions):
    return play_episode(gym.make(env_id), seed, actions)


def by_rollout(registry, env_id, seed, actions):
    def reply(conversation, _seed):
        return actions[(len(conversation) - 2) // 2]

    episode = rollout(
        ScriptedModel(reply),
        [env_id],
        config=RolloutConfig(env_seed=seed, max_turns=len(actions), audit_share=0.0),
        registry=registry,
    )[0]
    first = next(m["content"] for m in episode.messages[""] if m["role"] == "user")
    return first, [t.reward for t in episode.turns]


def by_trl(registry, env_id, seed, actions):
    env = environment_factory([env_id], registry=registry)()
    text = env.reset(env_id=env_id, seed=seed)
    for action in actions:
        env.act(action)
        if env.done:
            break
    env.get_reward()  # scores the play and stops its worker
    return text, env.rewards


def by_openenv(port, env_id, seed, actions):
    base = f"http://127.0.0.1:{port}/api/v1/openenv/{env_id}"
    with GenericEnvClient(base_url=base).sync() as client:
        first = client.reset(seed=seed).observation["text"]
        rewards = []
        for action in actions:
            step = client.step({"text": action})
            rewards.append(step.reward)
            if step.done:
                break
    return first, rewards


def by_verifiers(registry, plans):
    """Every (ID, seed) through verifiers in one run: the served model answers each
    task's planned actions (the runner waits for the plan before each task)."""
    model = PlanModel()
    with serve_model(model) as server:
        episodes, counts, refusal = run_verifiers(
            {
                "registry": registry.url,
                "envs": list(registry.ids.values()),
                "seeds": list(SEEDS),
                "base_url": f"{server.url}/v1",
                "model": model.name,
            },
            plans=lambda info: plans.get((info["env_id"], info["seed"]), ["pass"]),
            model=model,
        )
    assert refusal is None, refusal
    played = {}
    for episode in episodes:
        task = episode["task"]
        assert episode["ok"], episode["errors"]
        assert episode["spade"]["sha256"] == registry.get(task["env_id"]).sha256
        played[(task["env_id"], task["seed"])] = (episode["prompt"], episode["spade"]["rewards"])
    assert counts["spade/failed"] == 0
    return played


def test_every_integration_plays_the_same_episode_for_the_same_seed(registry):
    from spade_envs.web.server import make_server

    server = make_server(ServeConfig(port=0, quiet=True, embedder="hashing"), registry=registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    plans = {
        (env_id, seed): reference_solution(registry, env_id, seed)
        for env_id in registry.ids.values()
        for seed in SEEDS
    }
    verifiers = by_verifiers(registry, plans)
    try:
        for env_id in registry.ids.values():
            for seed in SEEDS:
                actions = plans[(env_id, seed)]
                first, rewards = by_gym(env_id, seed, actions)
                assert sum(rewards) > 0, "the reference solution wins its own episode"
                played = {
                    "rollout": by_rollout(registry, env_id, seed, actions),
                    "trl": by_trl(registry, env_id, seed, actions),
                    "openenv": by_openenv(server.port, env_id, seed, actions),
                    "verifiers": verifiers[(env_id, seed)],
                }
                for who, (text, got) in played.items():
                    assert first in text, f"{who}: another first observation for seed {seed}"
                    assert got == rewards, f"{who}: other rewards for {env_id} seed {seed}"
    finally:
        stop(server, thread)
