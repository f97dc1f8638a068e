"""The corpus: seeded sampling over documents from any reader, and recording them.

``open_corpus`` picks the reader from the path; every reader returns a
:class:`Corpus`. A corpus keeps documents in source order, drops those shorter than
``min_words`` when it is opened and cuts those longer than ``max_words`` when they are
read (first ``max_words`` words, then ``[Document truncated at ~N words]``, as the
SPADE code does).
"""

from __future__ import annotations

import os
import random
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from ..error import suggest
from .document import (
    CorpusError,
    CorpusWarning,
    Document,
    ReadReport,
    Store,
    UnknownDocumentError,
    truncate_words,
)
from .jsonl import index_jsonl
from .tables import index_hf_dataset, index_parquet, is_hf_dataset, resolve_split
from .textdir import TEXT_SUFFIXES, index_text_dir

__all__ = [
    "Corpus",
    "open_corpus",
    "read_hf_dataset",
    "read_jsonl",
    "read_parquet",
    "read_text_dir",
    "record",
    "sample_corpus",
]

DEFAULT_MAX_WORDS = 4000
DEFAULT_MIN_WORDS = 20

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
PARQUET_SUFFIXES = (".parquet", ".pq")


class Corpus:
    """Grounding documents with seeded uniform sampling.

    Build one with :func:`open_corpus` (or a ``read_*`` function), not directly.

    Attributes:
        name: Prefix of every document id.
        path: What was read.
        report: Counts of kept, skipped and truncated records.
        max_words: Documents longer than this are cut when read.
        min_words: Documents shorter than this were dropped.
    """

    def __init__(
        self,
        store: Store,
        *,
        name: str,
        path: Path,
        report: ReadReport,
        max_words: int,
        min_words: int,
    ):
        self._store = store
        self.name = name
        self.path = path
        self.report = report
        self.max_words = max_words
        self.min_words = min_words

    def __len__(self) -> int:
        return len(self._store)

    def __iter__(self) -> Iterator[Document]:
        for position in range(len(self._store)):
            yield self[position]

    def __getitem__(self, position: int) -> Document:
        """The document at ``position`` (0-based, in source order; negative counts from the end)."""
        size = len(self._store)
        if not -size <= position < size:
            raise IndexError(
                f"position {position} is outside corpus {self.name!r} of {size} documents"
            )
        document = self._store.load(position % size)
        text, cut = truncate_words(document.text, self.max_words)
        if not cut:
            return document
        return Document(text, document.doc_id, document.source, document.metadata, truncated=True)

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self._store.position(doc_id) is not None

    def __repr__(self) -> str:
        return f"Corpus({self.name!r}, {len(self)} documents, path={str(self.path)!r})"

    def ids(self) -> Iterator[str]:
        """Every document id, in source order (no text is read)."""
        for position in range(len(self._store)):
            yield self._store.doc_id(position)

    def get(self, doc_id: str) -> Document:
        """The document with id ``doc_id``.

        Raises:
            UnknownDocumentError: No such document (wrong corpus name, or a record that was
                skipped or dropped as too short).
        """
        position = self._store.position(doc_id)
        if position is None:
            raise UnknownDocumentError(self._unknown_message(doc_id))
        return self[position]

    def _unknown_message(self, doc_id: str) -> str:
        prefix = doc_id.rpartition("#")[0] if "#" in doc_id else ""
        size = len(self)
        if prefix and prefix != self.name:
            hint = suggest(prefix, [self.name])
            return (
                f"No document {doc_id!r}: ids of corpus {self.name!r} start with "
                f"'{self.name}#'.{hint}"
            )
        example = f" (for example {self._store.doc_id(0)!r})" if size else ""
        return (
            f"No document {doc_id!r} in corpus {self.name!r} of {size} documents{example}; "
            f"records that were skipped or shorter than min_words={self.min_words} have no id."
        )

    def _require_documents(self) -> int:
        size = len(self)
        if size == 0:
            raise CorpusError(
                f"Corpus {self.name!r} has no documents to sample. {self.report.summary()} "
                "Lower min_words, or check the text field (field=)."
            )
        return size

    def sample(self, n: int, seed: int | random.Random) -> list[Document]:
        """``n`` documents drawn uniformly at random.

        Without replacement when ``n <= len(self)``, with replacement otherwise (as the
        SPADE code samples). The same seed gives the same documents.

        Args:
            n: How many documents (0 or more).
            seed: An int seed, or a ``random.Random`` to draw from (and advance).
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise CorpusError(f"sample() needs a count n >= 0, got {n!r}.")
        if n == 0:
            return []
        size = self._require_documents()
        rng = seed if isinstance(seed, random.Random) else random.Random(_check_seed(seed))
        if n <= size:
            positions = rng.sample(range(size), n)
        else:
            positions = rng.choices(range(size), k=n)
        return [self[p] for p in positions]

    def sampler(self, seed: int, *, shuffle: bool = False) -> Iterator[Document]:
        """An endless, reproducible stream of documents.

        Args:
            seed: The same seed gives the same stream.
            shuffle: ``False`` (default): each document is drawn independently and
                uniformly. ``True``: the corpus is walked in passes, each a fresh random
                permutation, so every document appears once before any appears twice.
        """
        size = self._require_documents()
        rng = random.Random(_check_seed(seed))
        if not shuffle:
            while True:
                yield self[rng.randrange(size)]
        while True:
            for position in rng.sample(range(size), size):
                yield self[position]


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise CorpusError(f"seed must be an int (or a random.Random), got {seed!r}.")
    return seed


class DocumentSink(Protocol):
    """Anything that stores grounding documents, like ``spade_envs.registry.Registry``."""

    def add_document(self, text: str, source: str = "") -> int: ...


def record(registry: DocumentSink, document: Document) -> int:
    """Store ``document`` in the registry; returns its id there.

    Identical text is stored once (the registry deduplicates by SHA-256), so recording
    the same document again returns the same id. The document id becomes the
    registry's ``source``, which points back into the corpus.
    """
    return int(registry.add_document(document.text, source=document.doc_id))


def _check_limits(max_words: int, min_words: int) -> None:
    for label, value, least in (("max_words", max_words, 1), ("min_words", min_words, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise CorpusError(f"{label} must be an int >= {least}, got {value!r}.")


def _finish(
    store: Store, report: ReadReport, path: Path, name: str, max_words: int, min_words: int
) -> Corpus:
    if report.warnings:
        warnings.warn(CorpusWarning(report.summary()), stacklevel=3)
    return Corpus(
        store, name=name, path=path, report=report, max_words=max_words, min_words=min_words
    )


def _existing(path: str | os.PathLike[str], want_dir: bool | None = None) -> Path:
    resolved = Path(path).expanduser()
    if not resolved.exists():
        raise CorpusError(
            f"No corpus at {resolved}: give a .jsonl or .parquet file, a directory of .txt/.md "
            "files, or a directory written by datasets' save_to_disk."
        )
    if want_dir is True and not resolved.is_dir():
        raise CorpusError(f"{resolved} is not a directory.")
    if want_dir is False and not resolved.is_file():
        raise CorpusError(f"{resolved} is a directory; give a file.")
    return resolved


def read_jsonl(
    path: str | os.PathLike[str],
    *,
    max_words: int = DEFAULT_MAX_WORDS,
    min_words: int = DEFAULT_MIN_WORDS,
    field: str | None = None,
    strict: bool = False,
    name: str | None = None,
    lazy: bool | None = None,
) -> Corpus:
    """A corpus from a JSONL file (``{"text": ...}`` or ``{"orig_doc": ...}`` per line).

    Args:
        path: The file.
        max_words: Cut documents after this many words.
        min_words: Drop documents with fewer words.
        field: The text field; default: ``orig_doc`` if non-empty, else ``text``.
        strict: Raise on the first bad line (naming file and line) instead of skipping
            it, counting it in ``corpus.report`` and warning once (:class:`CorpusWarning`).
        name: Corpus name (prefix of document ids); default: the file name without suffix.
        lazy: Keep byte offsets instead of texts; default: only for files over 50 MB.
    """
    _check_limits(max_words, min_words)
    file = _existing(path, want_dir=False)
    name = name or file.stem
    store, report = index_jsonl(
        file,
        name=name,
        field=field,
        min_words=min_words,
        max_words=max_words,
        strict=strict,
        lazy=lazy,
    )
    return _finish(store, report, file, name, max_words, min_words)


def read_parquet(
    path: str | os.PathLike[str],
    *,
    max_words: int = DEFAULT_MAX_WORDS,
    min_words: int = DEFAULT_MIN_WORDS,
    field: str | None = None,
    strict: bool = False,
    name: str | None = None,
) -> Corpus:
    """A corpus from a Parquet file with a ``text`` or ``orig_doc`` string column (pyarrow)."""
    _check_limits(max_words, min_words)
    file = _existing(path, want_dir=False)
    name = name or file.stem
    store, report = index_parquet(
        file, name=name, field=field, min_words=min_words, max_words=max_words, strict=strict
    )
    return _finish(store, report, file, name, max_words, min_words)


def read_hf_dataset(
    path: str | os.PathLike[str],
    *,
    max_words: int = DEFAULT_MAX_WORDS,
    min_words: int = DEFAULT_MIN_WORDS,
    field: str | None = None,
    strict: bool = False,
    name: str | None = None,
    split: str | None = None,
) -> Corpus:
    """A corpus from a Hugging Face dataset saved with ``save_to_disk`` (needs pyarrow only).

    Args:
        split: For a ``DatasetDict``: which split (default ``"train"``, or the only one).
        name: Default: the directory name, plus ``/<split>`` for a DatasetDict.
    """
    _check_limits(max_words, min_words)
    root = _existing(path, want_dir=True)
    directory, chosen = resolve_split(root, split)
    name = name or (f"{root.name}/{chosen}" if chosen else root.name)
    store, report = index_hf_dataset(
        directory, name=name, field=field, min_words=min_words, max_words=max_words, strict=strict
    )
    return _finish(store, report, directory, name, max_words, min_words)


def read_text_dir(
    path: str | os.PathLike[str],
    *,
    max_words: int = DEFAULT_MAX_WORDS,
    min_words: int = DEFAULT_MIN_WORDS,
    strict: bool = False,
    name: str | None = None,
) -> Corpus:
    """A corpus of the ``*.txt`` and ``*.md`` files under a directory (recursive, sorted).

    Args:
        strict: Raise on a file that is not UTF-8 instead of replacing its bad bytes.
        name: Default: the directory name. Ids are ``"<name>#<relative path>"``.
    """
    _check_limits(max_words, min_words)
    root = _existing(path, want_dir=True)
    name = name or root.name
    store, report = index_text_dir(
        root, name=name, min_words=min_words, max_words=max_words, strict=strict
    )
    if report.records == 0:
        others = sorted({p.suffix for p in root.rglob("*") if p.is_file() and p.suffix})[:8]
        raise CorpusError(
            f"{root} holds no {'/'.join(TEXT_SUFFIXES)} files"
            + (f" (found {', '.join(others)})" if others else "")
            + ". Give a .jsonl or .parquet file itself, or a directory of text files."
        )
    return _finish(store, report, root, name, max_words, min_words)


def _first_byte(file: Path) -> bytes:
    with open(file, "rb") as handle:
        return handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]


def _sniff(file: Path) -> str:
    with open(file, "rb") as handle:
        head = handle.read(4096)
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return "jsonl"
    raise CorpusError(
        f"Cannot tell the format of {file}: name it .jsonl (one JSON object per line) or "
        ".parquet, or put text files in a directory and open the directory."
    )


def open_corpus(
    path: str | os.PathLike[str],
    *,
    max_words: int = DEFAULT_MAX_WORDS,
    min_words: int = DEFAULT_MIN_WORDS,
    field: str | None = None,
    strict: bool = False,
    name: str | None = None,
    split: str | None = None,
    lazy: bool | None = None,
) -> Corpus:
    """Open a corpus, choosing the reader from the path.

    - a ``.jsonl``/``.ndjson``/``.json`` file (or one that starts with ``{``): JSONL;
    - a ``.parquet``/``.pq`` file (or one that starts with ``PAR1``): Parquet;
    - a directory with ``state.json``/``dataset_info.json``/``dataset_dict.json``: a
      Hugging Face dataset written by ``save_to_disk``;
    - any other directory: its ``*.txt`` and ``*.md`` files.

    Args:
        path: What to read.
        max_words: Cut documents after this many words (with a marker line).
        min_words: Drop documents with fewer words (counted in ``corpus.report``).
        field: The text field or column; default ``orig_doc`` if non-empty, else ``text``.
            Not used for text directories.
        strict: Raise on the first unusable record (naming file and line) instead of
            skipping and counting it.
        name: Corpus name, the prefix of document ids; default from the path.
        split: DatasetDict split (Hugging Face directories only).
        lazy: JSONL only: index byte offsets instead of holding texts (default: over 50 MB).

    Returns:
        The corpus; ``corpus.report`` says what was kept and skipped.
    """
    target = _existing(path)
    common = {"max_words": max_words, "min_words": min_words, "strict": strict, "name": name}
    if target.is_dir():
        if is_hf_dataset(target):
            return read_hf_dataset(target, field=field, split=split, **common)
        if field is not None:
            raise CorpusError(
                f"{target} is a directory of text files; field= does not apply to it."
            )
        return read_text_dir(target, **common)
    if split is not None:
        raise CorpusError("split= only applies to a Hugging Face DatasetDict directory.")
    suffix = target.suffix.lower()
    kind = (
        "jsonl"
        if suffix in JSONL_SUFFIXES
        else "parquet"
        if suffix in PARQUET_SUFFIXES
        else _sniff(target)
    )
    if kind == "parquet":
        return read_parquet(target, field=field, **common)
    if suffix == ".json" and _first_byte(target) == b"[":
        raise CorpusError(
            f"{target} is one JSON array, not JSON Lines; write one object per line "
            "(e.g. with `jq -c '.[]'`) and open that file."
        )
    return read_jsonl(target, field=field, lazy=lazy, **common)


def sample_corpus(
    *, max_words: int = DEFAULT_MAX_WORDS, min_words: int = DEFAULT_MIN_WORDS
) -> Corpus:
    """The small real corpus shipped with spade-envs (Python standard library docstrings).

    See ``spade_envs/corpus/data/SOURCE.md`` for where the texts come from and their
    licence. Every document's metadata has ``source`` and ``licence``.
    """
    from importlib.resources import files

    resource = files("spade_envs.corpus").joinpath("data", "sample.jsonl")
    path = Path(str(resource))
    if not path.is_file():
        raise CorpusError(
            f"The sample corpus is missing ({path}); reinstall spade-envs, or rebuild it with "
            "`python -m spade_envs.corpus.build_sample`."
        )
    return read_jsonl(path, max_words=max_words, min_words=min_words, name="sample", lazy=False)
