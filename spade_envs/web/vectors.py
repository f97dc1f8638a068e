"""The registry's stored embeddings, read once: semantic search, novelty and the map.

The vectors are those the designer's memory stored (``Memory.sync``); the browser
never writes any. It keeps one float32 matrix per process and uses it three ways:

- **semantic search**: the query is embedded by the same embedder and compared with
  every vector (exact inner product; a few milliseconds at 100,000);
- **novelty**: 1 - cosine similarity to the nearest *other* version, the quantity the
  designer's novelty check uses. Exact up to :data:`EXACT_NOVELTY_LIMIT` versions; above
  that, each vector is compared with the members of its two nearest spherical k-means
  clusters (an approximation that can only overstate novelty). Computed in the
  background, then kept up to date exactly as new vectors arrive;
- **the map**: a 2-D PCA projection.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..error import SpadeError
from . import queries

__all__ = [
    "EXACT_NOVELTY_LIMIT",
    "Clusters",
    "Vectors",
    "align",
    "nearest_other_similarity",
    "pca_2d",
]

#: Corpus size up to which novelty and neighbours compare every pair of vectors.
EXACT_NOVELTY_LIMIT = 12_000
#: Clusters searched per row above that size.
PROBES = 3
_BLOCK = 1024


def _exact_nearest(
    queries_: np.ndarray, base: np.ndarray, self_index: np.ndarray | None
) -> np.ndarray:
    """Highest inner product of each query row with the ``base`` rows (its own row excluded)."""
    best = np.full(len(queries_), -np.inf, dtype=np.float32)
    for start in range(0, len(queries_), _BLOCK):
        scores = queries_[start : start + _BLOCK] @ base.T
        if self_index is not None:
            rows = np.arange(len(scores))
            scores[rows, self_index[start : start + _BLOCK]] = -np.inf
        best[start : start + _BLOCK] = scores.max(axis=1) if scores.shape[1] else -np.inf
    return best


@dataclass(frozen=True)
class Clusters:
    """Spherical k-means lists over the first ``n`` rows of a matrix (an IVF index).

    Attributes:
        centroids: ``(k, dim)`` unit centroids.
        order: Row numbers sorted by cluster; cluster ``c`` is ``order[bounds[c]:bounds[c+1]]``.
        bounds: ``(k + 1,)`` offsets into ``order``.
        keys: The keys of the rows clustered (to check they are still the matrix's first rows).
    """

    centroids: np.ndarray
    order: np.ndarray
    bounds: np.ndarray
    keys: np.ndarray

    @classmethod
    def build(cls, matrix: np.ndarray, keys: np.ndarray, seed: int = 0) -> Clusters:
        from ..memory.kmeans import assign_nearest, spherical_kmeans

        n = len(matrix)
        rng = np.random.default_rng(seed)
        k = max(2, int(math.sqrt(n) / 2))
        sample = matrix[rng.choice(n, size=min(n, 40 * k), replace=False)]
        centroids = spherical_kmeans(sample, k, iterations=8, rng=rng)
        home, _ = assign_nearest(matrix, centroids)
        order = np.argsort(home, kind="stable")
        bounds = np.searchsorted(home[order], np.arange(len(centroids) + 1))
        return cls(centroids, order, bounds, keys.copy())

    def members(self, c: int) -> np.ndarray:
        return self.order[self.bounds[c] : self.bounds[c + 1]]

    def nearest(self, rows: np.ndarray, probes: int) -> np.ndarray:
        """The ``probes`` nearest clusters of each row (``(len(rows), probes)``)."""
        probes = min(probes, len(self.centroids))
        out = np.empty((len(rows), probes), dtype=np.int32)
        for start in range(0, len(rows), 16_384):
            scores = rows[start : start + 16_384] @ self.centroids.T
            out[start : start + 16_384] = np.argpartition(-scores, probes - 1, axis=1)[:, :probes]
        return out


def nearest_other_similarity(
    matrix: np.ndarray, seed: int = 0, probes: int = PROBES, clusters: Clusters | None = None
) -> np.ndarray:
    """For each row of unit vectors, the cosine similarity to its nearest other row.

    Exact below :data:`EXACT_NOVELTY_LIMIT` rows. Above, rows are clustered (spherical
    k-means, about sqrt(n)/2 clusters; see :class:`Clusters`) and each row is compared
    with the members of its ``probes`` nearest clusters: the answer can only be lower
    than the exact one (novelty only overstated), and is exact for nearly every row.
    """
    n = len(matrix)
    if n < 2:
        return np.full(n, -np.inf, dtype=np.float32)
    if n <= EXACT_NOVELTY_LIMIT:
        return _exact_nearest(matrix, matrix, np.arange(n))
    if clusters is None:
        clusters = Clusters.build(matrix, np.arange(n), seed)
    near = clusters.nearest(matrix, probes)
    best = np.full(n, -np.inf, dtype=np.float32)
    for c in range(len(clusters.centroids)):
        members = clusters.members(c)
        if not len(members):
            continue
        asking = np.flatnonzero((near == c).any(axis=1))
        base = matrix[members]
        for start in range(0, len(asking), _BLOCK):
            chunk = asking[start : start + _BLOCK]
            scores = matrix[chunk] @ base.T
            scores[chunk[:, None] == members[None, :]] = -np.inf  # a row is not its own neighbour
            np.maximum.at(best, chunk, scores.max(axis=1))
    return best


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


def _top(loaded: _Loaded, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best ``(key, score)``, best first (ties: older key first)."""
    k = min(k, len(scores))
    if k <= 0:
        return []
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.lexsort((loaded.keys[top], -scores[top]))]
    return [(int(loaded.keys[i]), float(scores[i])) for i in top]


@dataclass(frozen=True)
class _Loaded:
    keys: np.ndarray  # in load order
    matrix: np.ndarray
    last_row: int
    generation: int


class Vectors:
    """Stored embeddings of one embedder, kept in memory (read-only).

    Args:
        registry: The registry to read.
        embedder: ``auto`` (the stored model with most vectors that can be reproduced
            here), ``hashing`` or ``minilm``.
        seed: Seed of the approximate novelty clustering.
        refresh_s: How often new vectors are looked for when pages ask.
    """

    def __init__(
        self,
        registry: Any,
        embedder: str = "auto",
        seed: int = 0,
        refresh_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        if embedder not in ("auto", "hashing", "minilm"):
            raise SpadeError(f"embedder must be auto, hashing or minilm, got {embedder!r}.")
        self.registry = registry
        self.kind = embedder
        self.seed = seed
        self.refresh_s = refresh_s
        self._clock = clock
        self._lock = threading.Lock()
        self._loaded = _Loaded(np.zeros(0, np.int64), np.zeros((0, 0), np.float32), 0, 0)
        self._checked = -math.inf
        self.model = ""
        self.embedder: Any = None
        # (generation, keys, best similarity to another version) of the last computation
        self._novelty: tuple[int, np.ndarray, np.ndarray] | None = None
        self._novelty_thread: threading.Thread | None = None
        self._clusters: Clusters | None = None  # made with the novelty, reused by neighbours
        self._projection: tuple[int, np.ndarray] | None = None
        #: Why semantic search cannot run, when it cannot (shown on the page).
        self.problem = ""

    # ----- loading ----------------------------------------------------------------------
    def _choose(self) -> None:
        from ..memory.embedders import HashingEmbedder, default_embedder

        if self.kind != "auto":
            self.embedder = default_embedder(self.kind)
            self.model = self.embedder.name
            return
        counts = queries.embedding_models(self.registry.engine)
        for model, _count in sorted(counts.items(), key=lambda kv: -kv[1]):
            embedder = _embedder_for(model)
            if embedder is not None:
                self.embedder, self.model = embedder, model
                return
        self.embedder = HashingEmbedder()
        self.model = self.embedder.name
        if counts:
            self.problem = (
                f"The stored embeddings ({', '.join(counts)}) need an embedder that is not "
                "installed here; install spade-envs[memory] for MiniLM."
            )

    def refresh(self, force: bool = False) -> _Loaded:
        """Load vectors stored since the last call (at most every ``refresh_s``)."""
        if not force and self._clock() - self._checked < self.refresh_s:
            return self._loaded
        with self._lock:
            self._checked = self._clock()
            if self.embedder is None or (len(self._loaded.keys) == 0 and self.kind == "auto"):
                self._choose()
            loaded = self._loaded
            blocks, keys = [], []
            last = loaded.last_row
            while True:
                rows = queries.vector_batch(self.registry.engine, self.model, last, 50_000)
                if not rows:
                    break
                keys.append(np.fromiter((k for _, k, _ in rows), np.int64, len(rows)))
                flat = np.frombuffer(b"".join(b for _, _, b in rows), np.float32)
                blocks.append(flat.reshape(len(rows), -1))
                last = rows[-1][0]
            if not keys:
                return loaded
            all_keys = np.concatenate([loaded.keys, *keys])
            parts = ([loaded.matrix] if len(loaded.keys) else []) + blocks
            matrix = np.ascontiguousarray(np.concatenate(parts))
            if len(np.unique(all_keys)) < len(all_keys):  # re-embedded versions: last wins
                _, first_from_end = np.unique(all_keys[::-1], return_index=True)
                keep = np.sort(len(all_keys) - 1 - first_from_end)
                all_keys, matrix = all_keys[keep], matrix[keep]
            self._loaded = _Loaded(all_keys, matrix, last, loaded.generation + 1)
            self.problem = self.problem if self.kind == "auto" else ""
            return self._loaded

    def warm(self) -> None:
        """Load the query embedder now (MiniLM takes seconds), not on the first search."""
        if self.embedder is not None:
            self.embedder.embed(["warm up"])

    def __len__(self) -> int:
        return len(self._loaded.keys)

    @property
    def generation(self) -> int:
        return self._loaded.generation

    # ----- search -----------------------------------------------------------------------
    def search(self, text: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` versions nearest to ``text``: ``(key, cosine similarity)``, best first."""
        loaded = self.refresh()
        if not len(loaded.keys) or self.embedder is None:
            return []
        query = np.asarray(self.embedder.embed([text])[0], dtype=np.float32)
        if query.shape[0] != loaded.matrix.shape[1]:
            raise SpadeError(
                f"The query embedding has {query.shape[0]} dimensions but the stored vectors "
                f"have {loaded.matrix.shape[1]}; they come from different embedders."
            )
        if not query.any():
            return []
        return _top(loaded, loaded.matrix @ query, k)

    def neighbours(self, key: int, k: int) -> list[tuple[int, float]] | None:
        """The ``k`` versions nearest to the stored version ``key`` (itself left out), or
        None when it has no stored vector."""
        loaded = self.refresh()
        where = np.flatnonzero(loaded.keys == key)
        if not len(where):
            return None
        query = loaded.matrix[where[-1]]
        clusters = self._clusters
        n = len(clusters.keys) if clusters is not None else 0
        if clusters is None or not np.array_equal(clusters.keys, loaded.keys[:n]):
            scores = loaded.matrix @ query  # small corpus, or clusters still being made
            scores[where] = -np.inf
            return [hit for hit in _top(loaded, scores, k) if np.isfinite(hit[1])]
        # The members of the nearest clusters, and every row added since they were made.
        probed = clusters.nearest(query[None, :], PROBES)[0]
        rows = np.concatenate(
            [*(clusters.members(int(c)) for c in probed), np.arange(n, len(loaded.keys))]
        )
        scores = np.full(len(loaded.keys), -np.inf, dtype=np.float32)
        scores[rows] = loaded.matrix[rows] @ query
        scores[where] = -np.inf
        return [hit for hit in _top(loaded, scores, k) if np.isfinite(hit[1])]

    # ----- novelty ----------------------------------------------------------------------
    def novelty(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """``(keys, novelty of each, up to date)``; starts a computation in the background
        when the vectors changed since the last one (until the first is done, no keys)."""
        loaded = self.refresh()
        done = self._novelty
        current = done is not None and done[0] == loaded.generation
        if (
            not current
            and len(loaded.keys)
            and (self._novelty_thread is None or not self._novelty_thread.is_alive())
        ):
            self._novelty_thread = threading.Thread(
                target=self._compute_novelty, args=(loaded,), name="spade-web-novelty", daemon=True
            )
            self._novelty_thread.start()
        if done is None:
            return np.zeros(0, np.int64), np.zeros(0), False
        values = 1.0 - done[2].astype(np.float64)
        values[~np.isfinite(values)] = 1.0  # alone in the corpus: nothing alike
        return done[1], np.clip(values, 0.0, 2.0), current

    def _compute_novelty(self, loaded: _Loaded) -> None:
        previous = self._novelty
        n = len(loaded.keys)
        old_n = 0 if previous is None else len(previous[1])
        if (
            previous is not None
            and 0 < old_n < n
            and n - old_n <= max(1000, n // 4)
            and np.array_equal(previous[1], loaded.keys[:old_n])
        ):
            # Only new vectors: compare them with everything, and everything old with them.
            new = loaded.matrix[old_n:]
            best_new = _exact_nearest(new, loaded.matrix, np.arange(old_n, n))
            best_old = np.maximum(previous[2], _exact_nearest(loaded.matrix[:old_n], new, None))
            best = np.concatenate([best_old, best_new])
        else:
            clusters = None
            if n > EXACT_NOVELTY_LIMIT:
                clusters = Clusters.build(loaded.matrix, loaded.keys, self.seed)
            best = nearest_other_similarity(loaded.matrix, self.seed, clusters=clusters)
            self._clusters = clusters
        self._novelty = (loaded.generation, loaded.keys, best)

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
