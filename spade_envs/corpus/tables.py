"""Tabular corpora through pyarrow: Parquet files and saved Hugging Face datasets.

A dataset written by ``datasets.Dataset.save_to_disk`` is a directory holding
``state.json`` (its ``_data_files`` list names the shards), ``dataset_info.json``
and the shards ``data-00000-of-0000N.arrow``, each an Arrow IPC *stream* (written
by ``pa.RecordBatchStreamWriter``). ``DatasetDict.save_to_disk`` writes
``dataset_dict.json`` (``{"splits": [...]}``) and one such directory per split.
The shards are memory-mapped and read with pyarrow directly, so the ``datasets``
package is not needed (and pyarrow, which it depends on, always is).

pyarrow is imported inside these functions: ``import spade_envs`` stays light.
"""

from __future__ import annotations

import json
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .document import CorpusError, Document, ReadReport, count_words
from .jsonl import TEXT_FIELDS, _bisect_id

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["index_hf_dataset", "index_parquet", "is_hf_dataset", "resolve_split"]

_BATCH_ROWS = 4096
HF_MARKERS = ("state.json", "dataset_info.json")
HF_DICT_MARKER = "dataset_dict.json"


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.ipc
        import pyarrow.parquet
    except ImportError as exc:  # pragma: no cover - pyarrow is in the dev extra
        raise CorpusError(
            "Reading Parquet files or saved Hugging Face datasets needs pyarrow: "
            "pip install 'spade-envs[parquet]'."
        ) from exc
    return pyarrow


class TableStore:
    """Rows of an Arrow table (memory-mapped where the format allows)."""

    def __init__(self, name: str, table: pa.Table, names: tuple[str, ...], rows: array, label: str):
        self._name = name
        self._table = table
        self._names = names
        self._rows = rows
        self._label = label

    def __len__(self) -> int:
        return len(self._rows)

    def doc_id(self, position: int) -> str:
        return f"{self._name}#{self._rows[position]}"

    def position(self, doc_id: str) -> int | None:
        return _bisect_id(self._name, self._rows, doc_id)

    def load(self, position: int) -> Document:
        row_index = self._rows[position]
        row = self._table.slice(row_index, 1).to_pylist()[0]
        text = next(row[n] for n in self._names if row.get(n))
        metadata = {k: v for k, v in row.items() if k not in self._names}
        return Document(text, self.doc_id(position), f"{self._label} row {row_index}", metadata)


def _text_columns(table: pa.Table, field: str | None, label: str) -> tuple[str, ...]:
    pa = _pyarrow()
    columns = table.column_names
    if field is not None:
        if field not in columns:
            raise CorpusError(
                f"{label} has no column {field!r}; its columns are {columns}. "
                "Pass field= naming the text column."
            )
        names: tuple[str, ...] = (field,)
    else:
        names = tuple(n for n in TEXT_FIELDS if n in columns)
        if not names:
            raise CorpusError(
                f"{label} has neither an 'orig_doc' nor a 'text' column (columns: {columns}). "
                "Pass field= naming the text column."
            )
    for name in names:
        kind = table.schema.field(name).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise CorpusError(
                f"{label}: column {name!r} holds {kind}, not strings. "
                "Pass field= naming a string column."
            )
    return names


def _index_table(
    table: pa.Table,
    *,
    name: str,
    label: str,
    report: ReadReport,
    field: str | None,
    min_words: int,
    max_words: int,
    strict: bool,
) -> TableStore:
    names = _text_columns(table, field, label)
    rows = array("q")
    row_index = 0
    for batch in table.select(list(names)).to_batches(max_chunksize=_BATCH_ROWS):
        columns = [batch.column(i).to_pylist() for i in range(len(names))]
        for values in zip(*columns):
            # Like the SPADE code: the first non-empty of orig_doc, text.
            text = next((v for v in values if v), None)
            report.records += 1
            if text is None or not text.strip():
                if strict:
                    raise CorpusError(
                        f"{label} row {row_index}: no text in column(s) {list(names)}; "
                        "drop the row or read with strict=False to skip it."
                    )
                report.missing_text += 1
                report.problem(f"{label} row {row_index}: missing text")
            else:
                words = count_words(text)
                if words < min_words:
                    report.too_short += 1
                else:
                    report.truncated += words > max_words
                    rows.append(row_index)
            row_index += 1
    report.kept = len(rows)
    return TableStore(name, table, names, rows, label)


def index_parquet(
    path: Path,
    *,
    name: str,
    field: str | None,
    min_words: int,
    max_words: int,
    strict: bool,
) -> tuple[TableStore, ReadReport]:
    """Read a Parquet file whose ``text`` or ``orig_doc`` column holds the documents."""
    pa = _pyarrow()
    try:
        table = pa.parquet.read_table(path, memory_map=True)
    except (pa.ArrowException, OSError) as exc:
        raise CorpusError(f"{path} is not a readable Parquet file: {exc}") from exc
    report = ReadReport(str(path), "parquet")
    store = _index_table(
        table,
        name=name,
        label=str(path),
        report=report,
        field=field,
        min_words=min_words,
        max_words=max_words,
        strict=strict,
    )
    return store, report


def is_hf_dataset(path: Path) -> bool:
    """Whether ``path`` is a directory written by ``save_to_disk``."""
    return path.is_dir() and (
        any((path / m).is_file() for m in HF_MARKERS) or (path / HF_DICT_MARKER).is_file()
    )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorpusError(f"{path} is not readable JSON: {exc}") from exc


def resolve_split(path: Path, split: str | None) -> tuple[Path, str | None]:
    """The dataset directory to read: ``path`` itself, or a split of a DatasetDict.

    Args:
        path: A ``save_to_disk`` directory.
        split: For a DatasetDict: which split (default ``"train"``, or the only one).

    Returns:
        ``(directory, split)``; ``split`` is ``None`` for a single dataset.
    """
    if not (path / HF_DICT_MARKER).is_file():
        if split is not None:
            raise CorpusError(f"{path} is a single dataset, not a DatasetDict; do not pass split=.")
        return path, None
    info = _read_json(path / HF_DICT_MARKER)
    splits = info.get("splits") if isinstance(info, dict) else None
    if not isinstance(splits, list) or not splits:
        raise CorpusError(
            f"{path / HF_DICT_MARKER} lists no splits (expected {{'splits': [...]}})."
        )
    if split is None:
        if "train" in splits:
            split = "train"
        elif len(splits) == 1:
            split = splits[0]
        else:
            raise CorpusError(
                f"{path} is a DatasetDict with splits {splits} and none is 'train'; "
                "pass split= to choose one."
            )
    if split not in splits:
        raise CorpusError(f"{path} has no split {split!r}; its splits are {splits}.")
    return path / split, split


def _read_arrow_file(pa: Any, path: Path) -> pa.Table:
    source = pa.memory_map(str(path))
    try:
        return pa.ipc.open_stream(source).read_all()
    except pa.ArrowInvalid:
        # Not a stream: accept the Arrow IPC file format too (written by other tools).
        source = pa.memory_map(str(path))
        return pa.ipc.open_file(source).read_all()


def index_hf_dataset(
    path: Path,
    *,
    name: str,
    field: str | None,
    min_words: int,
    max_words: int,
    strict: bool,
) -> tuple[TableStore, ReadReport]:
    """Read one dataset directory written by ``save_to_disk`` (see :func:`resolve_split`)."""
    pa = _pyarrow()
    state_path = path / "state.json"
    if state_path.is_file():
        state = _read_json(state_path)
        files = state.get("_data_files") if isinstance(state, dict) else None
        if not isinstance(files, list) or not all(
            isinstance(f, dict) and isinstance(f.get("filename"), str) for f in files
        ):
            raise CorpusError(
                f"{state_path} has no '_data_files' list of {{'filename': ...}} entries; "
                "save the dataset again with datasets' save_to_disk."
            )
        shards = [path / f["filename"] for f in files]
    else:
        shards = sorted(path.glob("data-*-of-*.arrow"))
    missing = [str(s) for s in shards if not s.is_file()]
    if missing or not shards:
        raise CorpusError(
            f"{path}: missing Arrow shard(s) {missing or ['data-*.arrow']}; "
            "the dataset directory is incomplete."
        )
    try:
        tables = [_read_arrow_file(pa, shard) for shard in shards]
    except (pa.ArrowException, OSError) as exc:
        raise CorpusError(f"{path}: cannot read the Arrow shards: {exc}") from exc
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    report = ReadReport(str(path), "hf-dataset")
    store = _index_table(
        table,
        name=name,
        label=str(path),
        report=report,
        field=field,
        min_words=min_words,
        max_words=max_words,
        strict=strict,
    )
    return store, report
