"""How fast is validation? Environments validated per second per core, at each budget.

Validates the whole seed corpus at each budget with ``validate_many`` (one sandboxed
validation per core) and prints, per budget: throughput per core, and where the time
goes: starting sandbox workers (paid in the background by the warm pool, but paid) versus
running the checks. A baseline measured in the same run: the bare cost of starting one
sandbox worker.

    python benchmarks/validation_throughput.py [--budgets fast default thorough]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from spade_envs.sandbox import Worker
from spade_envs.seeds import seed_names, seed_source
from spade_envs.validation import validate_many
from spade_envs.validation.validator import validation_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", nargs="+", default=["fast", "default", "thorough"])
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


if __name__ == "__main__":
    main()
