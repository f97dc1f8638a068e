"""A directory of .txt/.md files."""

from __future__ import annotations

import pytest

from spade_envs.corpus import CorpusError, CorpusWarning, open_corpus

WORDS = " ".join(f"w{i}" for i in range(30))


def test_recursive_sorted_and_filtered(tmp_path):
    root = tmp_path / "notes"
    (root / "b" / "deep").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "z.txt").write_text("zed " + WORDS)
    (root / "a.md").write_text("# Title\n\n" + WORDS)
    (root / "b" / "deep" / "c.TXT").write_text("deep " + WORDS)
    (root / "b" / "short.txt").write_text("too short")
    (root / "b" / "skip.rst").write_text(WORDS)
    (root / ".hidden.txt").write_text(WORDS)
    (root / ".git" / "x.txt").write_text(WORDS)
    corpus = open_corpus(root)
    assert corpus.report.format == "text-dir"
    assert list(corpus.ids()) == ["notes#a.md", "notes#b/deep/c.TXT", "notes#z.txt"]
    assert corpus.report.too_short == 1 and corpus.report.records == 4
    doc = corpus.get("notes#b/deep/c.TXT")
    assert doc.text.startswith("deep ") and doc.metadata == {"path": "b/deep/c.TXT"}
    assert doc.source == str(root / "b" / "deep" / "c.TXT")
    with pytest.raises(CorpusError, match="field= does not apply"):
        open_corpus(root, field="text")


def test_bad_utf8_is_reported_or_refused(tmp_path):
    (tmp_path / "ok.txt").write_text(WORDS, encoding="utf-8")
    (tmp_path / "latin.txt").write_bytes(("caf\xe9 " + WORDS).encode("latin-1"))
    with pytest.warns(CorpusWarning, match="1 decode errors"):
        corpus = open_corpus(tmp_path)
    assert corpus.report.decode_errors == 1
    assert corpus.report.problems == [
        f"{tmp_path / 'latin.txt'}: not valid UTF-8 at byte 3; bad bytes replaced"
    ]
    assert corpus.get(f"{tmp_path.name}#latin.txt").text.startswith("caf\ufffd ")
    with pytest.raises(CorpusError, match=r"latin\.txt: not valid UTF-8 .* at byte 3"):
        open_corpus(tmp_path, strict=True)


def test_directory_without_text_files(tmp_path):
    (tmp_path / "data.jsonl").write_text("{}\n")
    with pytest.raises(CorpusError, match=r"no \.txt/\.md files \(found \.jsonl\)"):
        open_corpus(tmp_path)
