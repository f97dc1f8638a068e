"""Parquet files and Hugging Face datasets saved with save_to_disk, read through pyarrow.

``datasets`` is not installed in this project's environment (and not needed), so the
saved-dataset directories are written here with pyarrow exactly as
``Dataset.save_to_disk`` lays them out: ``data-0000K-of-0000N.arrow`` shards in the
Arrow IPC *stream* format (``pa.RecordBatchStreamWriter``, as datasets' ``ArrowWriter``
writes them) with the ``huggingface`` schema metadata, ``state.json`` (whose
``_data_files`` lists the shards) and ``dataset_info.json``; ``DatasetDict`` adds
``dataset_dict.json`` and one such directory per split.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spade_envs.corpus import CorpusError, CorpusWarning, open_corpus, read_hf_dataset

WORDS = " ".join(f"w{i}" for i in range(30))


def make_table(n: int, start: int = 0) -> pa.Table:
    return pa.table(
        {
            "text": [f"row {i} {WORDS}" for i in range(start, start + n)],
            "label": list(range(start, start + n)),
        }
    )


def save_to_disk_layout(path: Path, table: pa.Table, num_shards: int = 1) -> Path:
    """Write ``table`` the way ``datasets.Dataset.save_to_disk`` does."""
    path.mkdir(parents=True)
    features = {
        name: {"dtype": "string" if pa.types.is_string(t) else "int64", "_type": "Value"}
        for name, t in zip(table.column_names, table.schema.types)
    }
    metadata = {"huggingface": json.dumps({"info": {"features": features}})}
    schema = table.schema.with_metadata(metadata)
    files = []
    per_shard = -(-table.num_rows // num_shards)
    for k in range(num_shards):
        filename = f"data-{k:05d}-of-{num_shards:05d}.arrow"
        files.append({"filename": filename})
        shard = table.slice(k * per_shard, per_shard).cast(schema)
        with pa.OSFile(str(path / filename), "wb") as sink:
            with pa.RecordBatchStreamWriter(sink, schema) as writer:
                writer.write_table(shard, max_chunksize=1000)
    state = {
        "_data_files": files,
        "_fingerprint": "0123456789abcdef",
        "_format_columns": None,
        "_format_kwargs": {},
        "_format_type": None,
        "_output_all_columns": False,
        "_split": None,
    }
    (path / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True))
    info = {"citation": "", "description": "", "features": features, "homepage": "", "license": ""}
    (path / "dataset_info.json").write_text(json.dumps(info, indent=2))
    return path


def test_parquet_text_column_and_metadata(tmp_path):
    path = tmp_path / "docs.parquet"
    table = make_table(5)
    table = table.set_column(0, "text", pa.array([*table.column("text").to_pylist()[:4], "tiny"]))
    pq.write_table(table, path, row_group_size=2)
    corpus = open_corpus(path)
    assert corpus.report.format == "parquet"
    assert len(corpus) == 4 and corpus.report.too_short == 1
    doc = corpus.get("docs#3")
    assert doc.text.startswith("row 3 ") and doc.metadata == {"label": 3}
    assert doc.source == f"{path} row 3"
    assert [d.doc_id for d in corpus] == [f"docs#{i}" for i in range(4)]


def test_parquet_orig_doc_falls_back_to_text(tmp_path):
    path = tmp_path / "orig.pq"
    pq.write_table(
        pa.table(
            {"orig_doc": ["first " + WORDS, None, ""], "text": ["x", "second " + WORDS, None]}
        ),
        path,
    )
    with pytest.warns(CorpusWarning, match="1 missing text"):
        corpus = open_corpus(path)
    assert [d.text.split()[0] for d in corpus] == ["first", "second"]
    with pytest.raises(CorpusError, match=r"orig\.pq row 2: no text"):
        open_corpus(path, strict=True)


def test_parquet_column_errors(tmp_path):
    path = tmp_path / "cols.parquet"
    pq.write_table(pa.table({"body": [WORDS], "n": [1]}), path)
    with pytest.raises(CorpusError, match="neither an 'orig_doc' nor a 'text' column"):
        open_corpus(path)
    assert open_corpus(path, field="body")[0].metadata == {"n": 1}
    with pytest.raises(CorpusError, match="holds int64, not strings"):
        open_corpus(path, field="n")
    with pytest.raises(CorpusError, match="no column 'nope'"):
        open_corpus(path, field="nope")
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really parquet")
    with pytest.raises(CorpusError, match="not a readable Parquet file"):
        open_corpus(broken)


def test_saved_dataset_with_shards(tmp_path):
    path = save_to_disk_layout(tmp_path / "wiki", make_table(25), num_shards=3)
    corpus = open_corpus(path)
    assert corpus.report.format == "hf-dataset" and corpus.name == "wiki"
    assert len(corpus) == 25
    assert [d.metadata["label"] for d in corpus] == list(range(25))
    assert corpus.get("wiki#24").text.startswith("row 24 ")
    assert corpus.sample(4, seed=2) == corpus.sample(4, seed=2)


def test_saved_dataset_dict_splits(tmp_path):
    root = tmp_path / "dd"
    save_to_disk_layout(root / "train", make_table(6))
    save_to_disk_layout(root / "test", make_table(3, start=100))
    (root / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    train = open_corpus(root)
    assert train.name == "dd/train" and len(train) == 6
    test = open_corpus(root, split="test")
    assert test.name == "dd/test" and test[0].metadata == {"label": 100}
    with pytest.raises(CorpusError, match=r"no split 'dev'; its splits are \['train', 'test'\]"):
        open_corpus(root, split="dev")


def test_saved_dataset_problems(tmp_path):
    path = save_to_disk_layout(tmp_path / "gone", make_table(4), num_shards=2)
    (path / "data-00001-of-00002.arrow").unlink()
    with pytest.raises(CorpusError, match="missing Arrow shard"):
        open_corpus(path)
    single = save_to_disk_layout(tmp_path / "single", make_table(2))
    with pytest.raises(CorpusError, match="not a DatasetDict"):
        read_hf_dataset(single, split="train")
    (single / "state.json").write_text("{")
    with pytest.raises(CorpusError, match="not readable JSON"):
        open_corpus(single)


def test_arrow_file_format_is_accepted(tmp_path):
    """Shards in the IPC *file* format (written by tools other than datasets) work too."""
    path = save_to_disk_layout(tmp_path / "filefmt", make_table(3))
    with pa.OSFile(str(path / "data-00000-of-00001.arrow"), "wb") as sink:
        with pa.ipc.new_file(sink, make_table(3).schema) as writer:
            writer.write_table(make_table(3))
    assert len(open_corpus(path)) == 3


def test_importing_the_package_does_not_import_pyarrow():
    code = (
        "import sys, spade_envs.corpus; print('pyarrow' in sys.modules, 'datasets' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
