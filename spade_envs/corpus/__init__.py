"""Grounding documents for the Environment Designer: readers, sampling, hygiene.

Corpora come from JSONL (``text`` or ``orig_doc`` per line, the SPADE format),
Parquet, a directory of ``.txt``/``.md`` files, or a Hugging Face dataset saved with
``save_to_disk``; :func:`open_corpus` picks the reader. :func:`sample_corpus` is a
small real corpus shipped with the package. Importing this package loads no pyarrow.

Example:
    >>> from spade_envs.corpus import sample_corpus, sanitize
    >>> corpus = sample_corpus()
    >>> [doc] = corpus.sample(1, seed=0)
    >>> prompt_part = f"<document>\\n{sanitize(doc.text)}\\n</document>"
"""

from __future__ import annotations

from .corpus import (
    Corpus,
    open_corpus,
    read_hf_dataset,
    read_jsonl,
    read_parquet,
    read_text_dir,
    record,
    sample_corpus,
)
from .document import (
    CorpusError,
    CorpusWarning,
    Document,
    ReadReport,
    UnknownDocumentError,
    count_words,
    truncate_words,
)
from .jsonl import LAZY_THRESHOLD_BYTES
from .sanitize import DEFAULT_MAX_CHARS, PROMPT_TAGS, Sanitized, sanitize, sanitize_with_counts

__all__ = [
    "DEFAULT_MAX_CHARS",
    "LAZY_THRESHOLD_BYTES",
    "PROMPT_TAGS",
    "Corpus",
    "CorpusError",
    "CorpusWarning",
    "Document",
    "ReadReport",
    "Sanitized",
    "UnknownDocumentError",
    "count_words",
    "open_corpus",
    "read_hf_dataset",
    "read_jsonl",
    "read_parquet",
    "read_text_dir",
    "record",
    "sample_corpus",
    "sanitize",
    "sanitize_with_counts",
    "truncate_words",
]
