"""How long does importing the external suites take, and what comes out?

Imports every RLVE task at levels 0 and 3, every reasoning-gym task at level 0 (and,
with ``--hard``, the 100 A.3 hard configurations) and every TextArena game ID into a
fresh SQLite registry on this machine's cores, each environment validated by the gate at
the ``fast`` budget with the suite limits. Prints the counts (generated, validated,
rejected by reason, unproven, unavailable), the wall time against the 20-minute target,
and a baseline measured in the same run: the seed corpus validated by the same validator
settings. Each import's rate is given as environments per second per core and as a ratio
to the seeds' rate (1.0: as fast per environment as validating a seed).

    python benchmarks/suite_import.py [--budget fast] [--hard] [--suites textarena]
        [--pool 1000] [--json out.json]

``--pool N`` (default 1000; 0 skips it) also imports a SPADE self-play run folder of N
games generated from fixtures with varied parameters (:mod:`spade_pool_games`) through
``spade-envs import``'s path, validated in parallel at the same budget, and gives its rate
the same way (``--suites ""`` measures the pool alone).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter

from spade_envs.registry import Registry
from spade_envs.seeds import seed_names, seed_source
from spade_envs.suites.importer import import_suite, suite_budget
from spade_envs.validation import validate_many

TARGET_S = 20 * 60
#: The imports ``--suites`` chooses from: (suite, levels).
JOBS = {"rlve": ["0", "3"], "reasoning-gym": ["0"], "textarena": ["0"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", default="fast")
    parser.add_argument("--hard", action="store_true", help="also reasoning-gym's A.3 set")
    parser.add_argument(
        "--suites",
        default=",".join(JOBS),
        help=f"comma-separated suites to import (default: {','.join(JOBS)})",
    )
    parser.add_argument(
        "--pool", type=int, default=1000, help="games in the SPADE pool import (0: none)"
    )
    parser.add_argument("--json", help="write the numbers here")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    chosen = [s.strip() for s in args.suites.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in JOBS]
    if unknown:
        parser.error(f"unknown suite(s) {', '.join(unknown)}; choose from {', '.join(JOBS)}")

    started = time.perf_counter()
    seeds = [seed_source(n) for n in seed_names()]
    seed_reports = validate_many(seeds, budget=suite_budget(args.budget), progress=False)
    baseline = (time.perf_counter() - started) / len(seeds)
    seed_rate = 1.0 / baseline / cores  # environments per second per core
    print(
        f"baseline: {len(seeds)} seeds validated, {baseline:.2f} s per environment = "
        f"{seed_rate:.4f} envs/s/core ({sum(r.passed for r in seed_reports)} passed)"
    )

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        registry = Registry(f"sqlite:///{tmp}/suites.db")
        jobs = [(suite, JOBS[suite]) for suite in chosen]
        if args.hard:
            jobs.append(("reasoning-gym", ["hard"]))
        rates = []
        total_started = time.perf_counter()
        for suite, levels in jobs:
            result = import_suite(registry, suite, levels=levels, budget=args.budget)
            results.append(result)
            print(result.summary().split("\n")[0])
            reasons = result.rejected_by_reason()
            if reasons:
                print("  rejected by reason:", ", ".join(f"{k} {v}" for k, v in reasons.items()))
            rate = result.planned / max(result.seconds, 1e-9) / cores
            rates.append(
                {
                    "suite": suite,
                    "levels": levels,
                    "envs_per_s_per_core": rate,
                    "ratio_to_seeds": rate / seed_rate,
                }
            )
            print(
                f"  {suite}: {rate:.4f} envs/s/core = {rate / seed_rate:.2f}x the seeds' "
                f"validation rate ({seed_rate:.4f} envs/s/core, this run)"
            )
            if suite == "textarena" and result.unavailable:
                kinds = Counter(_reason_kind(u.reason) for u in result.unavailable)
                print("  unavailable:", ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
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
    pool = bench_spade_pool(args.pool, args.budget, seed_rate, cores) if args.pool else None
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(
                {
                    "cores": cores,
                    "budget": args.budget,
                    "seconds": total,
                    "baseline_seconds_per_seed": baseline,
                    "baseline_envs_per_s_per_core": seed_rate,
                    "rates": rates,
                    "counts": counts,
                    "imports": [r.to_dict() for r in results],
                    "spade_pool": pool,
                },
                handle,
                indent=1,
            )


def bench_spade_pool(games: int, budget: str, seed_rate: float, cores: int) -> dict:
    """Import a generated SPADE run folder of ``games`` games into a fresh registry with
    validation (``spade-envs import``'s path), and print its rate against the seeds'."""
    from pathlib import Path

    from spade_pool_games import write_pool

    from spade_envs.runtime import import_corpus

    with tempfile.TemporaryDirectory() as tmp:
        run = write_pool(Path(tmp), games)
        registry = Registry(f"sqlite:///{tmp}/pool.db")
        started = time.perf_counter()
        result = import_corpus(registry, run, "spade-pool", budget=budget)
        seconds = time.perf_counter() - started
        registry.close()
    rate = len(result.imported) / max(seconds, 1e-9) / cores
    counts = result.counts()
    print(
        f"spade-pool: {games} games in {seconds:.0f} s: "
        + ", ".join(f"{n} {k}" for k, n in counts.items())
        + f", {len(result.problems)} with problems, {len(result.spade_stats)} with SPADE stats, "
        f"{len(result.hints)} hints"
    )
    print(
        f"  spade-pool: {rate:.4f} envs/s/core = {rate / seed_rate:.2f}x the seeds' "
        f"validation rate ({seed_rate:.4f} envs/s/core, this run)"
    )
    return {
        "games": games,
        "seconds": seconds,
        "counts": counts,
        "problems": len(result.problems),
        "envs_per_s_per_core": rate,
        "ratio_to_seeds": rate / seed_rate,
    }


def _reason_kind(reason: str) -> str:
    """A TextArena unavailability reason, by kind (for the count line)."""
    for key, kind in (
        ("nltk", "NLTK data download"),
        ("LLM", "LLM over the network"),
        ("fails to import", "import fails"),
        ("AssertionError", "needs 3+ players"),
        ("two-player", "does not start with two players"),
        ("missing", "module missing"),
    ):
        if key in reason:
            return kind
    return "other"


if __name__ == "__main__":
    main()
