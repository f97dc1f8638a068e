"""A directory of text files (``*.txt``, ``*.md``), one document per file.

Files are found recursively, in sorted order of their relative paths; hidden files
and directories (names starting with ``.``) are skipped and symbolic links to
directories are not followed, so the same tree always gives the same corpus. Texts
are read again from disk when a document is asked for, so a large tree is cheap to
hold.
"""

from __future__ import annotations

import os
from pathlib import Path

from .document import CorpusError, Document, ReadReport, count_words

__all__ = ["TEXT_SUFFIXES", "index_text_dir"]

TEXT_SUFFIXES = (".txt", ".md")


def _decode(data: bytes) -> tuple[str, UnicodeDecodeError | None]:
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        return data.decode("utf-8-sig", errors="replace"), exc


def list_text_files(root: Path) -> list[str]:
    """Relative POSIX paths of the text files under ``root``, sorted."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for file in files:
            if not file.startswith(".") and file.lower().endswith(TEXT_SUFFIXES):
                found.append(Path(folder, file).relative_to(root).as_posix())
    return sorted(found)


class TextDirStore:
    """Relative paths of the kept files; texts are read on demand."""

    def __init__(self, root: Path, name: str, paths: list[str]):
        self._root = root
        self._name = name
        self._paths = paths
        self._positions = {p: i for i, p in enumerate(paths)}

    def __len__(self) -> int:
        return len(self._paths)

    def doc_id(self, position: int) -> str:
        return f"{self._name}#{self._paths[position]}"

    def position(self, doc_id: str) -> int | None:
        if not doc_id.startswith(self._name + "#"):
            return None
        return self._positions.get(doc_id[len(self._name) + 1 :])

    def load(self, position: int) -> Document:
        rel = self._paths[position]
        path = self._root / rel
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CorpusError(
                f"{path} can no longer be read ({exc}); open the corpus again."
            ) from exc
        text, _ = _decode(data)
        return Document(text, self.doc_id(position), str(path), {"path": rel})


def index_text_dir(
    root: Path,
    *,
    name: str,
    min_words: int,
    max_words: int,
    strict: bool,
) -> tuple[TextDirStore, ReadReport]:
    """Scan a directory of text files.

    Args:
        root: The directory.
        name: Corpus name; document ids are ``"<name>#<relative path>"``.
        min_words: Files with fewer words are dropped (counted).
        max_words: Only used to count how many documents will be truncated.
        strict: Raise :class:`CorpusError` on a file that is not valid UTF-8 instead of
            reading it with U+FFFD replacement characters and counting it.
    """
    report = ReadReport(str(root), "text-dir")
    kept: list[str] = []
    for rel in list_text_files(root):
        path = root / rel
        report.records += 1
        try:
            data = path.read_bytes()
        except OSError as exc:
            if strict:
                raise CorpusError(f"{path}: cannot be read ({exc}).") from exc
            report.malformed += 1
            report.problem(f"{path}: unreadable ({exc.strerror})")
            continue
        text, error = _decode(data)
        if error is not None:
            if strict:
                raise CorpusError(
                    f"{path}: not valid UTF-8 ({error.reason} at byte {error.start}). "
                    "Re-encode the file as UTF-8, or read with strict=False to replace the "
                    "bad bytes with U+FFFD."
                )
            report.decode_errors += 1
            report.problem(f"{path}: not valid UTF-8 at byte {error.start}; bad bytes replaced")
        if not text.strip():
            report.missing_text += 1
            report.problem(f"{path}: empty file")
            continue
        words = count_words(text)
        if words < min_words:
            report.too_short += 1
            continue
        report.truncated += words > max_words
        kept.append(rel)
    report.kept = len(kept)
    return TextDirStore(root, name, kept), report
