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
from .service import HIGH_HINT_GAIN_WIN_RATES, Memory, MemoryConfig, Neighbour, Novelty
from .summary import embedding_text

__all__ = [
    "HIGH_HINT_GAIN_WIN_RATES",
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
