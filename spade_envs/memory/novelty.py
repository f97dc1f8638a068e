"""Novelty: the one definition the designer's memory and the corpus browser share.

**Novelty** of an environment is ``1 - s``, where ``s`` is the cosine similarity of its
embedding to the embedding of the nearest *other* stored version whose status is not
in :data:`NOVELTY_IGNORES` (a near-copy of a rejected or quarantined version is still
new). It lies in
``[0, 2]`` (floored at 0 against rounding); 1.0 when there is nothing to compare with
(an empty corpus). :func:`novelty_score` turns similarities into novelty;
:func:`nearest_other_similarity` finds ``s`` for every row of a matrix at once, with the
memory's vector indexes (:class:`~.index.ExactIndex` up to :data:`EXACT_LIMIT` rows,
:class:`~.ivf.IVFIndex` above).

- :meth:`spade_envs.memory.Memory.novelty` scores new code against the stored corpus
  (the designer's check before registering);
- :class:`spade_envs.web.vectors.Vectors` scores every stored version against the
  others (the browser's novelty column and sort).

A stored version ``X`` therefore has the novelty the designer would have computed for
``X``'s code against the rest of the corpus.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .index import ExactIndex
from .ivf import IVFIndex

__all__ = ["EXACT_LIMIT", "NOVELTY_IGNORES", "nearest_other_similarity", "novelty_score"]

#: Statuses whose versions are never anyone's nearest neighbour for novelty: rejected code,
#: and quarantined code (its replay diverged; it has left the designer's memory), so a
#: near-copy that behaves is still new.
NOVELTY_IGNORES = ("rejected", "quarantined")
#: Rows up to which :func:`nearest_other_similarity` compares every pair exactly.
EXACT_LIMIT = 12_000


def novelty_score(similarity: float | np.ndarray) -> float | np.ndarray:
    """Novelty from the cosine similarity to the nearest other stored version.

    Args:
        similarity: One similarity or an array of them; ``-inf`` or NaN means there was
            no other version to compare with.

    Returns:
        ``1 - similarity`` clipped to ``[0, 2]``, and 1.0 where there was nothing to
        compare with (a float for a float, an array for an array).
    """
    values = 1.0 - np.asarray(similarity, dtype=np.float64)
    values = np.where(np.isfinite(values), np.clip(values, 0.0, 2.0), 1.0)
    return float(values) if values.ndim == 0 else values


def nearest_other_similarity(
    matrix: np.ndarray,
    ids: Sequence[int] | np.ndarray | None = None,
    *,
    candidates: np.ndarray | None = None,
    exact_limit: int = EXACT_LIMIT,
    seed: int = 0,
) -> np.ndarray:
    """For each row of unit vectors, the cosine similarity to its nearest *other* row.

    Args:
        matrix: ``(n, dim)`` float32 unit rows.
        ids: One distinct id per row (default: the row numbers); a row never matches the
            row of its own id.
        candidates: ``(n,)`` booleans: only these rows can be a nearest neighbour (the
            versions novelty compares with); None: every row.
        exact_limit: Up to this many candidate rows every pair is compared (exact);
            above, an :class:`~.ivf.IVFIndex` over the candidates scans the lists nearest
            each row: the similarity found can only be lower than the exact one
            (novelty only overstated), and is exact for nearly every row.
        seed: Seed of the IVF clustering.

    Returns:
        ``(n,)`` float32 similarities; ``-inf`` for a row with no other candidate.
    """
    matrix = np.asarray(matrix, dtype=np.float32)
    n = len(matrix)
    keys = np.arange(n, dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)
    if n == 0:
        return np.zeros(0, dtype=np.float32)
    base = np.ones(n, dtype=bool) if candidates is None else np.asarray(candidates, dtype=bool)
    count = int(base.sum())
    if count == 0:
        return np.full(n, -np.inf, dtype=np.float32)
    dim = matrix.shape[1]
    index: ExactIndex | IVFIndex
    if count <= exact_limit:
        index = ExactIndex(dim, capacity=count)
    else:
        index = IVFIndex(dim, seed=seed, capacity=count)
    index.add(keys[base], matrix[base])
    return index.max_scores(matrix, exclude=keys)
