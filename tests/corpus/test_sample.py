"""The shipped sample corpus: real text, sane sizes, provenance for every document."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from collections import Counter
from pathlib import Path

from spade_envs.corpus import build_sample, count_words, sample_corpus

DATA = Path(build_sample.__file__).parent / "data"


def test_sample_corpus_loads_with_provenance():
    corpus = sample_corpus()
    assert 100 <= len(corpus) <= 300
    assert corpus.report.warnings == 0 and corpus.report.too_short == 0
    assert (DATA / "sample.jsonl").stat().st_size < 1_500_000
    topics = Counter()
    for doc in corpus:
        assert 100 <= count_words(doc.text) <= 1500, doc.doc_id
        assert not doc.truncated
        meta = doc.metadata
        assert meta["source"].startswith(
            f"CPython {meta['python']} standard library docstrings, module "
        )
        assert meta["licence"].startswith("PSF-2.0")
        # The source names the module whose docstrings the text quotes.
        module = meta["source"].split("module ", 1)[1].split(":", 1)[0]
        assert module in doc.text
        topics[meta["topic"]] += 1
    assert len(topics) >= 6 and min(topics.values()) >= 3
    assert len({d.text for d in corpus}) == len(corpus)  # no duplicates


def test_source_md_describes_the_file():
    text = (DATA / "SOURCE.md").read_text(encoding="utf-8")
    records = [json.loads(line) for line in (DATA / "sample.jsonl").read_text().splitlines()]
    assert f"{len(records)} documents" in text
    assert f"CPython {records[0]['python']}" in text
    assert "python -m spade_envs.corpus.build_sample" in text and "PSF-2.0" in text


def test_build_is_reproducible(tmp_path):
    """The documented command rebuilds the shipped file byte for byte (same Python).

    It runs in a fresh interpreter, as documented: a host process may patch what the
    builder reads (pytest replaces ``threading.excepthook``).
    """

    def build(out: Path) -> bytes:
        command = [sys.executable, "-m", "spade_envs.corpus.build_sample", "--out", str(out)]
        subprocess.run(command, check=True, capture_output=True)
        return out.read_bytes()

    first = build(tmp_path / "first.jsonl")
    shipped = (DATA / "sample.jsonl").read_bytes()
    built_with = json.loads(shipped.split(b"\n", 1)[0])["python"]
    if platform.python_version() == built_with:
        assert first == shipped
    else:  # another Python: its docstrings differ, but its builds must agree
        assert first == build(tmp_path / "second.jsonl")


def test_build_command_line(tmp_path, monkeypatch, capsys):
    records = [{"text": "one two", "source": "s", "licence": "l", "topic": "t", "python": "3"}]
    monkeypatch.setattr(build_sample, "build_documents", lambda: records)
    out = tmp_path / "tiny.jsonl"
    assert build_sample.main(["--out", str(out)]) == 0
    assert out.read_bytes() == build_sample.render(records)
    assert json.loads(out.read_text()) == records[0]
    assert build_sample.main(["--check", "--out", str(out)]) == 0
    out.write_text("stale\n")
    assert build_sample.main(["--check", "--out", str(out)]) == 1
    assert "differs from a fresh build" in capsys.readouterr().err
