"""How fast do seed environments step in-process, against CartPole measured in the same run?

Prints, for every seed, the median time of one ``step`` while playing its solution
(reset excluded) and the ratio to a CartPole-v1 step timed in the same run (the
machine is noisy; the ratio is what to compare across runs).

    python benchmarks/seed_step_speed.py [--episodes 30]
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym

import spade_envs
from spade_envs import GameSeatEnv, TextGame


def cartpole_step_seconds(steps: int = 20_000) -> float:
    env = gym.make("CartPole-v1").unwrapped
    env.reset(seed=0)
    samples = []
    for _ in range(steps):
        start = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(0)
        samples.append(time.perf_counter() - start)
        if terminated or truncated:
            env.reset()
    return statistics.median(samples)


def seed_step_seconds(name: str, episodes: int) -> tuple[float, float]:
    """Median step time and median reset time over ``episodes`` solution episodes."""
    env = spade_envs.make(name)
    if isinstance(env, TextGame):
        env = GameSeatEnv(env, opponent="random")
    steps, resets = [], []
    for seed in range(episodes):
        start = time.perf_counter()
        env.reset(seed=seed)
        resets.append(time.perf_counter() - start)
        for action in env.solution():
            start = time.perf_counter()
            env.step(action)
            steps.append(time.perf_counter() - start)
    return statistics.median(steps), statistics.median(resets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=30)
    args = parser.parse_args()
    base = cartpole_step_seconds()
    print(f"baseline CartPole-v1 step: {base * 1e6:.1f} us (median)")
    print(f"{'environment':<20} {'step us':>9} {'x CartPole':>11} {'reset us':>9}")
    ratios = []
    for name in spade_envs.seed_names():
        step, reset = seed_step_seconds(name, args.episodes)
        ratios.append(step / base)
        print(f"{name:<20} {step * 1e6:>9.1f} {step / base:>11.1f} {reset * 1e6:>9.1f}")
    print(f"median ratio to CartPole over {len(ratios)} seeds: {statistics.median(ratios):.1f}x")


if __name__ == "__main__":
    main()
