"""The designer's memory: text embedders, vector indexes, and :class:`Memory`, which ties
them to the registry (similar environments, novelty, high-hint-gain seeds, negatives).

Importing this package loads numpy only; the MiniLM embedder imports
sentence-transformers (and torch) when it first embeds.
"""

from __future__ import annotations

from .embedders import (
    EMBEDDER_KINDS,
    Embedder,
    EmbedderError,
    EmbedderUnavailable,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    default_embedder,
    minilm_available,
)
from .index import (
    INDEX_KINDS,
    ExactIndex,
    Hit,
    VectorIndex,
    VectorIndexError,
    build_index,
    load_index,
)
from .ivf import IVFIndex
from .novelty import EXACT_LIMIT, NOVELTY_IGNORES, nearest_other_similarity, novelty_score
from .service import (
    HIGH_HINT_GAIN_WIN_RATES,
    Memory,
    MemoryConfig,
    Neighbour,
    Novelty,
    embed_missing,
)
from .summary import embedding_text

__all__ = [
    "EXACT_LIMIT",
    "HIGH_HINT_GAIN_WIN_RATES",
    "NOVELTY_IGNORES",
    "embed_missing",
    "nearest_other_similarity",
    "novelty_score",
    "Memory",
    "MemoryConfig",
    "Neighbour",
    "Novelty",
    "embedding_text",
    "EMBEDDER_KINDS",
    "INDEX_KINDS",
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailable",
    "ExactIndex",
    "HashingEmbedder",
    "Hit",
    "IVFIndex",
    "SentenceTransformerEmbedder",
    "VectorIndex",
    "VectorIndexError",
    "build_index",
    "default_embedder",
    "load_index",
    "minilm_available",
]
