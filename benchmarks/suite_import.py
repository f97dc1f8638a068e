"""How long does importing the external suites take, and what comes out?

Imports every RLVE task at levels 0 and 3 and every reasoning-gym task at level 0 (and,
with ``--hard``, the 100 A.3 hard configurations) into a fresh SQLite registry on this
machine's cores, each environment validated by the gate at the ``fast`` budget with the
suite limits. Prints the counts (generated, validated, rejected by reason, unproven), the
wall time against the 20-minute target, and a baseline measured in the same run: the
seed corpus validated by the same validator settings, as seconds per environment.

    python benchmarks/suite_import.py [--budget fast] [--hard] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from spade_envs.registry import Registry
from spade_envs.seeds import seed_names, seed_source
from spade_envs.suites.importer import import_suite, suite_budget
from spade_envs.validation import validate_many

TARGET_S = 20 * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", default="fast")
    parser.add_argument("--hard", action="store_true", help="also reasoning-gym's A.3 set")
    parser.add_argument("--json", help="write the numbers here")
    args = parser.parse_args()
    cores = os.cpu_count() or 1

    started = time.perf_counter()
    seeds = [seed_source(n) for n in seed_names()]
    seed_reports = validate_many(seeds, budget=suite_budget(args.budget), progress=False)
    baseline = (time.perf_counter() - started) / len(seeds)
    print(
        f"baseline: {len(seeds)} seeds validated, {baseline:.2f} s per environment "
        f"({sum(r.passed for r in seed_reports)} passed)"
    )

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        registry = Registry(f"sqlite:///{tmp}/suites.db")
        jobs = [("rlve", ["0", "3"]), ("reasoning-gym", ["0"])]
        if args.hard:
            jobs.append(("reasoning-gym", ["hard"]))
        total_started = time.perf_counter()
        for suite, levels in jobs:
            result = import_suite(registry, suite, levels=levels, budget=args.budget)
            results.append(result)
            print(result.summary().split("\n")[0])
            reasons = result.rejected_by_reason()
            if reasons:
                print("  rejected by reason:", ", ".join(f"{k} {v}" for k, v in reasons.items()))
        total = time.perf_counter() - total_started
        envs = sum(r.planned for r in results)
        per_env = total / max(envs, 1)
        counts: dict[str, int] = {}
        for result in results:
            for key, value in result.counts().items():
                counts[key] = counts.get(key, 0) + value
        print(
            f"total: {envs} environments in {total / 60:.1f} min on {cores} cores "
            f"(target < {TARGET_S / 60:.0f} min: {'met' if total < TARGET_S else 'MISSED'}); "
            f"{per_env:.2f} s per environment = {per_env / baseline:.2f}x the seeds' "
            "validation time per environment"
        )
        print("counts:", ", ".join(f"{k} {v}" for k, v in counts.items()))
        registry.close()
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(
                {
                    "cores": cores,
                    "budget": args.budget,
                    "seconds": total,
                    "baseline_seconds_per_seed": baseline,
                    "counts": counts,
                    "imports": [r.to_dict() for r in results],
                },
                handle,
                indent=1,
            )


if __name__ == "__main__":
    main()
