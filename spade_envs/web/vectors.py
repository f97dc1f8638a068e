"""The registry's embeddings, kept by the server: semantic search, novelty and the map.

The server embeds every version itself: :meth:`Vectors.start_embedding` starts a
background thread that embeds what has no vector yet (at start, then whenever versions
arrive, looking every ``refresh_s``), with the memory's one writer of embeddings
(:func:`spade_envs.memory.embed_missing`, which ``Memory.sync`` uses too: the designer's
memory and the browser share the vectors). :meth:`Vectors.embedding_progress` says how far
it got, and why it stopped if it failed. The vectors are kept in one of the memory's
vector indexes (:class:`~spade_envs.memory.ExactIndex`) and used three ways:

- **semantic search** and **similar versions**: the query (or a version's vector) is
  compared with every vector (exact inner product; a few milliseconds at 100,000). A
  version's neighbours go through :class:`_Bounds` once it is built (in the background,
  after novelty): cheap upper bounds rule out most vectors, and only those left are
  scored exactly, with the same result as the full scan;
- **novelty**: :func:`spade_envs.memory.novelty_score` of the similarity to the nearest
  other version (the designer's definition, see :mod:`spade_envs.memory.novelty`),
  computed in the background by :func:`spade_envs.memory.nearest_other_similarity`
  (exact up to :data:`spade_envs.memory.EXACT_LIMIT` versions, an IVF index above), then
  kept up to date exactly as new vectors arrive;
- **the map**: a 2-D PCA projection.
"""

from __future__ import annotations

import collections
import logging
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..error import SpadeError
from ..memory.index import ExactIndex
from ..memory.novelty import (
    EXACT_LIMIT,
    NOVELTY_IGNORES,
    nearest_other_similarity,
    novelty_score,
)

__all__ = ["EmbeddingProgress", "Vectors", "align", "pca_2d"]

#: Neighbour lists kept per version (the nearest of 100,000 vectors costs ~10 ms).
NEIGHBOUR_CACHE = 4096
#: Principal directions the neighbour bounds keep (:class:`_Bounds`).
BOUND_DIMS = 32
#: Stored vectors from which the neighbour bounds are built (and below which a full
#: scan is cheap enough that they are not).
BOUND_MIN_ROWS = 4096
#: Added to every bound: float32 rounding of the scores and of the bounds, with room to spare.
BOUND_SLACK = 1e-4
#: Vectors scored exactly first, to set the threshold the bounds are compared with.
_BOUND_SEEDS = 64
#: Rows of the training sample of the bounds' directions.
_BOUND_SAMPLE = 20_000

_log = logging.getLogger(__name__)
#: Longest wait between retries after the background embedding failed (seconds).
MAX_RETRY_S = 300.0


@dataclass(frozen=True)
class EmbeddingProgress:
    """How far the server's background embedding got.

    Attributes:
        embedded: Versions with a stored vector of :attr:`model`.
        total: Versions in the registry.
        running: Whether a pass is embedding now.
        error: Why the last pass failed (None when it did not); the thread retries later.
        model: The embedder's name (``""`` before one is chosen).
    """

    embedded: int
    total: int
    running: bool
    error: str | None
    model: str = ""

    @property
    def complete(self) -> bool:
        """Every version has a vector."""
        return self.embedded >= self.total


def align(
    keys: np.ndarray, values: np.ndarray, target: np.ndarray, fill: float = np.nan
) -> np.ndarray:
    """``values`` (one per ``keys``) in the order of ``target``; ``fill`` where missing."""
    out = np.full(len(target), fill, dtype=np.float64)
    if not len(keys):
        return out
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    where = np.searchsorted(sorted_keys, target)
    inside = where < len(sorted_keys)
    inside[inside] = sorted_keys[where[inside]] == target[inside]
    out[inside] = values[order[where[inside]]]
    return out


def pca_2d(matrix: np.ndarray, seed: int = 0, sample: int = 50_000) -> np.ndarray:
    """The rows projected on their two principal components (``(n, 2)``; signs fixed).

    The axes come from a seeded sample of at most ``sample`` rows (plenty for a picture);
    every row is projected.
    """
    n = len(matrix)
    if n == 0:
        return np.zeros((0, 2))
    rows = matrix
    if n > sample:
        rows = matrix[np.sort(np.random.default_rng(seed).choice(n, size=sample, replace=False))]
    mean = rows.mean(axis=0, dtype=np.float64)
    cov = (rows.T @ rows).astype(np.float64) / len(rows) - np.outer(mean, mean)
    _, vecs = np.linalg.eigh(cov)
    axes = vecs[:, ::-1][:, :2]
    for j in range(axes.shape[1]):  # deterministic orientation
        if axes[np.argmax(np.abs(axes[:, j])), j] < 0:
            axes[:, j] = -axes[:, j]
    out = (matrix @ axes.astype(np.float32)).astype(np.float64) - mean @ axes
    if out.shape[1] < 2:
        out = np.hstack([out, np.zeros((n, 2 - out.shape[1]))])
    return out


def _embedder_for(model: str) -> Any | None:
    """An embedder that reproduces vectors stored under ``model``, or None."""
    from ..memory.embedders import MINILM_NAME, HashingEmbedder, minilm_available

    match = re.fullmatch(r"hashing-(\d+)(?:-s(\d+))?-v1", model)
    if match:
        return HashingEmbedder(int(match.group(1)), int(match.group(2) or 0))
    if model == MINILM_NAME and minilm_available():
        from ..memory.embedders import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder()
    return None


@dataclass(frozen=True)
class _Loaded:
    keys: np.ndarray  # in load order (read-only views of the index's rows)
    matrix: np.ndarray
    last_row: int
    generation: int

    def __len__(self) -> int:
        return len(self.keys)


def _hits(found: list[Any], skip: int | None, k: int) -> list[tuple[int, float]]:
    return [(int(key), float(score)) for key, score in found if key != skip][:k]


def _best(scores: np.ndarray, keys: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best ``(key, score)``, ties by smaller key (the vector indexes' order)."""
    if k < len(scores):
        part = np.argpartition(scores, len(scores) - k)[len(scores) - k :]
        tied = np.flatnonzero(scores >= scores[part].min())  # ties compete for the last place
        scores, keys = scores[tied], keys[tied]
    order = np.lexsort((keys, -scores))[:k]
    return list(zip(keys[order].tolist(), scores[order].tolist()))


@dataclass(frozen=True)
class _Bounds:
    """Cheap upper bounds of inner products with every stored vector of one generation.

    ``basis`` holds the top principal directions of the stored vectors (uncentred),
    ``coords`` each vector's coordinates on them and ``residual`` the length of what
    they leave out. For a query ``q`` and a stored ``x``, Cauchy-Schwarz gives
    ``q·x <= q_B·x_B + |q_R| |x_R|``, so one pass over ``coords`` (a twelfth of the
    matrix at 384 dimensions) bounds every score; a vector whose bound is below the
    k-th best exact score found so far cannot be among the k best. The vectors that
    are left (typically one cluster) are scored exactly: the answer is the full scan's.

    Attributes:
        generation: The vectors' generation the bounds were built from (they are used
            for that generation only: a new one may have replaced vectors in place).
        basis: ``(dim, m)`` float64 orthonormal directions.
        coords: ``(n, m)`` float32 coordinates of the stored vectors, in load order.
        residual: ``(n,)`` float32 length of each vector's part outside ``basis``.
        slack: Added to every bound (rounding, scaled to the largest vector).
    """

    generation: int
    basis: np.ndarray
    coords: np.ndarray
    residual: np.ndarray
    slack: float

    @classmethod
    def build(cls, loaded: _Loaded, dims: int = BOUND_DIMS, seed: int = 0) -> _Bounds:
        """The bounds of ``loaded``'s vectors (a few hundred milliseconds at 100,000)."""
        matrix = loaded.matrix
        n, dim = matrix.shape
        rows = matrix
        if n > _BOUND_SAMPLE:
            pick = np.random.default_rng(seed).choice(n, size=_BOUND_SAMPLE, replace=False)
            rows = matrix[np.sort(pick)]
        sample = rows.astype(np.float64)
        _, vecs = np.linalg.eigh(sample.T @ sample)
        basis = np.ascontiguousarray(vecs[:, ::-1][:, : min(dims, dim)])
        coords = np.empty((n, basis.shape[1]), np.float32)
        residual = np.empty(n, np.float32)
        largest = 0.0
        for start in range(0, n, 8192):  # float64 blocks: the residual without cancellation
            block = matrix[start : start + 8192].astype(np.float64)
            part = block @ basis
            rest = block - part @ basis.T
            coords[start : start + len(block)] = part
            residual[start : start + len(block)] = np.sqrt(np.einsum("ij,ij->i", rest, rest))
            if len(block):
                largest = max(largest, float(np.sqrt(np.einsum("ij,ij->i", block, block).max())))
        return cls(loaded.generation, basis, coords, residual, BOUND_SLACK * max(1.0, largest))

    def nearest(self, loaded: _Loaded, query: np.ndarray, k: int) -> list[tuple[int, float]] | None:
        """The ``k`` stored vectors of ``loaded`` nearest ``query`` (best first, ties by
        smaller key), or None when the bounds rule out too few vectors to be worth it
        (or ``k`` is more than the vectors that set the threshold)."""
        keys, matrix = loaded.keys, loaded.matrix
        n = len(keys)
        if n != len(self.coords) or k > _BOUND_SEEDS or n <= _BOUND_SEEDS:
            return None
        q = query.astype(np.float64)
        part = q @ self.basis
        rest = float(np.linalg.norm(q - self.basis @ part))
        bounds = self.coords @ part.astype(np.float32)
        bounds += np.float32(rest) * self.residual
        bounds += np.float32(self.slack * max(1.0, float(np.linalg.norm(q))))
        seeds = np.argpartition(bounds, n - _BOUND_SEEDS)[n - _BOUND_SEEDS :]
        threshold = np.partition(matrix[seeds] @ query, _BOUND_SEEDS - k)[_BOUND_SEEDS - k]
        left = np.flatnonzero(bounds >= threshold)
        if len(left) > n // 3:
            return None  # vectors too alike for the bounds: the full scan is as cheap
        return _best(matrix[left] @ query, keys[left], k)


class Vectors:
    """Embeddings of one embedder over a registry, kept in memory and kept complete.

    Args:
        registry: The registry to read (and to write embeddings to).
        embedder: ``auto`` (the stored model with most vectors that can be reproduced
            here, else MiniLM when installed, else hashing), ``hashing``, ``minilm``, or
            an :class:`~spade_envs.memory.Embedder` instance.
        seed: Seed of the approximate novelty index.
        refresh_s: How often new vectors (and versions to embed) are looked for.
        batch_size: Versions embedded per batch (one transaction each).
    """

    def __init__(
        self,
        registry: Any,
        embedder: Any = "auto",
        seed: int = 0,
        refresh_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        batch_size: int = 256,
    ):
        if isinstance(embedder, str):
            if embedder not in ("auto", "hashing", "minilm"):
                raise SpadeError(f"embedder must be auto, hashing or minilm, got {embedder!r}.")
            self.kind = embedder
            self.embedder: Any = None
        else:
            self.kind, self.embedder = "instance", embedder
        self.registry = registry
        self.seed = seed
        self.refresh_s = refresh_s
        self.batch_size = batch_size
        #: Corpus size up to which novelty compares every pair (see ``nearest_other_similarity``).
        self.exact_limit = EXACT_LIMIT
        self._clock = clock
        self._lock = threading.RLock()
        self._publish_lock = threading.Lock()
        self._index: ExactIndex | None = None
        self._loaded = _Loaded(np.zeros(0, np.int64), np.zeros((0, 0), np.float32), 0, 0)
        self._checked = -math.inf
        self.model = "" if self.embedder is None else self.embedder.name
        # (generation, status generation, keys, similarity to the nearest other version)
        self._novelty: tuple[int, int, np.ndarray, np.ndarray] | None = None
        self._novelty_thread: threading.Thread | None = None
        self._ignored_count = -1
        self._status_generation = 0
        self._neighbour_cache: collections.OrderedDict[tuple[int, int, int], tuple] = (
            collections.OrderedDict()
        )
        self._neighbour_lock = threading.Lock()
        #: Bounds of the neighbour search (built in the background for a generation).
        self._bounds: _Bounds | None = None
        self._bounds_thread: threading.Thread | None = None
        self._bounds_lock = threading.Lock()
        #: Stored vectors from which neighbour searches go through the bounds.
        self.bound_min_rows = BOUND_MIN_ROWS
        #: Neighbour searches answered through the bounds, and by a full scan.
        self.neighbour_searches = {"bounded": 0, "full": 0}
        self._projection: tuple[int, np.ndarray] | None = None
        #: Why semantic search cannot run, when it cannot (shown on the page).
        self.problem = ""
        self._embed_thread: threading.Thread | None = None
        self._embed_lock = threading.Lock()
        self._stop = threading.Event()
        self._progress = EmbeddingProgress(0, 0, False, None, self.model)
        self._progress_read = -math.inf

    # ----- loading ----------------------------------------------------------------------
    def _choose(self) -> None:
        from ..memory.embedders import default_embedder

        if self.kind == "instance":
            return
        if self.kind != "auto":
            self.embedder = default_embedder(self.kind)
            self.model = self.embedder.name
            return
        counts = self.registry.embedding_models()
        for model, _count in sorted(counts.items(), key=lambda kv: -kv[1]):
            embedder = _embedder_for(model)
            if embedder is not None:
                self.embedder, self.model = embedder, model
                self.problem = ""
                return
        self.embedder = default_embedder("auto")
        self.model = self.embedder.name
        if counts:
            self.problem = (
                f"The stored embeddings ({', '.join(counts)}) need an embedder that is not "
                f"installed here; the server embeds every version with {self.model} instead "
                "(install spade-envs[memory] for MiniLM)."
            )

    def _ensure_embedder(self) -> None:
        with self._lock:
            if self.embedder is None or (len(self._loaded.keys) == 0 and self.kind == "auto"):
                self._choose()

    def refresh(self, force: bool = False) -> _Loaded:
        """Load vectors stored since the last call (at most every ``refresh_s``)."""
        if not force and self._clock() - self._checked < self.refresh_s:
            return self._loaded
        with self._lock:
            self._checked = self._clock()
            self._ensure_embedder()
            self._note_statuses()
            loaded = self._loaded
            last, blocks = loaded.last_row, []
            while True:
                rows = self.registry.embeddings(self.model, after=last, limit=50_000)
                if not rows:
                    break
                keys = np.fromiter((k for _, k, _, _ in rows), np.int64, len(rows))
                flat = np.frombuffer(b"".join(b for _, _, b, _ in rows), np.float32)
                blocks.append((keys, flat.reshape(len(rows), -1)))
                last = rows[-1][0]
            if not blocks:
                return loaded
            # Readers see the index and the snapshot change together (a version found in
            # the index is in the snapshot, so novelty "up to date" covers it).
            with self._publish_lock:
                for keys, block in blocks:
                    if self._index is None:
                        self._index = ExactIndex(block.shape[1])
                    self._index.add(keys, block)  # a re-embedded version: the new vector wins
                ids, matrix = self._index.view()  # type: ignore[union-attr]
                self._loaded = _Loaded(ids, matrix, last, loaded.generation + 1)
            return self._loaded

    def _note_statuses(self) -> None:
        """Count the versions novelty ignores; a change makes novelty stale."""
        counts = self.registry.status_counts()
        ignored = sum(counts.get(status, 0) for status in NOVELTY_IGNORES)
        if ignored != self._ignored_count:
            self._ignored_count = ignored
            self._status_generation += 1

    def warm(self) -> None:
        """Load the query embedder now (MiniLM takes seconds), not on the first search."""
        self._ensure_embedder()
        if self.embedder is not None:
            self.embedder.embed(["warm up"])

    def __len__(self) -> int:
        return len(self._loaded.keys)

    @property
    def generation(self) -> int:
        return self._loaded.generation

    # ----- embedding in the background ---------------------------------------------------
    def start_embedding(self) -> bool:
        """Embed, in a background thread, every version without a vector, now and
        whenever versions arrive (checked every ``refresh_s``).

        Safe to call again: a running thread is left alone. Failures do not stop the
        server: they are logged, shown in :meth:`embedding_progress`, and retried after
        ``refresh_s``, doubling up to :data:`MAX_RETRY_S`.

        Returns:
            True when a thread was started now, False when one was already running.
        """
        with self._embed_lock:
            if self._embed_thread is not None and self._embed_thread.is_alive():
                return False
            self._stop.clear()
            self._embed_thread = threading.Thread(
                target=self._embed_loop, name="spade-web-embedding", daemon=True
            )
            self._embed_thread.start()
            return True

    def stop_embedding(self, timeout: float = 30.0) -> None:
        """Stop the background embedding (after the batch in progress) and wait for it."""
        self._stop.set()
        thread = self._embed_thread
        if thread is not None:
            thread.join(timeout)

    close = stop_embedding

    def embedding_progress(self) -> EmbeddingProgress:
        """How many versions have a vector of :attr:`model`, out of how many; whether the
        background embedding runs now, and its last error."""
        thread = self._embed_thread
        if thread is None or not thread.is_alive():
            if self._clock() - self._progress_read >= self.refresh_s:
                self._progress_read = self._clock()
                try:
                    self._count(running=False, error=self._progress.error)
                except Exception as exc:  # a database hiccup must not break a page
                    self._progress = self._with(error=f"counting embeddings failed: {exc}")
        return self._progress

    def wait_for_embeddings(self, timeout: float = 60.0) -> bool:
        """Block until every version has a stored vector and it is loaded (for tests and
        benchmarks); True when that happened within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            self._ensure_embedder()
            total = self.registry.count()
            if self.registry.embedding_count(self.model) >= total:
                if len(self.refresh(force=True)) >= total:
                    return True
            if time.monotonic() >= deadline:
                return False
            self._stop.wait(0.05)

    def _with(self, **changes: Any) -> EmbeddingProgress:
        from dataclasses import replace

        return replace(self._progress, **changes)

    def _count(self, running: bool, error: str | None) -> EmbeddingProgress:
        self._ensure_embedder()
        total = self.registry.count()
        embedded = self.registry.embedding_count(self.model)
        self._progress = EmbeddingProgress(embedded, total, running, error, self.model)
        return self._progress

    def _embed_loop(self) -> None:
        from ..memory.service import embed_missing

        delay = self.refresh_s
        while not self._stop.is_set():
            try:
                counted = self._count(running=False, error=self._progress.error)
                if not counted.complete:
                    self._progress = self._with(running=True)
                    embed_missing(
                        self.registry,
                        self.embedder,
                        batch_size=self.batch_size,
                        progress=self._advance(counted.embedded),
                        stop=self._stop.is_set,
                    )
                    self.refresh(force=True)  # search covers them at once
                    self._count(running=False, error=None)
                elif counted.error is not None:
                    self._progress = self._with(error=None)
                delay = self.refresh_s
            except Exception as exc:  # an embedder or database failure must not stop serving
                message = f"embedding with {self.model or 'the embedder'} failed: {exc}"
                _log.error("%s (retrying in %.0f s)", message, delay, exc_info=True)
                self._progress = self._with(running=False, error=message)
                self._stop.wait(delay)
                delay = min(MAX_RETRY_S, delay * 2)
                continue
            self._stop.wait(delay)
        self._progress = self._with(running=False)

    def _advance(self, before: int) -> Callable[[int, int], None]:
        def progress(done: int, _total: int) -> None:
            self._progress = self._with(embedded=before + done)

        return progress

    # ----- search -----------------------------------------------------------------------
    def search(self, text: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` versions nearest to ``text``: ``(key, cosine similarity)``, best first."""
        self.refresh()
        index = self._index
        if index is None or not len(index) or self.embedder is None:
            return []
        query = np.asarray(self.embedder.embed([text])[0], dtype=np.float32)
        if query.shape[0] != index.dim:
            raise SpadeError(
                f"The query embedding has {query.shape[0]} dimensions but the stored vectors "
                f"have {index.dim}; they come from different embedders."
            )
        if not query.any():
            return []
        return _hits(index.search(query, k)[0], None, k)

    def neighbours(self, key: int, k: int) -> list[tuple[int, float]] | None:
        """The ``k`` versions nearest to the stored version ``key`` (itself left out), or
        None when it has no stored vector."""
        self.refresh()
        with self._publish_lock:
            loaded, index = self._loaded, self._index
            if index is None or key not in index:
                return None
        cache_key = (loaded.generation, key, k)
        with self._neighbour_lock:
            found = self._neighbour_cache.get(cache_key)
            if found is not None:
                self._neighbour_cache.move_to_end(cache_key)
                return list(found)
        hits = _hits(self._nearest_stored(loaded, index, key, k + 1), key, k)
        with self._neighbour_lock:  # new vectors make a new generation: old entries age out
            self._neighbour_cache[cache_key] = tuple(hits)
            while len(self._neighbour_cache) > NEIGHBOUR_CACHE:
                self._neighbour_cache.popitem(last=False)
        return hits

    def _nearest_stored(
        self, loaded: _Loaded, index: ExactIndex, key: int, k: int
    ) -> list[tuple[int, float]]:
        """The ``k`` stored vectors nearest the stored vector of ``key`` (itself included):
        through the bounds when they are built for this generation, else by a full scan
        (and the bounds are built in the background, on a corpus large enough)."""
        query = index.get(key)
        bounds = self._bounds
        if bounds is not None and bounds.generation == loaded.generation:
            found = bounds.nearest(loaded, query, k)
            if found is not None:
                self.neighbour_searches["bounded"] += 1
                return found
        elif len(loaded) >= self.bound_min_rows:
            self._start_bounds(loaded)
        self.neighbour_searches["full"] += 1
        return [(hit.id, hit.score) for hit in index.search(query, k)[0]]

    def _start_bounds(self, loaded: _Loaded) -> None:
        with self._bounds_lock:
            if self._bounds_thread is not None and self._bounds_thread.is_alive():
                return
            self._bounds_thread = threading.Thread(
                target=self._build_bounds, args=(loaded,), name="spade-web-bounds", daemon=True
            )
            self._bounds_thread.start()

    def _build_bounds(self, loaded: _Loaded) -> None:
        """Build the neighbour bounds of ``loaded`` unless they exist (or it is small)."""
        done = self._bounds
        if len(loaded) < self.bound_min_rows or (
            done is not None and done.generation >= loaded.generation
        ):
            return
        try:
            self._bounds = _Bounds.build(loaded, seed=self.seed)
        except Exception:  # only a speed-up: the full scan still answers
            _log.warning("building the neighbour bounds failed", exc_info=True)

    # ----- novelty ----------------------------------------------------------------------
    def novelty_of(self, key: int) -> float | None:
        """The novelty of version ``key``, the value the list's column shows (the one
        definition, :func:`~spade_envs.memory.novelty.novelty_score`; None until it has been
        computed for this version)."""
        keys, similarity, _ = self._nearest_similarity()
        found = np.flatnonzero(keys == key)
        # One score, not the whole column's (an environment page needs only its own).
        return float(novelty_score(float(similarity[found[0]]))) if len(found) else None

    def novelty(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """``(keys, novelty of each, up to date)``; starts a computation in the background
        when the vectors (or the versions novelty ignores) changed since the last one
        (until the first is done, no keys)."""
        keys, similarity, current = self._nearest_similarity()
        return keys, np.asarray(novelty_score(similarity)), current

    def _nearest_similarity(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """``(keys, similarity to the nearest other version, up to date)``: what
        :meth:`novelty` scores, started in the background as it says."""
        loaded = self.refresh()
        done = self._novelty
        status_generation = self._status_generation
        current = done is not None and done[:2] == (loaded.generation, status_generation)
        if (
            not current
            and len(loaded.keys)
            and (self._novelty_thread is None or not self._novelty_thread.is_alive())
        ):
            self._novelty_thread = threading.Thread(
                target=self._compute_novelty,
                args=(loaded, status_generation),
                name="spade-web-novelty",
                daemon=True,
            )
            self._novelty_thread.start()
        if done is None:
            return np.zeros(0, np.int64), np.zeros(0), False
        return done[2], done[3], current

    def _compute_novelty(self, loaded: _Loaded, status_generation: int) -> None:
        ignored = np.asarray(
            [k for k, status in self.registry.statuses() if status in NOVELTY_IGNORES], np.int64
        )
        candidates = ~np.isin(loaded.keys, ignored)
        previous = self._novelty
        n = len(loaded.keys)
        old_n = 0 if previous is None else len(previous[2])
        if (
            previous is not None
            and previous[1] == status_generation
            and 0 < old_n < n
            and n - old_n <= max(1000, n // 4)
            and np.array_equal(previous[2], loaded.keys[:old_n])
        ):
            # Only new vectors: compare them with every candidate, and the old with them.
            dim = loaded.matrix.shape[1]
            everyone = ExactIndex(dim, capacity=int(candidates.sum()))
            everyone.add(loaded.keys[candidates], loaded.matrix[candidates])
            new_keys, new_rows = loaded.keys[old_n:], loaded.matrix[old_n:]
            best_new = everyone.max_scores(new_rows, exclude=new_keys)
            fresh = ExactIndex(dim)
            fresh.add(new_keys[candidates[old_n:]], new_rows[candidates[old_n:]])
            best_old = fresh.max_scores(loaded.matrix[:old_n], exclude=loaded.keys[:old_n])
            best = np.concatenate([np.maximum(previous[3], best_old), best_new])
        else:
            best = nearest_other_similarity(
                loaded.matrix,
                loaded.keys,
                candidates=candidates,
                exact_limit=self.exact_limit,
                seed=self.seed,
            )
        self._novelty = (loaded.generation, status_generation, loaded.keys, best)
        # Then the neighbour bounds of the same vectors, so that environment pages find
        # them ready (the server computes novelty at start).
        self._build_bounds(loaded)

    def wait_for_novelty(self, timeout: float = 60.0) -> bool:
        """Block until novelty is up to date (tests and the benchmark); True when it is."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            _, _, current = self.novelty()
            if current:
                return True
            thread = self._novelty_thread
            if thread is not None:
                thread.join(timeout=0.2)
        return False

    # ----- map --------------------------------------------------------------------------
    def projection(self) -> tuple[np.ndarray, np.ndarray]:
        """``(keys, (n, 2) coordinates)`` of every stored vector, in load order."""
        loaded = self.refresh()
        cached = self._projection
        if cached is None or cached[0] != loaded.generation:
            cached = (loaded.generation, pca_2d(loaded.matrix, self.seed))
            self._projection = cached
        return loaded.keys, cached[1]
