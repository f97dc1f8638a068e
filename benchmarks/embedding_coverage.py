"""How long until semantic search covers every version of a fresh 10,000-version registry?

Builds (once; cached) a SQLite registry of ``--n`` synthetic versions with no embeddings
(the seeds, renamed and varied, as ``registry_scale.py`` does), copies it, opens the
browser's :class:`~spade_envs.web.vectors.Vectors` on the copy with the hashing
embedder and calls ``start_embedding()``; the clock stops when every version is found
by a semantic search (``search(q, k=n)`` returns all of them). The baseline, measured
in the same run: embedding the same texts directly with the same embedder (no
registry, no reads, no writes). Also timed: novelty over the whole corpus once covered.

    python benchmarks/embedding_coverage.py [--n 10000] [--cache DIR] [--embedder hashing]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry_scale import build_corpus  # the same synthetic corpus


def build_registry(db: Path, n: int) -> None:
    """A registry of ``n`` versions and no embeddings (cached next to a ``.done`` mark)."""
    from spade_envs.registry import Registry

    done = db.with_name(db.name + ".done")
    if done.exists():
        return
    db.unlink(missing_ok=True)
    registry = Registry(f"sqlite:///{db}")
    rate = build_corpus(registry, n)
    registry.close()
    print(f"   registered {n:,} versions ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    done.write_text(f"{n}\n")


def direct_seconds(db: Path, embedder) -> tuple[float, int]:
    """The baseline: the same texts embedded by the embedder alone (texts made first,
    so the code summaries, the registry reads and writes are what the server adds)."""
    from spade_envs.memory import embedding_text
    from spade_envs.registry import Registry

    registry = Registry(f"sqlite:///{db}")
    texts = [embedding_text(r.source, r.description, r.skill) for r in registry.iter_records()]
    registry.close()
    start = time.perf_counter()
    for i in range(0, len(texts), 256):
        embedder.embed(texts[i : i + 256])
    return time.perf_counter() - start, len(texts)


def coverage_seconds(db: Path, kind: str, n: int) -> tuple[float, float, float]:
    """(seconds until search covers all, seconds of novelty after that, first-batch s)."""
    from spade_envs.registry import Registry
    from spade_envs.web.vectors import Vectors

    registry = Registry(f"sqlite:///{db}")
    vectors = Vectors(registry, embedder=kind, refresh_s=1.0)
    start = time.perf_counter()
    vectors.start_embedding()
    first = None
    while True:
        found = len(vectors.search("a hidden number to guess", n))
        if first is None and found:
            first = time.perf_counter() - start
        if found >= n:
            break
        progress = vectors.embedding_progress()
        if progress.error:
            raise SystemExit(f"embedding failed: {progress.error}")
        time.sleep(0.25)  # each poll is a search for all n: keep it off the GIL mostly
    covered = time.perf_counter() - start
    start = time.perf_counter()
    if not vectors.wait_for_novelty(timeout=600):
        raise SystemExit("novelty did not finish in 10 minutes")
    novelty = time.perf_counter() - start
    vectors.stop_embedding()
    registry.close()
    return covered, novelty, first or covered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="corpus size")
    parser.add_argument(
        "--cache", default=str(Path(tempfile.gettempdir()) / "spade-embedding-coverage")
    )
    parser.add_argument("--embedder", default="hashing", choices=["hashing", "minilm"])
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from spade_envs.memory import default_embedder

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    source = cache / f"registry-{args.n}.db"
    print(f"building or reusing {source}", file=sys.stderr, flush=True)
    build_registry(source, args.n)
    work = cache / "run.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{work}{suffix}").unlink(missing_ok=True)
    shutil.copy(source, work)  # every run starts with no embeddings

    embedder = default_embedder(args.embedder)
    embedder.embed(["warm up"])
    baseline, count = direct_seconds(work, embedder)
    covered, novelty, first = coverage_seconds(work, args.embedder, count)
    print(f"corpus: {count:,} versions, embedder {embedder.name}")
    print(f"baseline: embedding the texts directly      {baseline:8.2f} s")
    print(f"server: first version searchable after      {first:8.2f} s")
    print(f"server: semantic search covers all after    {covered:8.2f} s")
    print(f"        ratio to the direct embedding       {covered / baseline:8.2f}x")
    print(f"        ({count / covered:,.0f} versions/s)")
    print(f"novelty of every version, once covered      {novelty:8.2f} s")


if __name__ == "__main__":
    main()
