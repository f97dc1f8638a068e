"""How does the registry behave with a large corpus? One run, baselines measured alongside.

Builds a synthetic corpus (default 100,000 versions: the 32 seeds, each renamed and
varied) in a fresh SQLite registry, then prints:

  1. bulk import rate (versions/s, one transaction per 1,000), and its ratio to a plain
     ``sqlite3`` ``executemany`` of the same rows (name, source, description, skill,
     kind; same batches) into a bare table with no index, in a file next to the
     registry's: the registry's own cost per version (hashing, checks, indexes, ORM);
  2. warm ``gym.make`` of a registered env (trusted mode) against ``gym.make("CartPole-v1")``
     in the same process (target: at most 3x);
  3. first ``gym.make`` in a fresh process (target: under 100 ms), and its ratio to the
     first ``gym.make("CartPole-v1")`` of a fresh process;
  4. ``import spade_envs`` against ``import gymnasium``, fresh processes (target: <= 1.5x);
  5. ``list --skill`` latency (library call, 50 rows), and its ratio to a plain ``sqlite3``
     SELECT of the same 50 rows (same filter and order) on the same file;
  6. semantic search top-10 over the corpus, exact and approximate index, and recall@10,
     each latency also as a ratio to a plain ``sqlite3`` SELECT of the same 10 rows by key
     (what the query embedding and the index add to fetching the hits);
  7. the same indexes on 1,000,000 clustered vectors of dimension 384 (target:
     approximate top-10 under 20 ms with recall@10 of at least 0.95).

    python benchmarks/registry_scale.py [--n 100000] [--vectors 1000000] [--db PATH]

The corpus is embedded with the dependency-free hashing embedder: MiniLM on two CPU
cores embeds about a hundred environments a second, so its rate is measured on a
sample and reported instead. Synthetic vectors come from a seeded Gaussian mixture.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def median_time(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def corpus_batches(n: int):
    """The synthetic corpus: ``(source, meta)`` pairs in batches of 1,000."""
    import dataclasses

    from spade_envs import describe, seed_class
    from spade_envs.seeds import seed_names, seed_source

    seeds = [(name, seed_source(name), describe(seed_class(name))) for name in seed_names()]
    batch = []
    for i in range(n):
        name, source, meta = seeds[i % len(seeds)]
        variant = f"{name}{i:06d}"
        batch.append(
            (
                source.replace(f"class {name}(", f"class {variant}(") + f"\n# variant {i}\n",
                dataclasses.replace(
                    meta, name=variant, description=f"{meta.description} Variant {i}."
                ),
            )
        )
        if len(batch) == 1000 or i == n - 1:
            yield batch
            batch = []


def build_corpus(registry, n: int) -> float:
    start = time.perf_counter()
    done = 0
    for batch in corpus_batches(n):
        registry.register_many(batch, status="validated")
        done += len(batch)
        if done % 10_000 == 0:
            print(f"   ... {done:,} registered", file=sys.stderr, flush=True)
    return n / (time.perf_counter() - start)


def plain_import_rate(path: Path, n: int) -> float:
    """The baseline of the bulk import: the same rows and batches, ``executemany`` into a
    bare table (no index, no checks) of a fresh SQLite file, one transaction per batch."""
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE envs (id INTEGER PRIMARY KEY, name TEXT, source TEXT, "
        "description TEXT, skill TEXT, kind TEXT)"
    )
    start = time.perf_counter()
    for batch in corpus_batches(n):
        with conn:
            conn.executemany(
                "INSERT INTO envs (name, source, description, skill, kind) VALUES (?, ?, ?, ?, ?)",
                [(m.name, s, m.description, m.skill, m.kind) for s, m in batch],
            )
    rate = n / (time.perf_counter() - start)
    conn.close()
    path.unlink()
    return rate


def fresh_process_seconds(code: str, env: dict[str, str], repeat: int) -> float:
    """Median of a number the child prints (seconds), over ``repeat`` fresh processes."""
    values = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        values.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(values)


def import_seconds(module: str, env: dict[str, str], repeat: int) -> float:
    code = (
        "import time; t = time.perf_counter(); import " + module + "; "
        "print(time.perf_counter() - t)"
    )
    return fresh_process_seconds(code, env, repeat)


def clustered(n: int, dim: int, clusters: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        which = rng.integers(0, clusters, stop - start)
        noise = rng.standard_normal((stop - start, dim)).astype(np.float32) * 0.6
        block = centres[which] + noise
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def recall_at_10(exact, approx, queries: np.ndarray) -> float:
    hits = 0
    for q in queries:
        truth = {h.id for h in exact.search(q, k=10)[0]}
        hits += len(truth & {h.id for h in approx.search(q, k=10)[0]})
    return hits / (10 * len(queries))


def index_latencies(index, queries: np.ndarray) -> float:
    samples = []
    for q in queries:
        start = time.perf_counter()
        index.search(q, k=10)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="corpus size")
    parser.add_argument("--vectors", type=int, default=1_000_000, help="0 skips part 7")
    parser.add_argument("--db", help="reuse this SQLite file (built if missing)")
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    tmp = tempfile.TemporaryDirectory()
    db = Path(args.db) if args.db else Path(tmp.name) / "scale.db"
    url = f"sqlite:///{db}"
    os.environ["SPADE_REGISTRY_URL"] = url
    child_env = {**os.environ, "SPADE_REGISTRY_URL": url}

    import gymnasium as gym

    import spade_envs  # noqa: F401  (installs the spade/ IDs)
    from spade_envs.memory import HashingEmbedder, Memory, MemoryConfig
    from spade_envs.registry import Registry

    registry = Registry(url)
    rows = []
    if registry.count() < args.n:
        missing = args.n - registry.count()
        rate = build_corpus(registry, missing)
        plain = plain_import_rate(db.with_name(db.name + ".plain"), missing)
        rows.append(
            (
                "bulk import",
                f"{rate:,.0f} versions/s vs plain sqlite3 {plain:,.0f} rows/s",
                f"{plain / rate:.1f}x the time per version",
            )
        )
    total = registry.count()
    print(f"corpus: {total:,} versions in {db} ({db.stat().st_size / 1e6:,.0f} MB)")

    target_id = registry.list(skill="math", limit=1)[0].id
    # First use: spec and class are cached. The benchmark's own generated code: trusted.
    gym.make(target_id, isolation="none", trust_code=True).close()
    gym.make("CartPole-v1").close()

    def make_ours() -> None:
        gym.make(target_id, isolation="none", trust_code=True).close()

    def make_cartpole() -> None:
        gym.make("CartPole-v1").close()

    ours = median_time(make_ours, 300)
    cartpole = median_time(make_cartpole, 300)
    rows.append(
        (
            "warm gym.make (trusted)",
            f"{ours * 1e6:,.0f} us vs CartPole {cartpole * 1e6:,.0f} us",
            f"{ours / cartpole:.2f}x (target <= 3x)",
        )
    )

    first = fresh_process_seconds(
        "import time, gymnasium as gym, spade_envs\n"
        f"t = time.perf_counter(); gym.make({target_id!r}, isolation='none', trust_code=True)\n"
        "print(time.perf_counter() - t)",
        child_env,
        7,
    )
    first_cartpole = fresh_process_seconds(
        "import time, gymnasium as gym, spade_envs\n"
        "t = time.perf_counter(); gym.make('CartPole-v1')\n"
        "print(time.perf_counter() - t)",
        child_env,
        7,
    )
    rows.append(
        (
            "first gym.make, fresh process",
            f"{first * 1e3:.1f} ms vs CartPole {first_cartpole * 1e3:.1f} ms",
            f"{first / first_cartpole:.1f}x (target < 100 ms)",
        )
    )

    ours_import = import_seconds("spade_envs", child_env, 9)
    gym_import = import_seconds("gymnasium", child_env, 9)
    rows.append(
        (
            "import spade_envs",
            f"{ours_import * 1e3:.0f} ms vs gymnasium {gym_import * 1e3:.0f} ms",
            f"{ours_import / gym_import:.2f}x (target <= 1.5x)",
        )
    )

    plain_db = sqlite3.connect(f"file:{db}?mode=ro", uri=True)

    def plain_select(sql: str, *params: object) -> None:
        plain_db.execute(sql, params).fetchall()

    listing = median_time(lambda: registry.list(skill="logic", limit=50), 30)
    plain_listing = median_time(
        lambda: plain_select(
            "SELECT * FROM environments WHERE skill = ? AND status != 'retired' "
            "ORDER BY id DESC LIMIT 50",
            "logic",
        ),
        30,
    )
    rows.append(
        (
            "list --skill logic (50 rows)",
            f"{listing * 1e3:.1f} ms vs plain SELECT {plain_listing * 1e3:.2f} ms",
            f"{listing / plain_listing:.1f}x",
        )
    )

    embedder = HashingEmbedder()
    start = time.perf_counter()
    exact_memory = Memory(registry, MemoryConfig(index="exact"), embedder=embedder)
    embedded = exact_memory.sync(
        progress=lambda done, all_: (
            done % 20_000 < 64
            and print(f"   ... {done:,}/{all_:,} embedded", file=sys.stderr, flush=True)
        )
    )
    rows.append(
        (
            "embed corpus (hashing) + load",
            f"{time.perf_counter() - start:.1f} s ({embedded:,} new)",
            "",
        )
    )
    ivf_memory = Memory(registry, MemoryConfig(index="ivf"), embedder=embedder)
    start = time.perf_counter()
    ivf_memory.search("warm up", k=10)
    rows.append(("load + train IVF index", f"{time.perf_counter() - start:.1f} s", ""))
    queries = [r.description for r in registry.list(limit=200, offset=total // 3)][::2]
    vectors = embedder.embed(queries)
    ivf_memory.index.tune_n_probe(vectors[:50], target_recall=0.95)
    exact_search = statistics.median(
        median_time(lambda q=q: exact_memory.search(q, k=10), 1) for q in queries
    )
    ivf_search = statistics.median(
        median_time(lambda q=q: ivf_memory.search(q, k=10), 1) for q in queries
    )
    plain_search = statistics.median(
        median_time(
            lambda keys=keys: plain_select(
                f"SELECT * FROM environments WHERE id IN ({','.join('?' * len(keys))})", *keys
            ),
            1,
        )
        for keys in ([n.record.key for n in exact_memory.search(q, k=10)] for q in queries)
    )
    plain_db.close()
    corpus_recall = recall_at_10(exact_memory.index, ivf_memory.index, vectors[50:])
    rows.append(
        (
            f"search top-10 over {total:,} (query embed + index + rows)",
            f"exact {exact_search * 1e3:.1f} ms, IVF {ivf_search * 1e3:.1f} ms vs plain "
            f"SELECT of the 10 rows {plain_search * 1e3:.2f} ms",
            f"{exact_search / plain_search:.0f}x, {ivf_search / plain_search:.0f}x; "
            f"IVF recall@10 {corpus_recall:.3f}",
        )
    )

    try:
        from spade_envs.memory import SentenceTransformerEmbedder

        minilm = SentenceTransformerEmbedder()
        sample = [r.description for r in registry.list(limit=256)]
        minilm.embed(sample[:8])
        start = time.perf_counter()
        minilm.embed(sample)
        rate = len(sample) / (time.perf_counter() - start)
        rows.append(("MiniLM embedding rate", f"{rate:,.0f} texts/s", "(not used for corpus)"))
    except Exception as exc:  # the [memory] extra is optional
        rows.append(("MiniLM embedding rate", f"unavailable: {exc}", ""))

    if args.vectors:
        from spade_envs.memory import ExactIndex, IVFIndex

        print(f"   ... {args.vectors:,} clustered vectors", file=sys.stderr, flush=True)
        data = clustered(args.vectors, 384, 2000, seed=0)
        ids = np.arange(len(data), dtype=np.int64)
        queries = clustered(300, 384, 2000, seed=0)  # same centres, fresh noise
        exact = ExactIndex(384)
        exact.add(ids, data)
        start = time.perf_counter()
        ivf = IVFIndex(384, seed=0)
        ivf.add(ids, data)
        ivf.train()
        build = time.perf_counter() - start
        ivf.tune_n_probe(queries[:100], target_recall=0.95)
        recall = recall_at_10(exact, ivf, queries[100:])
        exact_ms = index_latencies(exact, queries[100:150]) * 1e3
        ivf_ms = index_latencies(ivf, queries[100:]) * 1e3
        rows.append(
            (
                f"index top-10 over {args.vectors:,} x 384",
                f"exact {exact_ms:.1f} ms, IVF {ivf_ms:.2f} ms (build {build:.0f} s, "
                f"n_lists {ivf.n_lists}, n_probe {ivf.n_probe})",
                f"IVF recall@10 {recall:.3f}; {exact_ms / ivf_ms:.0f}x faster "
                "(target < 20 ms, >= 0.95)",
            )
        )

    width = max(len(r[0]) for r in rows)
    print()
    for name, value, note in rows:
        print(f"{name:<{width}}  {value}  {note}")
    registry.close()
    tmp.cleanup()


if __name__ == "__main__":
    main()
