"""How fast is validation? Environments validated per second per core, at each budget.

Validates the whole seed corpus at each budget with ``validate_many`` (one sandboxed
validation per core) and prints, per budget: throughput per core, and where the time
goes: starting sandbox workers (paid in the background by the warm pool, but paid) versus
running the checks. A baseline measured in the same run: the bare cost of starting one
sandbox worker. Then how fast environments that never answer are rejected at ``fast``:
one that hangs in its first step, and one that computes for ~0.3 s in every step (each
call is within its limit; only the per-check wall clock stops it). Sleeping is no longer
such a case: the worker's clock is virtual, so ``time.sleep`` returns at once.

(In those lines a worker's start is its fork; the two zygotes each validating process
starts once are not counted there: the last table counts them.) Then the same run's
comparison of how workers start: the seed corpus validated at
``fast`` by one validator whose workers are forked from zygotes (the default) and by one
whose workers all start cold (``SandboxConfig(zygote=False)``, how every worker started
before zygotes), one after the other in this process: throughput, and worker start-up's
share of validation time (zygotes' own start-up included).

    python benchmarks/validation_throughput.py [--budgets fast default thorough]
"""

from __future__ import annotations

import argparse
import os
import statistics
import textwrap
import time

from spade_envs.sandbox import SandboxConfig, Worker
from spade_envs.seeds import seed_names, seed_source
from spade_envs.validation import Validator, validate_many
from spade_envs.validation.validator import validation_config

SLOW_ENV = textwrap.dedent("""
    import time
    from spade_envs import TextEnv, boxed

    class Slow(TextEnv):
        description = "Guess a digit; every step waits."
        max_turns = 6
        def _reset(self):
            self.n = self.rng.randint(1, 9)
            return "Guess 1..9 as \\\\boxed{n}."
        def _step(self, action):
            WAIT
            return ("yes", 1.0, True) if action == boxed(self.n) else ("no", 0.0, False)
        def hint(self):
            return "odd" if self.n % 2 else "even"
        def solution(self):
            return [boxed(self.n)]
""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", nargs="*", default=["fast", "default", "thorough"])
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    sources = [seed_source(n) for n in seed_names()]
    starts = []
    for _ in range(3):
        worker = Worker(validation_config())
        starts.append(worker.start_seconds)
        worker.kill()
    print(f"baseline: one validation worker starts in {statistics.median(starts) * 1000:.0f} ms")
    print(f"{len(sources)} seed environments, {cores} cores")
    print(
        f"{'budget':<9} {'envs/s/core':>11} {'s/env':>7} {'worker start':>13} {'checks':>8} "
        f"{'start share':>11} {'valid':>6}"
    )
    for budget in args.budgets:
        begin = time.perf_counter()
        reports = validate_many(sources, budget=budget, workers=cores, progress=False)
        wall = time.perf_counter() - begin
        start = sum(r.timings.get("worker_start", 0.0) for r in reports)
        checks = sum(r.timings.get("checks", 0.0) for r in reports)
        rate = len(reports) / wall / cores
        print(
            f"{budget:<9} {rate:>11.2f} {wall * cores / len(reports):>7.2f} {start:>12.1f}s "
            f"{checks:>7.1f}s {start / (start + checks):>10.0%} "
            f"{sum(r.passed for r in reports):>3}/{len(reports)}"
        )
        for report in reports:
            if not report.passed:  # a seed must never be rejected: say which and why
                print(f"   REJECTED {report.env_name}: {report.feedback()[:300]}")
    compare_startup(sources)
    # static_gate=False: `import time` would be refused before the sandbox is reached.
    with Validator("fast", pool_size=2, static_gate=False) as validator:
        validator.pool.wait_ready()
        waits = (
            ("hangs", "while True: pass"),
            ("computes ~0.3 s a step", "sum(range(6_000_000))"),
        )
        for label, wait in waits:
            begin = time.perf_counter()
            report = validator.validate(SLOW_ENV.replace("WAIT", wait))
            seconds = time.perf_counter() - begin
            reason = next((c.reason for c in report.failures), "")[:90]
            verdict = "rejected" if not report.passed else "ACCEPTED"
            print(f"an env that {label}: {verdict} in {seconds:.1f} s at fast ({reason})")


def compare_startup(sources: list[str]) -> None:
    """Zygote-forked workers against cold ones: the same corpus, one validator each."""
    print("worker start-up, one validator, the seed corpus at fast (same run):")
    rates = {}
    for label, zygote in (("cold workers", False), ("zygote workers", True)):
        with Validator("fast", config=SandboxConfig(zygote=zygote), pool_size=2) as validator:
            begin = time.perf_counter()
            reports = [validator.validate(source) for source in sources]
            wall = time.perf_counter() - begin
            pool = validator.pool
        start = sum(r.timings.get("worker_start", 0.0) for r in reports) + pool.zygote_start_seconds
        checks = sum(r.timings.get("checks", 0.0) for r in reports)
        rates[label] = len(reports) / wall
        print(
            f"  {label:<15} {rates[label]:>5.2f} envs/s"
            f"  start share {start / (start + checks):>4.0%}"
            f"  ({pool.forked_starts} forked, {pool.zygote_starts} zygotes, "
            f"{sum(r.passed for r in reports)}/{len(reports)} valid)"
        )
    print(f"  zygote / cold throughput: {rates['zygote workers'] / rates['cold workers']:.2f}x")


if __name__ == "__main__":
    main()
