"""What tests that compare players share: an episode as the door plays it, and a
version's reference solution for a seed."""

from __future__ import annotations

from spade_envs.runtime import open_record


def play_episode(env, seed: int, actions: list[str]) -> tuple[str, list[float]]:
    """Play ``actions`` on an open environment from ``seed`` (stopping at the end of the
    episode) and close it: the first observation and the rewards."""
    try:
        first, _ = env.reset(seed=seed)
        rewards = []
        for action in actions:
            _, reward, terminated, truncated, _ = env.step(action)
            rewards.append(float(reward))
            if terminated or truncated:
                break
        return str(first), rewards
    finally:
        env.close()


def door_episode(registry, env_id: str, seed: int, actions: list[str]) -> tuple[str, list[float]]:
    """The first observation and the rewards the door gives (what ``gym.make`` plays)."""
    return play_episode(open_record(registry.get(env_id)), seed, actions)


def reference_solution(registry, env_id: str, seed: int) -> list[str]:
    """The version's reference solution for ``seed`` (it wins that episode)."""
    env = open_record(registry.get(env_id))
    try:
        env.reset(seed=seed)
        return list(env.solution())
    finally:
        env.close()
