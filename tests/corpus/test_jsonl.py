"""JSONL corpora: text/orig_doc fields, metadata, malformed lines, lazy indexing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spade_envs.corpus import (
    LAZY_THRESHOLD_BYTES,
    CorpusError,
    CorpusWarning,
    UnknownDocumentError,
    open_corpus,
    read_jsonl,
)
from spade_envs.error import SpadeError

WORDS = " ".join(f"w{i}" for i in range(30))  # 30 words: above the default min_words


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_text_orig_doc_and_metadata(tmp_path):
    path = write_lines(
        tmp_path / "mixed.jsonl",
        [
            json.dumps({"text": "plain " + WORDS, "url": "u1"}),
            "",
            "   ",
            json.dumps({"orig_doc": "orig " + WORDS, "text": "ignored " + WORDS, "lang": "en"}),
            json.dumps({"orig_doc": "", "text": "fallback " + WORDS}),  # empty orig_doc -> text
        ],
    )
    corpus = open_corpus(path)
    assert len(corpus) == 3 and corpus.name == "mixed"
    docs = list(corpus)
    assert [d.text.split()[0] for d in docs] == ["plain", "orig", "fallback"]
    # ids are "<name>#<0-based line index>", stable across blank lines
    assert [d.doc_id for d in docs] == ["mixed#0", "mixed#3", "mixed#4"]
    assert docs[0].metadata == {"url": "u1"}
    assert docs[1].metadata == {"lang": "en"}  # both text fields left out of metadata
    assert docs[1].source == f"{path}:4"
    assert corpus.get("mixed#3") == docs[1]
    assert "mixed#3" in corpus and "mixed#1" not in corpus
    assert list(corpus.ids()) == ["mixed#0", "mixed#3", "mixed#4"]
    assert "mixed#03" not in corpus and "mixed#+3" not in corpus and "other#3" not in corpus
    assert len(set(docs) | {corpus.get("mixed#0")}) == 3  # documents are hashable
    assert corpus.report.records == 3 and corpus.report.kept == 3 and corpus.report.warnings == 0


def test_field_option_and_name(tmp_path):
    path = write_lines(tmp_path / "c.jsonl", [json.dumps({"body": WORDS, "text": "short"})])
    corpus = read_jsonl(path, field="body", name="news")
    assert [d.doc_id for d in corpus] == ["news#0"]
    assert read_jsonl(path, field="body", name="a#b").get("a#b#0").text == WORDS
    assert corpus[0].text == WORDS and corpus[0].metadata == {"text": "short"}


BAD_LINES = [
    json.dumps({"text": "good " + WORDS}),
    '{"text": "broken',  # invalid JSON
    json.dumps(["a", "list"]),  # not an object
    json.dumps({"text": 42}),  # not a string
    json.dumps({"title": "no text here"}),  # no text field
    json.dumps({"text": "   "}),  # blank text
    json.dumps({"text": "too short"}),  # below min_words: dropped, not a warning
    json.dumps({"orig_doc": "also good " + WORDS}),
]


def test_malformed_lines_lenient_are_counted_and_warned(tmp_path):
    path = write_lines(tmp_path / "bad.jsonl", BAD_LINES)
    with pytest.warns(CorpusWarning, match="2 documents kept of 8 records"):
        corpus = open_corpus(path)
    report = corpus.report
    assert [d.doc_id for d in corpus] == ["bad#0", "bad#7"]
    assert (report.malformed, report.missing_text, report.too_short) == (3, 2, 1)
    assert report.warnings == 5
    assert report.problems[0].startswith(f"{path}:2: malformed: invalid JSON")
    assert "a JSON list" in report.problems[1]
    assert "'text' is a JSON int" in report.problems[2]
    with pytest.raises(UnknownDocumentError, match="min_words"):
        corpus.get("bad#6")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"text": "broken', r"bad\.jsonl:2: malformed: invalid JSON"),
        (json.dumps({"title": "x"}), r"bad\.jsonl:2: missing text"),
        (json.dumps({"text": ["x"]}), r"bad\.jsonl:2: malformed: field 'text' is a JSON list"),
    ],
)
def test_strict_raises_naming_file_and_line(tmp_path, line, message):
    path = write_lines(tmp_path / "bad.jsonl", [json.dumps({"text": WORDS}), line])
    with pytest.raises(CorpusError, match=message) as info:
        open_corpus(path, strict=True)
    assert isinstance(info.value, SpadeError)
    assert "strict=False" in str(info.value)


def test_invalid_utf8_line_is_malformed(tmp_path):
    path = tmp_path / "bytes.jsonl"
    path.write_bytes(json.dumps({"text": WORDS}).encode() + b'\n{"text": "\xff\xfe"}\n')
    with pytest.warns(CorpusWarning):
        corpus = open_corpus(path)
    assert len(corpus) == 1 and corpus.report.malformed == 1
    assert "not UTF-8" in corpus.report.problems[0]


def test_byte_order_mark_and_sniffing(tmp_path):
    path = tmp_path / "corpus.data"  # unknown suffix: sniffed as JSONL
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"text": WORDS}).encode() + b"\n")
    for lazy in (False, True):
        corpus = open_corpus(path, lazy=lazy)
        assert corpus[0].text == WORDS


def test_format_errors_say_what_to_do(tmp_path):
    (tmp_path / "array.json").write_text(json.dumps([{"text": WORDS}]))
    with pytest.raises(CorpusError, match="JSON array, not JSON Lines"):
        open_corpus(tmp_path / "array.json")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01binary")
    with pytest.raises(CorpusError, match="Cannot tell the format"):
        open_corpus(tmp_path / "blob.bin")
    with pytest.raises(CorpusError, match="No corpus at"):
        open_corpus(tmp_path / "missing.jsonl")
    good = write_lines(tmp_path / "good.jsonl", [json.dumps({"text": WORDS})])
    with pytest.raises(CorpusError, match="max_words must be an int >= 1"):
        open_corpus(good, max_words=0)
    with pytest.raises(CorpusError, match="min_words must be an int >= 0"):
        open_corpus(good, min_words=-1)
    with pytest.raises(CorpusError, match="a directory; give a file"):
        read_jsonl(tmp_path)


def test_truncation_and_min_words(tmp_path):
    long_text = "para one\n\n" + " ".join(f"x{i}" for i in range(5000))
    path = write_lines(
        tmp_path / "t.jsonl", [json.dumps({"text": long_text}), json.dumps({"text": "a b c"})]
    )
    corpus = open_corpus(path, max_words=100, min_words=3)
    assert len(corpus) == 2 and corpus.report.truncated == 1
    doc = corpus[0]
    assert doc.truncated and doc.text.startswith("para one\n\n")  # layout kept
    body, marker = doc.text.rsplit("\n", 1)
    assert len(body.split()) == 100 and marker == "[Document truncated at ~100 words]"
    assert not corpus[1].truncated
    assert len(open_corpus(path, min_words=4)) == 1


def test_lazy_store_matches_memory_store(tmp_path):
    lines = [json.dumps({"text": f"doc {i} " + WORDS, "i": i}) if i % 3 else "" for i in range(40)]
    path = write_lines(tmp_path / "same.jsonl", lines)
    eager = open_corpus(path, lazy=False)
    lazy = open_corpus(path, lazy=True)
    assert list(lazy) == list(eager)
    assert lazy.get("same#5") == eager.get("same#5")
    assert lazy.sample(5, seed=1) == eager.sample(5, seed=1)
    with pytest.raises(UnknownDocumentError):
        lazy.get("same#3")  # a blank line has no id


def test_lazy_store_notices_a_rewritten_file(tmp_path):
    path = write_lines(tmp_path / "w.jsonl", [json.dumps({"text": WORDS})])
    corpus = open_corpus(path, lazy=True)
    path.write_text(json.dumps({"text": "other " + WORDS}) + "\n")
    os.utime(path, ns=(1, 1))
    with pytest.raises(CorpusError, match="changed after it was indexed"):
        corpus[0]


def test_large_file_is_indexed_not_held(tmp_path):
    """A ~60 MB JSONL is indexed by byte offsets: opening it holds no texts.

    Measured in a fresh interpreter: the memory it keeps after opening (resident set
    growth) stays far below the file's size, which holding the texts would exceed.
    """
    path = tmp_path / "big.jsonl"
    chunk = " ".join(["lorem-ipsum-dolor-sit-amet-consectetur"] * 150)  # ~6 KB, 150 words
    count = 10_000
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(count):
            handle.write(json.dumps({"text": f"document {i} {chunk}", "n": i}) + "\n")
    size = path.stat().st_size
    assert size > LAZY_THRESHOLD_BYTES

    probe = f"""
import json, resource
from spade_envs.corpus import open_corpus

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

before = rss()
corpus = open_corpus({str(path)!r}, max_words=50)
kept = rss() - before
doc = corpus.get("big#7777")
print(json.dumps({{"kept": kept, "store": type(corpus._store).__name__, "len": len(corpus),
    "truncated": corpus.report.truncated, "text": doc.text[:25], "meta": doc.metadata,
    "source": doc.source, "cut": doc.truncated,
    "same": [d.doc_id for d in corpus.sample(3, seed=4)] == [d.doc_id for d in corpus.sample(3, seed=4)]}}))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert result["len"] == count and result["truncated"] == count
    assert result["kept"] < size / 6, f"opening a {size:,}-byte file kept {result['kept']:,} bytes"
    # By size alone the file got the offsets index (no timing: the index is the mechanism).
    assert result["store"] == "LazyJsonlStore"
    assert result["text"] == "document 7777 lorem-ipsum" and result["meta"] == {"n": 7777}
    assert result["source"] == f"{path}:7778" and result["cut"] and result["same"]


def test_eager_store_holds_the_texts(tmp_path):
    """The counterpart of the test above: the same probe sees an in-memory store grow."""
    path = tmp_path / "small.jsonl"
    path.write_text(json.dumps({"text": WORDS}) + "\n")
    from spade_envs.corpus.jsonl import LazyJsonlStore, MemoryStore

    assert isinstance(open_corpus(path)._store, MemoryStore)
    assert isinstance(open_corpus(path, lazy=True)._store, LazyJsonlStore)
