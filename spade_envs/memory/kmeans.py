"""Spherical k-means and a two-level quantizer, for the IVF index's coarse lists.

Vectors are assigned to the centroid of largest inner product, and centroids are unit
vectors (normalised means). The assignment therefore follows cosine direction whatever
the vectors' norms, which is what probing by ``query @ centroids.T`` needs.

For many lists (thousands) over many vectors (a million), one flat assignment costs
``N * n_lists * dim`` multiply-adds (~3e12 at 1M x 4000 x 384, close to a minute on two
cores). :class:`Quantizer` then uses two levels: ~sqrt(n_lists) groups, and lists
inside each group; a vector is compared with the group centroids and then only with the
lists of its 8 best groups, several times less work for a slightly less exact
assignment. When that assignment disagrees with the exact one on more than 5% of a
sample (many small unrelated clusters, which no group centroid represents well), the
quantizer falls back to one level, refined by a few Lloyd steps on a smaller sample.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Quantizer", "assign_nearest", "spherical_kmeans"]

# Scores computed at once while assigning (rows x centroids floats): bounds memory.
_SCORE_BLOCK = 1 << 23
_ASSIGN_BLOCK = 1 << 16
# Groups whose lists a row is compared with in a two-level assignment.
_GROUPS_SEARCHED = 8
# Below this share of rows assigned to their nearest list, two levels fall back to one.
_MIN_AGREEMENT = 0.95
_CHECK_ROWS = 2048


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def assign_nearest(
    vectors: np.ndarray, centroids: np.ndarray, *, with_scores: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """Index of the centroid of largest inner product for each row, in memory-bounded blocks.

    Returns:
        ``(labels, best_scores)``; ``best_scores`` is ``None`` unless ``with_scores``.
    """
    n = len(vectors)
    labels = np.empty(n, dtype=np.int32)
    best = np.empty(n, dtype=np.float32) if with_scores else None
    step = max(1, _SCORE_BLOCK // max(1, len(centroids)))
    for start in range(0, n, step):
        scores = vectors[start : start + step] @ centroids.T
        top = scores.argmax(axis=1)
        labels[start : start + step] = top
        if best is not None:
            best[start : start + step] = scores[np.arange(len(top)), top]
    return labels, best


def spherical_kmeans(
    vectors: np.ndarray,
    k: int,
    *,
    iterations: int = 10,
    rng: np.random.Generator,
    init: np.ndarray | None = None,
) -> np.ndarray:
    """Cluster ``vectors`` into ``k`` unit centroids (Lloyd iterations on cosine).

    Starts from ``k`` distinct random rows; an emptied cluster is re-seeded with the row
    its current centroid serves worst. Stops early once fewer than 0.1% of rows move.

    Args:
        vectors: ``(n, dim)`` float32 training rows, ``n >= k``.
        k: Number of centroids.
        iterations: Maximum Lloyd iterations.
        rng: Source of randomness (seeded by the caller).
        init: Starting centroids (``(k, dim)``) instead of random rows.

    Returns:
        ``(k, dim)`` float32 unit centroids.
    """
    n, dim = vectors.shape
    k = max(1, min(k, n))
    if init is not None:
        centroids = _unit_rows(np.asarray(init, dtype=np.float32))
        k = len(centroids)
    else:
        start = vectors[rng.choice(n, size=k, replace=False)]
        centroids = _unit_rows(start.astype(np.float32))
    dead = ~centroids.any(axis=1)
    if dead.any():
        # Zero training rows give no direction; start those centroids anywhere.
        filler = rng.standard_normal((int(dead.sum()), dim)).astype(np.float32)
        centroids[dead] = _unit_rows(filler)
    previous: np.ndarray | None = None
    for _ in range(iterations):
        labels, scores = assign_nearest(vectors, centroids, with_scores=True)
        best = scores if scores is not None else np.zeros(n, dtype=np.float32)
        order = np.argsort(labels, kind="stable")
        counts = np.bincount(labels, minlength=k)
        sums = np.zeros((k, dim), dtype=np.float32)
        present = np.flatnonzero(counts)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))[present]
        sums[present] = np.add.reduceat(vectors[order], starts, axis=0)
        empty = np.flatnonzero(counts == 0)
        if len(empty):
            worst = np.argsort(best, kind="stable")[: len(empty)]
            sums[empty[: len(worst)]] = vectors[worst]
        fresh = _unit_rows(sums)
        keep = ~fresh.any(axis=1)
        fresh[keep] = centroids[keep]
        centroids = fresh
        moved = n if previous is None else int(np.count_nonzero(previous != labels))
        previous = labels
        if moved <= n // 1000 and not len(empty):
            break
    return centroids


class Quantizer:
    """Maps vectors to one of ``n_lists`` lists; flat or two-level.

    Attributes:
        centroids: ``(n_lists, dim)`` unit list centroids (what queries probe).
        groups: ``(n_groups, dim)`` group centroids, or ``None`` when flat.
        group_start: ``(n_groups + 1,)`` first list of each group, or ``None`` when flat.
    """

    def __init__(
        self,
        centroids: np.ndarray,
        groups: np.ndarray | None = None,
        group_start: np.ndarray | None = None,
    ) -> None:
        self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self.groups = None if groups is None else np.ascontiguousarray(groups, np.float32)
        self.group_start = None if group_start is None else np.asarray(group_start, np.int64)
        # Share of sample rows the two-level assignment put in their nearest list.
        self.agreement = 1.0

    @property
    def n_lists(self) -> int:
        return len(self.centroids)

    @classmethod
    def train(
        cls,
        sample: np.ndarray,
        n_lists: int,
        *,
        two_level: bool,
        rng: np.random.Generator,
        iterations: int = 10,
    ) -> Quantizer:
        """Train on ``sample`` (``len(sample) >= n_lists``)."""
        n_lists = max(1, min(n_lists, len(sample)))
        n_groups = round(n_lists**0.5)
        if not two_level or n_groups < 2:
            return cls(spherical_kmeans(sample, n_lists, iterations=iterations, rng=rng))
        # A few hundred rows per group place the groups well; the lists inside each
        # group are then fitted on every sample row of that group.
        coarse = sample
        if len(sample) > 256 * n_groups:
            coarse = sample[np.sort(rng.choice(len(sample), 256 * n_groups, replace=False))]
        groups = spherical_kmeans(coarse, n_groups, iterations=iterations, rng=rng)
        labels, _ = assign_nearest(sample, groups)
        counts = np.bincount(labels, minlength=n_groups)
        per_group = _share(counts, n_lists)
        parts = []
        for g in range(n_groups):
            members = sample[labels == g]
            if len(members) == 0:
                parts.append(groups[g : g + 1])
            else:
                parts.append(
                    spherical_kmeans(members, per_group[g], iterations=iterations, rng=rng)
                )
        sizes = np.array([len(p) for p in parts], dtype=np.int64)
        group_start = np.concatenate(([0], np.cumsum(sizes)))
        quantizer = cls(np.concatenate(parts), groups, group_start)
        # Two levels assume that a row's best groups hold its best list. For many small,
        # unrelated clusters they do not (a group centroid averages too many of them), and
        # rows land in far lists that queries never probe. Check on a sample, and fall
        # back to one level (slower to build, same search speed) when they disagree.
        check = sample[rng.choice(len(sample), min(len(sample), _CHECK_ROWS), replace=False)]
        flat_labels, _ = assign_nearest(check, quantizer.centroids)
        quantizer.agreement = float(np.mean(quantizer.assign(check) == flat_labels))
        if quantizer.agreement >= _MIN_AGREEMENT:
            return quantizer
        rows = rng.choice(len(sample), min(len(sample), 16 * n_lists), replace=False)
        centroids = spherical_kmeans(
            sample[np.sort(rows)], n_lists, iterations=4, rng=rng, init=quantizer.centroids
        )
        flat = cls(centroids)
        flat.agreement = quantizer.agreement
        return flat

    def assign(self, vectors: np.ndarray) -> np.ndarray:
        """List index (int32) of each row of ``vectors``.

        Two-level: each row is compared with the lists of its ``_GROUPS_SEARCHED`` best
        groups, so rows near a group boundary still find their nearest list.
        """
        if self.groups is None or self.group_start is None:
            return assign_nearest(vectors, self.centroids)[0]
        labels = np.empty(len(vectors), dtype=np.int32)
        n_groups = len(self.groups)
        searched = min(_GROUPS_SEARCHED, n_groups)
        # Blocks bound the copies made when gathering each group's rows.
        for start in range(0, len(vectors), _ASSIGN_BLOCK):
            block = vectors[start : start + _ASSIGN_BLOCK]
            group_scores = block @ self.groups.T
            best_groups = np.argpartition(-group_scores, searched - 1, axis=1)[:, :searched]
            best = np.full(len(block), -np.inf, dtype=np.float32)
            out = labels[start : start + len(block)]
            for rank in range(searched):
                group_of = best_groups[:, rank]
                order = np.argsort(group_of, kind="stable")
                bounds = np.searchsorted(group_of[order], np.arange(n_groups + 1))
                for g in range(n_groups):
                    rows = order[bounds[g] : bounds[g + 1]]
                    if len(rows) == 0:
                        continue
                    lo, hi = int(self.group_start[g]), int(self.group_start[g + 1])
                    local, score = assign_nearest(
                        block[rows], self.centroids[lo:hi], with_scores=True
                    )
                    better = score > best[rows]
                    out[rows[better]] = local[better] + lo
                    best[rows[better]] = score[better]
        return labels


def _share(counts: np.ndarray, total: int) -> np.ndarray:
    """Split ``total`` lists over groups in proportion to ``counts``; each group gets >= 1
    and no more lists than members (largest-remainder rounding)."""
    counts = counts.astype(np.float64)
    exact = counts / max(counts.sum(), 1.0) * total
    share = np.maximum(np.floor(exact).astype(np.int64), 1)
    share = np.minimum(share, np.maximum(counts.astype(np.int64), 1))
    room = np.maximum(counts.astype(np.int64), 1) - share
    order = np.argsort(-(exact - np.floor(exact)), kind="stable")
    while share.sum() > total and (share > 1).any():
        # The floor of one list per group overshot: take back from the most over-served.
        over = np.where(share > 1, share - exact, -np.inf)
        share[int(np.argmax(over))] -= 1
    missing = total - int(share.sum())
    while missing > 0 and room.sum() > 0:
        for g in order:
            if missing == 0:
                break
            if room[g] > 0:
                share[g] += 1
                room[g] -= 1
                missing -= 1
    return share
