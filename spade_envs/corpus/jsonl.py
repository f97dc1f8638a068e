"""JSONL corpora: one JSON object per line, its text in ``text`` or ``orig_doc``.

Small files are read into memory. Large ones (over ``LAZY_THRESHOLD_BYTES``) are
scanned once to count words and remember the byte offset of every kept line; a
document's text is read back from disk only when it is asked for, so a corpus of
many gigabytes costs about 16 bytes of memory per document.
"""

from __future__ import annotations

import json
import os
from array import array
from bisect import bisect_left
from pathlib import Path
from typing import Any

from .document import CorpusError, Document, ReadReport, count_words

__all__ = ["LAZY_THRESHOLD_BYTES", "TEXT_FIELDS", "index_jsonl"]

# Above this size a JSONL file is indexed by byte offsets instead of held in memory.
LAZY_THRESHOLD_BYTES = 50 * 1024 * 1024

# Field names tried in order when none is given: the SPADE code reads
# ``obj.get("orig_doc") or obj.get("text")``.
TEXT_FIELDS = ("orig_doc", "text")


def _parse(raw: bytes, field: str | None) -> tuple[str | None, dict[str, Any] | None, str]:
    """Parse one non-blank line.

    Returns:
        ``(text, metadata, problem)``: ``text`` is ``None`` when the line is unusable,
        and ``problem`` then says why (``"malformed: ..."`` or ``"missing text: ..."``).
    """
    try:
        obj = json.loads(raw)
    except UnicodeDecodeError as exc:
        return None, None, f"malformed: not UTF-8 ({exc.reason} at byte {exc.start})"
    except json.JSONDecodeError as exc:
        return None, None, f"malformed: invalid JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(obj, dict):
        return None, None, f"malformed: a JSON {type(obj).__name__}, expected an object"
    names = (field,) if field else TEXT_FIELDS
    text: Any = None
    used = ""
    for name in names:
        value = obj.get(name)
        if value:  # like the SPADE code: an empty orig_doc falls back to text
            text, used = value, name
            break
    if text is None:
        wanted = " or ".join(repr(n) for n in names)
        return None, None, f"missing text: no non-empty {wanted} field"
    if not isinstance(text, str):
        return (
            None,
            None,
            f"malformed: field {used!r} is a JSON {type(text).__name__}, not a string",
        )
    if not text.strip():
        return None, None, f"missing text: field {used!r} is blank"
    metadata = {k: v for k, v in obj.items() if k not in names}
    return text, metadata, ""


class MemoryStore:
    """Documents held in memory, in source order."""

    def __init__(self, name: str, indices: array, docs: list[Document]):
        self._name = name
        self._indices = indices  # sorted source indices, for id lookup by bisection
        self._docs = docs

    def __len__(self) -> int:
        return len(self._docs)

    def doc_id(self, position: int) -> str:
        return self._docs[position].doc_id

    def load(self, position: int) -> Document:
        return self._docs[position]

    def position(self, doc_id: str) -> int | None:
        return _bisect_id(self._name, self._indices, doc_id)


class LazyJsonlStore:
    """Byte offsets of the kept lines of a JSONL file; texts are read on demand."""

    def __init__(
        self,
        path: Path,
        name: str,
        field: str | None,
        offsets: array,
        indices: array,
        stamp: tuple[int, int],
    ):
        self._path = path
        self._name = name
        self._field = field
        self._offsets = offsets
        self._indices = indices
        self._stamp = stamp

    def __len__(self) -> int:
        return len(self._offsets)

    def doc_id(self, position: int) -> str:
        return f"{self._name}#{self._indices[position]}"

    def position(self, doc_id: str) -> int | None:
        return _bisect_id(self._name, self._indices, doc_id)

    def load(self, position: int) -> Document:
        line_index = self._indices[position]
        stat = os.stat(self._path)
        # Offsets are only valid for the bytes that were indexed.
        if (stat.st_size, stat.st_mtime_ns) != self._stamp:
            raise CorpusError(
                f"{self._path} changed after it was indexed (size or modification time "
                "differs); open the corpus again with open_corpus()."
            )
        # A fresh handle per read keeps the store safe to share between threads.
        with open(self._path, "rb") as handle:
            handle.seek(self._offsets[position])
            raw = handle.readline()
        text, metadata, problem = _parse(raw, self._field)
        if text is None or metadata is None:
            raise CorpusError(
                f"{self._path}:{line_index + 1}: {problem} (it parsed when the file was "
                "indexed, so the file was rewritten in place); open the corpus again."
            )
        return Document(text, self.doc_id(position), f"{self._path}:{line_index + 1}", metadata)


def _bisect_id(name: str, indices: array, doc_id: str) -> int | None:
    if not doc_id.startswith(name + "#"):
        return None
    number = doc_id[len(name) + 1 :]
    # Only the canonical spelling: "c#7" names a document, "c#07" does not.
    if not number.isdigit() or not number.isascii() or str(int(number)) != number:
        return None
    index = int(number)
    position = bisect_left(indices, index)
    if position < len(indices) and indices[position] == index:
        return position
    return None


def index_jsonl(
    path: Path,
    *,
    name: str,
    field: str | None,
    min_words: int,
    max_words: int,
    strict: bool,
    lazy: bool | None,
) -> tuple[MemoryStore | LazyJsonlStore, ReadReport]:
    """Read (or index) a JSONL file.

    Args:
        path: The file.
        name: Corpus name, the prefix of every document id.
        field: The text field; ``None`` tries ``orig_doc`` then ``text``.
        min_words: Records with fewer words are dropped (counted in the report).
        max_words: Only used to count how many documents will be truncated.
        strict: Raise :class:`CorpusError` at the first unusable line instead of
            skipping and counting it.
        lazy: Index byte offsets instead of holding texts; ``None`` decides by size.

    Returns:
        The store and the read report.
    """
    stat = os.stat(path)
    if lazy is None:
        lazy = stat.st_size > LAZY_THRESHOLD_BYTES
    report = ReadReport(str(path), "jsonl")
    indices = array("q")
    offsets = array("Q")
    docs: list[Document] = []
    offset = 0
    with open(path, "rb") as handle:
        for line_index, raw in enumerate(handle):
            start, offset = offset, offset + len(raw)
            if line_index == 0 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte-order mark written by some editors
                start += 3
            if not raw.strip():
                continue
            report.records += 1
            text, metadata, problem = _parse(raw, field)
            if text is None or metadata is None:
                where = f"{path}:{line_index + 1}"
                if strict:
                    raise CorpusError(
                        f"{where}: {problem}. Each line must be a JSON object with a "
                        f"string {field or 'text'!r} field"
                        + ("" if field else " (or 'orig_doc')")
                        + "; fix or delete the line, or read with strict=False to skip it."
                    )
                if problem.startswith("malformed"):
                    report.malformed += 1
                else:
                    report.missing_text += 1
                report.problem(f"{where}: {problem}")
                continue
            words = count_words(text)
            if words < min_words:
                report.too_short += 1
                continue
            report.truncated += words > max_words
            indices.append(line_index)
            if lazy:
                offsets.append(start)
            else:
                docs.append(
                    Document(text, f"{name}#{line_index}", f"{path}:{line_index + 1}", metadata)
                )
    report.kept = len(indices)
    if lazy:
        return LazyJsonlStore(
            path, name, field, offsets, indices, (stat.st_size, stat.st_mtime_ns)
        ), report
    return MemoryStore(name, indices, docs), report
