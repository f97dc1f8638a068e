"""How fast is the corpus browser over 100,000 environments? Real HTTP, one run.

Builds (once; cached) a SQLite registry of 100,000 synthetic versions (the 32 seeds,
each renamed and varied, as ``registry_scale.py`` does), with play statistics for most
of them and hashing embeddings for all, starts ``spade-envs serve`` on 127.0.0.1 in a
child process, and times pages over HTTP: the list (filters, sorts, first and deep
pages, the regret range), full-text and semantic search, and environment pages.
Prints the median and 95th percentile of each against the 200 ms target.

    python benchmarks/web_latency.py [--n 100000] [--cache DIR] [--repeat 20]

The registry is cached in ``DIR`` (default ``$TMPDIR/spade-web-latency``) and reused by
later runs. Play statistics are fabricated (seeded) and written with one bulk INSERT
per 5,000 rows: ``Registry.record_play_stats`` commits each row on its own, which would
take most of an hour here and measures nothing this benchmark is about.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry_scale import build_corpus  # noqa: E402  (the same synthetic corpus)

TARGET_MS = 200.0


def build_registry(db: Path, n: int, seed: int = 0) -> None:
    """A registry of ``n`` versions with play statistics and hashing embeddings."""
    from sqlalchemy import text

    from spade_envs.memory import Memory, MemoryConfig
    from spade_envs.registry import Registry

    done = db.with_name(db.name + ".done")
    if done.exists():
        return
    db.unlink(missing_ok=True)  # a build that was interrupted starts over
    registry = Registry(f"sqlite:///{db}")
    started = time.perf_counter()
    rate = build_corpus(registry, n)
    print(f"   registered {n:,} versions ({rate:,.0f}/s)", file=sys.stderr, flush=True)

    rng = np.random.default_rng(seed)
    keys = [r.key for r in registry.iter_records()]
    now = dt.datetime.now(dt.timezone.utc)
    rows = []
    for key in keys:
        if rng.random() < 0.2:
            continue  # a fifth were never played
        for checkpoint in ("step-0", "step-100")[: 1 + int(rng.random() < 0.3)]:
            without = float(rng.beta(2, 3))
            with_hint = float(min(1.0, without + rng.normal(0.1, 0.15)))
            rows.append(
                {
                    "e": key,
                    "c": checkpoint,
                    "ph": 8,
                    "pn": 8,
                    "rh": with_hint,
                    "rn": without,
                    "w": float(rng.binomial(8, without) / 8),
                    "r": with_hint - without,
                    "u": now,
                }
            )
    insert = text(
        "INSERT INTO play_stats (environment_id, checkpoint, plays_with_hint, "
        "plays_without_hint, mean_return_with_hint, mean_return_without_hint, win_rate, "
        "regret, updated_at) VALUES (:e, :c, :ph, :pn, :rh, :rn, :w, :r, :u)"
    )
    for start in range(0, len(rows), 5000):
        with registry.engine.begin() as conn:
            conn.execute(insert, rows[start : start + 5000])
    print(f"   {len(rows):,} play statistics", file=sys.stderr, flush=True)

    memory = Memory(registry, MemoryConfig(embedder="hashing", index="exact"))
    memory.sync(
        progress=lambda d, t: (
            d % 20_000 < 256 and print(f"   ... {d:,}/{t:,} embedded", file=sys.stderr, flush=True)
        )
    )
    registry.close()
    done.write_text(f"{n} versions built in {time.perf_counter() - started:.0f} s\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="corpus size")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "spade-web-latency"))
    parser.add_argument("--repeat", type=int, default=20, help="requests per measured page")
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    db = cache / f"registry-{args.n}.db"
    print(f"building or reusing {db}", file=sys.stderr, flush=True)
    build_registry(db, args.n)
    if args.build_only:
        return


if __name__ == "__main__":
    main()
