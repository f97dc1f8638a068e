"""Grounding documents, read reports and word-level truncation.

Everything here is plain Python (no pyarrow), so the readers and the corpus can
share it without importing anything heavy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..error import SpadeError

__all__ = [
    "CorpusError",
    "CorpusWarning",
    "Document",
    "ReadReport",
    "Store",
    "UnknownDocumentError",
    "count_words",
    "truncate_words",
    "truncation_marker",
]

# How many problem descriptions a report keeps: enough to find the pattern in a
# broken file without holding one string per line of a million-line corpus.
MAX_PROBLEMS = 20

_WORD = re.compile(r"\S+")


class CorpusError(SpadeError):
    """A corpus could not be read, or a request to it cannot be met."""


class UnknownDocumentError(CorpusError, LookupError):
    """A document id does not name a document of the corpus."""


class CorpusWarning(UserWarning):
    """Records of a corpus were skipped while reading it (lenient mode)."""


@dataclass(frozen=True)
class Document:
    """One grounding document.

    Attributes:
        text: The document text (already truncated to the corpus' ``max_words``).
        doc_id: Stable id, ``"<corpus name>#<index>"``: the 0-based line index for JSONL,
            the 0-based row for Parquet and Hugging Face datasets, the relative path for
            a directory of text files. The same file gives the same ids, whatever
            ``min_words``/``max_words`` filter or cut.
        source: Where the text was read from, for people: ``"/data/c.jsonl:12"`` (1-based
            line), ``"/data/c.parquet row 11"``, or the text file's path.
        metadata: The record's other fields (JSONL keys or table columns besides the text).
        truncated: Whether ``text`` was cut at ``max_words`` words.
    """

    text: str
    doc_id: str
    source: str
    metadata: dict[str, Any] = field(default_factory=dict)
    truncated: bool = False

    def __hash__(self) -> int:
        # The generated hash would fail on the metadata dict; id and text identify a document.
        return hash((self.doc_id, self.text))

    @property
    def words(self) -> int:
        """Number of whitespace-separated words in ``text`` (the marker line included)."""
        return count_words(self.text)


@dataclass
class ReadReport:
    """What reading a corpus found: counts of kept and skipped records.

    Attributes:
        source: The path that was read.
        format: ``"jsonl"``, ``"parquet"``, ``"hf-dataset"`` or ``"text-dir"``.
        records: Records examined (non-blank lines, rows, or files).
        kept: Documents in the corpus.
        malformed: Records that could not be parsed (bad JSON, not an object, a text
            field that is not a string).
        missing_text: Records with no non-empty text field.
        too_short: Records dropped because they have fewer than ``min_words`` words.
        truncated: Kept documents longer than ``max_words`` (cut when read).
        decode_errors: Text files that are not valid UTF-8 (read with U+FFFD in place of
            the bad bytes).
        problems: The first few problems, each ``"<file>:<line>: <what>"``.
    """

    source: str
    format: str
    records: int = 0
    kept: int = 0
    malformed: int = 0
    missing_text: int = 0
    too_short: int = 0
    truncated: int = 0
    decode_errors: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def warnings(self) -> int:
        """Records that were skipped or damaged for a reason other than length."""
        return self.malformed + self.missing_text + self.decode_errors

    def problem(self, description: str) -> None:
        """Remember one problem (only the first ``MAX_PROBLEMS`` are kept)."""
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(description)

    def summary(self) -> str:
        """One paragraph for logs and warnings."""
        parts = [f"{self.kept} documents kept of {self.records} records in {self.source}"]
        for name in ("malformed", "missing_text", "decode_errors", "too_short", "truncated"):
            value = getattr(self, name)
            if value:
                parts.append(f"{value} {name.replace('_', ' ')}")
        text = "; ".join(parts) + "."
        if self.problems:
            shown = "; ".join(self.problems[:5])
            more = len(self.problems) - 5
            text += f" First problems: {shown}" + (f" (+{more} more)" if more > 0 else "") + "."
        return text


class Store(Protocol):
    """Random access to the documents a reader found (texts not yet truncated)."""

    def __len__(self) -> int: ...

    def doc_id(self, position: int) -> str:
        """The id of the document at ``position`` (cheap: no text is read)."""
        ...

    def load(self, position: int) -> Document:
        """The full document at ``position``."""
        ...

    def position(self, doc_id: str) -> int | None:
        """Where ``doc_id`` is, or ``None``."""
        ...


def count_words(text: str) -> int:
    """Number of whitespace-separated words (``len(text.split())``)."""
    return len(text.split())


def truncation_marker(max_words: int) -> str:
    """The line appended to a cut document (the SPADE code's wording)."""
    return f"[Document truncated at ~{max_words} words]"


def truncate_words(text: str, max_words: int) -> tuple[str, bool]:
    """Keep the first ``max_words`` words of ``text``, then a marker line.

    Unlike the SPADE code, which re-joins the kept words with single spaces, the
    original whitespace (paragraphs, code indentation) up to the last kept word is
    kept: structure helps the designer read a document.

    Args:
        text: The document text.
        max_words: The most words to keep (at least 1).

    Returns:
        ``(text, truncated)``: the text unchanged and ``False`` when it has at most
        ``max_words`` words; otherwise the cut text, a newline and
        :func:`truncation_marker`, and ``True``.
    """
    if max_words < 1:
        raise CorpusError(f"max_words must be at least 1, got {max_words}.")
    # Fast exits, since this runs on every document read: a text of n characters has
    # at most (n + 1) // 2 words, and str.split counts in C.
    if len(text) < 2 * max_words or (len(text) < 1_000_000 and count_words(text) <= max_words):
        return text, False
    end = -1
    for count, match in enumerate(_WORD.finditer(text), start=1):
        if count == max_words:
            end = match.end()
        elif count > max_words:
            return text[:end] + "\n" + truncation_marker(max_words), True
    return text, False
