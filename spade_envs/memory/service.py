"""The designer's memory: nearest environments, novelty, high-hint-gain seeds, negatives.

The SPADE code keeps the last 200 environments in a list and picks reference
examples from it by regret alone (its "regret" is our hint gain: the return with the
hint minus without it, not floored). Here every registered version is embedded once
(vectors live in the registry, next to the code), a vector index answers
nearest-neighbour queries over the whole corpus, and play statistics come from the
registry, so many processes and machines share one memory.

Typical use by the designer::

    memory = Memory(Registry())
    memory.sync()                                   # embed what is new
    refs = memory.similar(document_text, k=3)       # grounding-related examples
    seeds = memory.high_hint_gain(skill="logic", k=2)  # the edge of the agent's ability
    easy, hard = memory.too_easy(k=1), memory.too_hard(k=1)
    if memory.novelty(code).score < 0.05: ...       # a near-copy of something stored
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..error import SpadeError
from .embedders import Embedder, default_embedder
from .index import build_index
from .novelty import NOVELTY_IGNORES, novelty_score
from .summary import embedding_text, text_sha256

__all__ = [
    "HIGH_HINT_GAIN_WIN_RATES",
    "Memory",
    "MemoryConfig",
    "Neighbour",
    "Novelty",
    "embed_missing",
]

#: The win-rate band of a useful seed: the agent sometimes wins, sometimes not.
HIGH_HINT_GAIN_WIN_RATES = (0.15, 0.85)


def _embed(embedder: Embedder, texts: list[str]) -> np.ndarray:
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise SpadeError(
            f"Embedder {embedder.name} returned shape {vectors.shape} for {len(texts)} texts."
        )
    return vectors


def embed_missing(
    registry: Any,
    embedder: Embedder,
    *,
    batch_size: int = 256,
    progress: Callable[[int, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> int:
    """Embed and store every version that ``embedder`` has not embedded yet, oldest first.

    The one writer of embeddings: :meth:`Memory.sync` and the corpus browser's
    background embedding (:meth:`spade_envs.web.vectors.Vectors.start_embedding`) both
    call it, so each sees the other's vectors. Each batch is stored in one transaction.

    Args:
        registry: A :class:`spade_envs.registry.Registry`.
        embedder: The embedder; its ``name`` labels the stored vectors.
        batch_size: Versions embedded and stored per batch.
        progress: Called as ``progress(done, total)`` after each batch.
        stop: Checked before each batch; True ends the work early.

    Returns:
        How many versions were embedded now.
    """
    done = 0
    total = registry.count() - registry.embedding_count(embedder.name)
    last_key = 0
    while stop is None or not stop():
        batch = registry.without_embedding(embedder.name, after=last_key, limit=batch_size)
        if not batch:
            break
        last_key = batch[-1].key
        texts = [embedding_text(r.source, r.description, r.skill) for r in batch]
        vectors = _embed(embedder, texts)
        registry.put_embeddings(
            embedder.name,
            [
                (r.key, v.tobytes(), vectors.shape[1], text_sha256(t))
                for r, v, t in zip(batch, vectors, texts)
            ],
        )
        done += len(batch)
        if progress is not None:
            progress(done, max(total, done))
    return done


@dataclass(frozen=True)
class MemoryConfig:
    """How the memory embeds and indexes.

    Attributes:
        embedder: ``auto`` (MiniLM when installed, else hashing), ``minilm`` or ``hashing``.
        index: ``exact`` (numpy, every vector compared), ``ivf`` (approximate inverted
            file) or ``auto`` (exact below ``ivf_threshold`` vectors, IVF above).
        ivf_threshold: Corpus size at which ``auto`` switches to IVF.
        batch_size: Environments embedded per batch by :meth:`Memory.sync`.
        seed: Seed of the approximate index's clustering.
    """

    embedder: str = "auto"
    index: str = "auto"
    ivf_threshold: int = 50_000
    batch_size: int = 256
    seed: int = 0


@dataclass(frozen=True)
class Neighbour:
    """A stored environment and its cosine similarity to the query."""

    record: Any  # spade_envs.registry.EnvRecord
    score: float


@dataclass(frozen=True)
class Novelty:
    """How new a piece of code is: 1 - cosine similarity to its nearest stored neighbour."""

    score: float
    nearest: Neighbour | None


class Memory:
    """Embeddings and a vector index over one registry.

    Args:
        registry: A :class:`spade_envs.registry.Registry`.
        config: Embedder and index choice.
        embedder: An embedder instance (overrides ``config.embedder``).
    """

    def __init__(
        self, registry: Any, config: MemoryConfig | None = None, embedder: Embedder | None = None
    ):
        self.registry = registry
        self.config = config or MemoryConfig()
        self.embedder = embedder or default_embedder(self.config.embedder)
        if self.config.index not in ("auto", "exact", "ivf"):
            raise SpadeError(f"index must be auto, exact or ivf, got {self.config.index!r}.")
        self._index: Any = None
        #: ``exact`` or ``ivf``, once the first vectors are loaded.
        self.index_kind = ""
        self._last_row = 0  # the newest embedding row already in the index

    # ----- keeping the index current --------------------------------------------------------
    def sync(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every version that has no embedding by this embedder; load new vectors.

        Args:
            progress: Called as ``progress(done, total)`` after each batch.

        Returns:
            How many versions were embedded now.
        """
        done = embed_missing(
            self.registry, self.embedder, batch_size=self.config.batch_size, progress=progress
        )
        self._load_new()
        return done

    def missing(self) -> int:
        """How many stored versions this embedder has not embedded yet."""
        return self.registry.count() - self.registry.embedding_count(self.embedder.name)

    def _embed(self, texts: list[str]) -> np.ndarray:
        return _embed(self.embedder, texts)

    def _load_new(self) -> None:
        """Add embeddings stored since the last load (by any process) to the index."""
        while True:
            rows = self.registry.embeddings(self.embedder.name, after=self._last_row, limit=50_000)
            if not rows:
                return
            keys = np.fromiter((key for _, key, _, _ in rows), dtype=np.int64, count=len(rows))
            vectors = np.frombuffer(b"".join(blob for _, _, blob, _ in rows), dtype=np.float32)
            vectors = vectors.reshape(len(rows), -1)
            if self._index is None:
                self._index = self._new_index(vectors.shape[1])
            self._index.add(keys, vectors)
            self._last_row = rows[-1][0]

    def _new_index(self, dim: int) -> Any:
        kind = self.config.index
        if kind == "auto":
            stored = self.registry.embedding_count(self.embedder.name)
            kind = "ivf" if stored >= self.config.ivf_threshold else "exact"
        self.index_kind = kind
        return build_index(kind, dim, **({"seed": self.config.seed} if kind == "ivf" else {}))

    def __len__(self) -> int:
        return 0 if self._index is None else len(self._index)

    @property
    def index(self) -> Any:
        """The vector index (keys are :attr:`EnvRecord.key`); None before any vector loads."""
        self._load_new()
        return self._index

    # ----- queries --------------------------------------------------------------------------
    def _neighbours(
        self, vector: np.ndarray, k: int, keep: Callable[[Any], bool]
    ) -> list[Neighbour]:
        self._load_new()
        if self._index is None or not len(self._index):
            return []
        want = k
        while True:
            hits = self._index.search(vector, k=min(want, len(self._index)))[0]
            records = self.registry.by_keys(key for key, _ in hits)
            found = [
                Neighbour(records[key], float(score))
                for key, score in hits
                if key in records and keep(records[key])
            ]
            if len(found) >= k or want >= len(self._index):
                return found[:k]
            want *= 4  # filters removed too many: look further

    def similar(
        self,
        text: str,
        k: int = 5,
        *,
        skill: str | None = None,
        status: str | None = "validated",
    ) -> list[Neighbour]:
        """The ``k`` stored environments closest to ``text`` (a document, a description, code).

        Args:
            text: What to compare against; code is summarised the way stored code is.
            k: How many to return.
            skill: Only this skill.
            status: Only this status (None: any).
        """
        if k < 1:
            raise SpadeError(f"k must be at least 1, got {k}.")
        query = embedding_text(text) if "class " in text and "def " in text else text
        vector = self._embed([query])[0]

        def keep(record: Any) -> bool:
            return (skill is None or record.skill == skill) and (
                status is None or record.status == status
            )

        return self._neighbours(vector, k, keep)

    def search(self, text: str, k: int = 10) -> list[Neighbour]:
        """Semantic search over every stored version, whatever its status."""
        return self.similar(text, k, status=None)

    def novelty(self, source: str, description: str = "", skill: str = "") -> Novelty:
        """How far new code is from everything stored (1.0: nothing alike; 0.0: the same).

        The definition (shared with the browser's novelty column) is
        :func:`~spade_envs.memory.novelty.novelty_score` of the similarity to the nearest
        stored version not in :data:`~spade_envs.memory.novelty.NOVELTY_IGNORES`.
        Versions with identical code are caught earlier by the registry's hash; this
        catches the near-copies a designer produces by renaming things.
        """
        vector = self._embed([embedding_text(source, description, skill)])[0]
        hits = self._neighbours(vector, 1, lambda record: record.status not in NOVELTY_IGNORES)
        if not hits:
            return Novelty(float(novelty_score(-np.inf)), None)
        return Novelty(float(novelty_score(hits[0].score)), hits[0])

    def high_hint_gain(
        self, skill: str | None = None, k: int = 2, checkpoint: str | None = None
    ) -> list[tuple[Any, Any]]:
        """Validated versions with the highest hint gain whose win rate lies in
        :data:`HIGH_HINT_GAIN_WIN_RATES`, as ``(record, stats)`` pairs."""
        low, high = HIGH_HINT_GAIN_WIN_RATES
        return self.registry.played(
            skill=skill, checkpoint=checkpoint, min_win_rate=low, max_win_rate=high, limit=k
        )

    def high_regret(
        self, skill: str | None = None, k: int = 2, checkpoint: str | None = None
    ) -> list[tuple[Any, Any]]:
        """Deprecated name of :meth:`high_hint_gain` (it ranks by the unfloored hint gain)."""
        warnings.warn(
            "Memory.high_regret is deprecated: it ranks by the hint gain (with-hint minus "
            "without-hint return, not floored); use Memory.high_hint_gain.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.high_hint_gain(skill=skill, k=k, checkpoint=checkpoint)

    def too_easy(self, k: int = 1, skill: str | None = None) -> list[tuple[Any, Any]]:
        """Versions the agent wins more than 90% of the time without help."""
        return self.registry.played(skill=skill, min_win_rate=0.9, order="win_rate", limit=k)

    def too_hard(self, k: int = 1, skill: str | None = None) -> list[tuple[Any, Any]]:
        """Versions the agent fails even with the hint (win rate and hinted return under 0.1)."""
        return self.registry.played(
            skill=skill, max_win_rate=0.1, max_return_with_hint=0.1, order="-win_rate", limit=k
        )
