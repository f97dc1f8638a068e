"""Vector indexes: k nearest neighbours by inner product, keyed by integer ids.

Both indexes rank by inner product, which is cosine similarity for the unit vectors the
embedders produce; they do not normalise what they are given.

- :class:`ExactIndex`: brute force over one contiguous float32 matrix. Exact, and fast
  enough up to ~100k vectors. One thread may add vectors while others search it.
- :class:`~spade_envs.memory.ivf.IVFIndex` (in :mod:`.ivf`): an inverted-file index
  for large collections; approximate, with a tunable recall.

Results are lists of :class:`Hit` ``(id, score)``, best first; equal scores are ordered
by smaller id so that results are deterministic.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..error import SpadeError, suggest

__all__ = [
    "INDEX_KINDS",
    "ExactIndex",
    "Hit",
    "VectorIndex",
    "VectorIndexError",
    "build_index",
    "load_index",
]

INDEX_KINDS = ("exact", "ivf")
_FORMAT_VERSION = 1
# Scores materialised at once by a brute-force scan (queries x rows floats).
_SCAN_BLOCK = 1 << 24


class VectorIndexError(SpadeError, ValueError):
    """Wrong input to a vector index (shape, dimension, ids, parameters)."""


class Hit(NamedTuple):
    """One search result: the stored id and its inner product with the query."""

    id: int
    score: float


# ----- input checks ----------------------------------------------------------------------


def _as_ids(ids: Sequence[int] | np.ndarray | int) -> np.ndarray:
    arr = np.asarray(ids)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise VectorIndexError(f"ids must be a flat sequence of integers, got shape {arr.shape}.")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise VectorIndexError(f"ids must be integers, got dtype {arr.dtype}.")
    return arr.astype(np.int64, copy=False)


def _check_dim(got: int, dim: int, what: str) -> None:
    if got != dim:
        raise VectorIndexError(
            f"{what} has dimension {got} but this index holds {dim}-dimensional vectors. "
            "Embed with the same embedder the index was built with, or build a new index."
        )


def _as_matrix(vectors: np.ndarray, dim: int, n: int | None = None, what: str = "Vectors"):
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        _check_dim(arr.shape[0], dim, what)
        arr = arr.reshape(1, -1)
    if arr.ndim != 2:
        raise VectorIndexError(f"{what} must be 1-D or 2-D, got shape {arr.shape}.")
    _check_dim(arr.shape[1], dim, what)
    if n is not None and arr.shape[0] != n:
        raise VectorIndexError(f"Got {n} ids but {arr.shape[0]} vectors; pass one id per row.")
    if not np.isfinite(arr).all():
        raise VectorIndexError(f"{what} contain NaN or infinity; fix the embedding first.")
    return np.ascontiguousarray(arr)


def _check_k(k: int) -> int:
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise VectorIndexError(f"k must be a positive integer, got {k!r}.")
    return int(k)


def _last_wins(ids: np.ndarray, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop earlier duplicates of an id within one call (the last vector is kept)."""
    if len(ids) < 2:
        return ids, vectors
    unique, first_from_end = np.unique(ids[::-1], return_index=True)
    if len(unique) == len(ids):
        return ids, vectors
    keep = np.sort(len(ids) - 1 - first_from_end)
    return ids[keep], vectors[keep]


def _top_k(scores: np.ndarray, ids: np.ndarray, k: int) -> list[Hit]:
    """Best ``k`` of ``scores`` (ties by smaller id) as hits."""
    n = len(scores)
    if n == 0:
        return []
    if k < n:
        part = np.argpartition(scores, n - k)[n - k :]
        # Everything tied with the k-th score competes, so the id tie-break is exact.
        candidates = np.flatnonzero(scores >= scores[part].min())
        scores, ids = scores[candidates], ids[candidates]
    order = np.lexsort((ids, -scores))[:k]
    return [Hit(i, s) for i, s in zip(ids[order].tolist(), scores[order].tolist())]


def _grown(array: np.ndarray, used: int, capacity: int) -> np.ndarray:
    fresh = np.empty((capacity, *array.shape[1:]), dtype=array.dtype)
    fresh[:used] = array[:used]
    return fresh


def _new_capacity(current: int, needed: int) -> int:
    return max(needed, current + current // 2 + 64)


# ----- the interface ---------------------------------------------------------------------


class VectorIndex(ABC):
    """k-nearest-neighbour search by inner product over ``dim``-dimensional float32 vectors."""

    kind: ClassVar[str]
    dim: int

    @abstractmethod
    def add(self, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> None:
        """Store ``vectors[i]`` under ``ids[i]``; an id already present gets the new vector."""

    @abstractmethod
    def remove(self, ids: Sequence[int] | np.ndarray) -> int:
        """Forget ``ids`` (unknown ids are ignored); returns how many were removed."""

    @abstractmethod
    def search(self, query: np.ndarray, k: int = 10) -> list[list[Hit]]:
        """The ``k`` best hits for each query row (a ``(dim,)`` query counts as one row)."""

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def __contains__(self, id_: object) -> bool: ...

    @abstractmethod
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to ``path`` (an ``.npz`` file, no pickles)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim}, size={len(self)})"


def _check_dim_arg(dim: int) -> int:
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool) or dim < 1:
        raise VectorIndexError(f"dim must be a positive integer, got {dim!r}.")
    return int(dim)


# ----- exact -----------------------------------------------------------------------------


class ExactIndex(VectorIndex):
    """Exact search by brute force over a growable float32 matrix.

    One writer may :meth:`add` while any number of threads :meth:`search` (the arrays
    only grow; a reader sees the rows stored when it started); :meth:`remove` needs the
    readers to wait.

    Args:
        dim: Vector dimension.
        capacity: Rows to preallocate (the matrix grows by half when full).

    Example:
        >>> index = ExactIndex(2)
        >>> index.add([7, 8], np.array([[1, 0], [0, 1]], dtype=np.float32))
        >>> index.search(np.array([1, 0.1], dtype=np.float32), k=1)[0][0].id
        7
    """

    kind: ClassVar[str] = "exact"

    def __init__(self, dim: int, capacity: int = 0) -> None:
        self.dim = _check_dim_arg(dim)
        self._vecs = np.empty((max(0, capacity), self.dim), dtype=np.float32)
        self._ids = np.empty(max(0, capacity), dtype=np.int64)
        self._n = 0
        self._row: dict[int, int] = {}

    def __len__(self) -> int:
        return self._n

    def __contains__(self, id_: object) -> bool:
        return id_ in self._row

    def reserve(self, capacity: int) -> None:
        """Preallocate room for ``capacity`` vectors in total."""
        if capacity > len(self._vecs):
            self._vecs = _grown(self._vecs, self._n, capacity)
            self._ids = _grown(self._ids, self._n, capacity)

    def ids(self) -> np.ndarray:
        """The stored ids (in storage order)."""
        return self._ids[: self._n].copy()

    def get(self, id_: int) -> np.ndarray:
        """A copy of the vector stored under ``id_`` (``KeyError`` when absent)."""
        return self._vecs[self._row[int(id_)]].copy()

    def add(self, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> None:
        ids_arr = _as_ids(ids)
        ids_arr, vecs = _last_wins(ids_arr, _as_matrix(vectors, self.dim, len(ids_arr)))
        rows = [self._row.get(i) for i in ids_arr.tolist()]
        old = np.array([r is not None for r in rows], dtype=bool)
        if old.any():
            self._vecs[[r for r in rows if r is not None]] = vecs[old]
        new_ids, new_vecs = ids_arr[~old], vecs[~old]
        if len(new_ids):
            end = self._n + len(new_ids)
            if end > len(self._vecs):
                self.reserve(_new_capacity(len(self._vecs), end))
            self._vecs[self._n : end] = new_vecs
            self._ids[self._n : end] = new_ids
            self._row.update(zip(new_ids.tolist(), range(self._n, end)))
            self._n = end

    def remove(self, ids: Sequence[int] | np.ndarray) -> int:
        removed = 0
        for id_ in _as_ids(ids).tolist():
            row = self._row.pop(id_, None)
            if row is None:
                continue
            last = self._n - 1
            if row != last:
                # Move the last row into the hole: storage stays one dense block.
                moved = int(self._ids[last])
                self._vecs[row] = self._vecs[last]
                self._ids[row] = moved
                self._row[moved] = row
            self._n = last
            removed += 1
        return removed

    def view(self) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, vectors)`` of every stored row, as read-only views (no copy).

        The views stay valid while vectors are only added (re-adding an id updates its
        row in place); :meth:`remove` moves rows, after which they are stale.
        """
        n = self._n  # first: the arrays may be replaced by larger copies, never shrunk
        ids, vecs = self._ids[:n], self._vecs[:n]
        ids.flags.writeable = vecs.flags.writeable = False
        return ids, vecs

    def search(self, query: np.ndarray, k: int = 10) -> list[list[Hit]]:
        queries = _as_matrix(query, self.dim, what="Query")
        k = _check_k(k)
        ids, vecs = self.view()
        if len(ids) == 0:
            return [[] for _ in queries]
        step = max(1, _SCAN_BLOCK // len(ids))
        results: list[list[Hit]] = []
        for start in range(0, len(queries), step):
            scores = queries[start : start + step] @ vecs.T
            results.extend(_top_k(row, ids, k) for row in scores)
        return results

    def max_scores(
        self, queries: np.ndarray, exclude: Sequence[int] | np.ndarray | None = None
    ) -> np.ndarray:
        """The highest inner product of each query row with a stored vector.

        Args:
            queries: ``(q, dim)`` float32 rows.
            exclude: One stored id per query that it may not match (itself, when the
                queries are stored vectors); None excludes nothing.

        Returns:
            ``(q,)`` float32 scores; ``-inf`` where no stored vector is left to match.
        """
        rows = _as_matrix(queries, self.dim, what="Queries")
        ids, vecs = self.view()
        skip = None if exclude is None else _as_ids(exclude)
        if skip is not None and len(skip) != len(rows):
            raise VectorIndexError(f"Got {len(rows)} queries but {len(skip)} ids to exclude.")
        best = np.full(len(rows), -np.inf, dtype=np.float32)
        if not len(ids):
            return best
        step = max(1, _SCAN_BLOCK // len(ids))
        for start in range(0, len(rows), step):
            scores = rows[start : start + step] @ vecs.T
            if skip is not None:
                scores[skip[start : start + step, None] == ids[None, :]] = -np.inf
            best[start : start + step] = scores.max(axis=1)
        return best

    def save(self, path: str | os.PathLike[str]) -> None:
        with open(path, "wb") as fh:
            np.savez(
                fh,
                kind=np.array(self.kind),
                format_version=np.array(_FORMAT_VERSION),
                dim=np.array(self.dim),
                ids=self._ids[: self._n],
                vectors=self._vecs[: self._n],
            )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ExactIndex:
        """Read an index written by :meth:`save`."""
        data = _read_npz(path, cls.kind)
        index = cls(int(data["dim"]))
        index.add(data["ids"], data["vectors"])
        return index


def _read_npz(path: str | os.PathLike[str], kind: str) -> Any:
    try:
        with np.load(path, allow_pickle=False) as npz:
            data = {name: npz[name] for name in npz.files}
    except (OSError, ValueError) as exc:
        raise VectorIndexError(
            f"Could not read a vector index from {os.fspath(path)!r}: {exc}"
        ) from exc
    found = str(data.get("kind", ""))
    if found != kind:
        raise VectorIndexError(
            f"{os.fspath(path)!r} holds a {found or 'non-index'} file, not a {kind!r} index; "
            "use load_index(path) to open any kind."
        )
    if int(data["format_version"]) > _FORMAT_VERSION:
        raise VectorIndexError(
            f"{os.fspath(path)!r} was written by a newer spade-envs (format "
            f"{int(data['format_version'])}); upgrade spade-envs to read it."
        )
    return data


# ----- factory ---------------------------------------------------------------------------


def _index_classes() -> dict[str, type[VectorIndex]]:
    from .ivf import IVFIndex  # ivf builds on this module

    return {"exact": ExactIndex, "ivf": IVFIndex}


def build_index(kind: str, dim: int, **kw: Any) -> VectorIndex:
    """A new empty index of ``kind`` (``"exact"`` or ``"ivf"``); ``kw`` go to its constructor.

    Raises:
        VectorIndexError: Unknown kind.
    """
    cls = _index_classes().get(kind.strip().lower())
    if cls is None:
        raise VectorIndexError(
            f"Unknown index kind {kind!r}.{suggest(kind, INDEX_KINDS)} "
            f"Choose one of: {', '.join(INDEX_KINDS)}."
        )
    return cls(dim, **kw)


def load_index(path: str | os.PathLike[str]) -> VectorIndex:
    """Open an index file written by any index's ``save``."""
    try:
        with np.load(path, allow_pickle=False) as data:
            kind = str(data["kind"]) if "kind" in data.files else ""
    except (OSError, ValueError) as exc:
        raise VectorIndexError(
            f"Could not read a vector index from {os.fspath(path)!r}: {exc}"
        ) from exc
    cls = _index_classes().get(kind)
    if cls is None:
        raise VectorIndexError(f"{os.fspath(path)!r} is not a spade-envs vector index file.")
    return cls.load(path)  # type: ignore[attr-defined]
