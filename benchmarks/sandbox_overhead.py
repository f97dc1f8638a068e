"""What does the sandbox cost? Everything measured in one run, against in-process baselines.

Prints:
  1. median step time in-process and sandboxed, and their difference (target < 100 us);
  2. median open time of a sandboxed env from a warm pool (target < 20 ms), with no
     worker ready (forked from a zygote), and cold (a new interpreter per worker);
  3. throughput of 16 sandboxed envs stepped concurrently (``SandboxVectorEnv``: one
     worker per core; and ``step_all``: one worker per env) against gymnasium's
     ``AsyncVectorEnv`` running the same 16 envs unsandboxed (target: >= 1x);
  4. what the runtime's door and the worker's virtual clock add to the step overhead
     (the door records every step for replay audits; a virtual clock read is a Python
     call instead of a C one): target < 10% of the step overhead.

    python benchmarks/sandbox_overhead.py [--env NumberGuess] [--steps 3000]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import gymnasium as gym

import spade_envs
from spade_envs.runtime import open_source
from spade_envs.sandbox import (
    SandboxConfig,
    SandboxVectorEnv,
    WorkerPool,
    capabilities,
    open_seed,
    step_all,
)
from spade_envs.seeds import seed_source

#: Clock reads per step of a clock-heavy environment (one that times every step).
CLOCK_READS_PER_STEP = 10
_CLOCK_READ = """
import time, timeit
real = min(timeit.repeat("time.time()", globals=globals(), number=100000, repeat=5)) / 1e5
from spade_envs.sandbox import vclock
vclock.install()
virtual = min(timeit.repeat("time.time()", globals=globals(), number=100000, repeat=5)) / 1e5
print(real, virtual)
"""

NEVER_WINS = "\\boxed{0}"  # a valid action that keeps NumberGuess-like episodes going


def median_step_seconds(env, steps: int) -> float:
    samples = []
    env.reset(seed=0)
    for _ in range(steps):
        start = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(NEVER_WINS)
        samples.append(time.perf_counter() - start)
        if terminated or truncated:
            env.reset()
    return statistics.median(samples)


def paired_step_seconds(first, second, steps: int) -> tuple[float, float]:
    """Median step times of two envs stepped in turn (the machine's noise hits both)."""
    samples: tuple[list[float], list[float]] = ([], [])
    for env in (first, second):
        env.reset(seed=0)
    for _ in range(steps):
        for env, times in zip((first, second), samples):
            start = time.perf_counter()
            _, _, terminated, truncated, _ = env.step(NEVER_WINS)
            times.append(time.perf_counter() - start)
            if terminated or truncated:
                env.reset()
    return statistics.median(samples[0]), statistics.median(samples[1])


def open_times(name: str, pool: WorkerPool, count: int) -> list[float]:
    times = []
    for _ in range(count):
        pool.wait_ready()
        start = time.perf_counter()
        env = open_seed(name, pool=pool)
        times.append(time.perf_counter() - start)
        env.close()
    return times


def sandboxed_throughput(name: str, pool: WorkerPool, n: int, rounds: int) -> float:
    envs = [open_seed(name, pool=pool) for _ in range(n)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    start = time.perf_counter()
    for _ in range(rounds):
        results = step_all(envs, [NEVER_WINS] * n)
        for env, (_, _, terminated, truncated, _) in zip(envs, results):
            if terminated or truncated:
                env.reset()
    elapsed = time.perf_counter() - start
    for env in envs:
        env.close()
    return n * rounds / elapsed


def vector_throughput(vec, n: int, rounds: int) -> float:
    vec.reset(seed=0)
    actions = (NEVER_WINS,) * n
    start = time.perf_counter()
    for _ in range(rounds):
        vec.step(actions)  # autoreset inside
    elapsed = time.perf_counter() - start
    vec.close()
    return n * rounds / elapsed


def async_vector_throughput(name: str, n: int, rounds: int) -> float:
    vec = gym.vector.AsyncVectorEnv([lambda: spade_envs.make(name) for _ in range(n)])
    return vector_throughput(vec, n, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="NumberGuess")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--opens", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    caps = capabilities()
    spade_envs.seed_names()  # import the seed corpus before timing anything
    print(
        f"isolation available: bubblewrap={caps.bubblewrap} seccomp={caps.seccomp} root={caps.root}"
    )

    local = median_step_seconds(spade_envs.make(args.env), args.steps)
    with WorkerPool(size=2) as pool:
        remote_env = open_seed(args.env, pool=pool)
        print(f"worker layers: {remote_env.isolation}")
        remote = median_step_seconds(remote_env, args.steps)
        remote_env.close()
        print(f"1. step, in-process:  {local * 1e6:8.1f} us (median of {args.steps})")
        print(f"   step, sandboxed:   {remote * 1e6:8.1f} us")
        print(f"   overhead per step: {(remote - local) * 1e6:8.1f} us   (target < 30 us)")

        warm = open_times(args.env, pool, args.opens)
    # What the seccomp allow-list itself costs: the same worker without the filter.
    with WorkerPool(SandboxConfig(seccomp=False), size=1) as plain_pool:
        plain_env = open_seed(args.env, pool=plain_pool)
        plain = median_step_seconds(plain_env, args.steps)
        plain_env.close()
    print(
        f"   without seccomp:   {plain * 1e6:8.1f} us   (the allow-list filter costs "
        f"{(remote - plain) * 1e6:+.1f} us a step)"
    )
    # Opening with no worker ready: forked from a zygote (the default; the pool's zygote
    # is started before timing, as a pool's first open pays for it once) against a new
    # interpreter per worker (zygote=False, how every worker started before zygotes).
    with WorkerPool(size=0) as forked_pool:
        forked_pool.acquire().kill()
        forked = open_times(args.env, forked_pool, max(3, args.opens // 2))
        zygote_start = forked_pool.zygote_start_seconds
    with WorkerPool(SandboxConfig(zygote=False), size=0) as cold_pool:
        cold = open_times(args.env, cold_pool, max(3, args.opens // 4))
    print(
        f"2. open, warm pool:   {statistics.median(warm) * 1e3:8.1f} ms (median of {len(warm)}; "
        "target < 20 ms)"
    )
    print(
        f"   open, forked:      {statistics.median(forked) * 1e3:8.1f} ms (median of "
        f"{len(forked)}; the zygote itself started in {zygote_start * 1e3:.0f} ms, once)"
    )
    print(f"   open, cold:        {statistics.median(cold) * 1e3:8.1f} ms (median of {len(cold)})")
    print(f"   cold / forked:     {statistics.median(cold) / statistics.median(forked):8.1f}x")

    with WorkerPool(size=2) as door_pool:
        raw = open_seed(args.env, pool=door_pool)
        through_door = open_source(seed_source(args.env), pool=door_pool)
        raw_step, door_step = paired_step_seconds(raw, through_door, args.steps)
        raw.close()
        through_door.close()
    real_read, virtual_read = (
        float(x)
        for x in subprocess.run(
            [sys.executable, "-c", _CLOCK_READ], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    overhead = remote - local
    door_cost = door_step - raw_step
    clock_cost = CLOCK_READS_PER_STEP * (virtual_read - real_read)
    print(
        f"4. step through the door: {door_step * 1e6:8.1f} us; without it {raw_step * 1e6:.1f} us"
    )
    print(
        f"   the door adds {door_cost * 1e6:+.1f} us a step = "
        f"{door_cost / overhead:+.1%} of the sandbox's step overhead"
    )
    print(
        f"   a clock read: {real_read * 1e9:.0f} ns real, {virtual_read * 1e9:.0f} ns virtual; "
        f"{CLOCK_READS_PER_STEP} reads a step add {clock_cost * 1e6:+.2f} us = "
        f"{clock_cost / overhead:+.1%} of the step overhead"
    )
    print(
        f"   together: {(door_cost + clock_cost) / overhead:+.1%} of the step overhead "
        "(target < 10%)"
    )

    n = 16
    baseline = async_vector_throughput(args.env, n, args.rounds)
    with WorkerPool(size=0) as pool16:
        vector = vector_throughput(
            SandboxVectorEnv(seed_source(args.env), n, pool=pool16), n, args.rounds
        )
        per_env = sandboxed_throughput(args.env, pool16, n, args.rounds)
    print(f"3. {n} envs stepped together, {args.rounds} rounds:")
    print(f"   AsyncVectorEnv, unsandboxed ({n} processes): {baseline:9.0f} env-steps/s")
    print(
        f"   SandboxVectorEnv, sandboxed (1 worker/core): {vector:9.0f} env-steps/s   "
        f"ratio {vector / baseline:.2f}x (target >= 1)"
    )
    print(
        f"   step_all, sandboxed ({n} workers):           {per_env:9.0f} env-steps/s   "
        f"ratio {per_env / baseline:.2f}x"
    )


if __name__ == "__main__":
    main()
