"""Export of the versions a list shows, in the formats ``spade-envs export`` writes.

``jsonl`` is streamed (one object per version, exactly the lines of
``Registry.export_jsonl``); ``parquet`` is written by the registry's Parquet writer to a
temporary file and streamed; ``package`` (a directory that ``pip install``s) is written
by ``export_package`` and sent as a zip. Versions go out oldest first, so an import
registers each name's versions in order. Files re-import with ``spade-envs import``.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from .params import HTTPError

__all__ = ["EXPORT_FORMATS", "MAX_PACKAGE", "export_response"]

EXPORT_FORMATS = ("jsonl", "parquet", "package")
#: A package holds every record in memory while it is written: bounded.
MAX_PACKAGE = 20_000
_CHUNK = 500


def _records(registry: Any, keys: np.ndarray) -> Iterator[Any]:
    for start in range(0, len(keys), _CHUNK):
        chunk = [int(k) for k in keys[start : start + _CHUNK]]
        found = registry.by_keys(chunk)
        for key in chunk:
            record = found.get(key)
            if record is not None:  # deleted since the list was drawn: skipped
                yield record


def _file_blocks(path: Path, cleanup: Path) -> Iterator[bytes]:
    """The file in blocks; ``cleanup`` is removed as soon as the last block is out, so
    it is gone before the client sees the end of the response."""
    try:
        with path.open("rb") as handle:
            while block := handle.read(1 << 20):
                yield block
    finally:
        shutil.rmtree(cleanup, ignore_errors=True)


#: Each format's file suffix and media type.
_FILES = {
    "jsonl": ("jsonl", "application/x-ndjson"),
    "parquet": ("parquet", "application/vnd.apache.parquet"),
    "package": ("zip", "application/zip"),
}


def export_response(registry: Any, keys: np.ndarray, fmt: str, *, head: bool = False) -> Response:
    """A download of the versions with ``keys`` in format ``fmt``.

    Args:
        registry: Where the versions are read from.
        keys: Registry keys of the versions.
        fmt: One of :data:`EXPORT_FORMATS`.
        head: Answer a HEAD request: the status and headers a GET would get, and none of
            its work (a package or Parquet file is not written only to be thrown away).

    Raises:
        HTTPError: 400 for an empty selection or a package over :data:`MAX_PACKAGE`
            versions; 501 when Parquet is asked for without pyarrow.
    """
    if fmt not in EXPORT_FORMATS:
        raise HTTPError(400, f"format must be one of {', '.join(EXPORT_FORMATS)}; got {fmt!r}.")
    keys = np.sort(np.asarray(keys, dtype=np.int64))
    if not len(keys):
        raise HTTPError(400, "No environment matches these filters: there is nothing to export.")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise HTTPError(
                501, "Parquet export needs pyarrow on the server: pip install 'spade-envs[web]'."
            ) from None
    if fmt == "package" and len(keys) > MAX_PACKAGE:
        raise HTTPError(
            400,
            f"A package export holds at most {MAX_PACKAGE:,} versions and this selection "
            f"has {len(keys):,}: narrow the filters, or use `spade-envs export DIR "
            "--format package`.",
        )
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    stem = f"spade-corpus-{stamp}-{len(keys)}"
    suffix, media_type = _FILES[fmt]
    if head:
        response = Response(media_type=media_type, headers=_attachment(f"{stem}.{suffix}"))
        del response.headers["content-length"]  # the body's length is unknown until built
        return response
    if fmt == "jsonl":

        def lines() -> Iterator[bytes]:
            batch: list[str] = []
            for record in _records(registry, keys):
                batch.append(json.dumps(record.to_dict(), ensure_ascii=False))
                if len(batch) >= _CHUNK:
                    yield ("\n".join(batch) + "\n").encode("utf-8")
                    batch = []
            if batch:
                yield ("\n".join(batch) + "\n").encode("utf-8")

        return _download(lines(), f"{stem}.{suffix}", media_type, None)
    tmp = Path(tempfile.mkdtemp(prefix="spade-web-export-"))
    try:
        if fmt == "parquet":
            from ..error import SpadeError
            from ..registry import formats

            out = tmp / f"{stem}.{suffix}"
            try:
                # The CLI's own writer, so the file is what `spade-envs export` makes.
                formats.export_parquet(_records(registry, keys), out)
            except SpadeError as exc:
                raise HTTPError(500, f"Parquet export failed: {exc}") from exc
            return _download(_file_blocks(out, tmp), out.name, media_type, tmp)
        from ..registry.package_export import export_package

        directory = tmp / stem
        export_package(list(_records(registry, keys)), directory)
        archive = tmp / f"{stem}.{suffix}"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
            for path in sorted(directory.rglob("*")):
                if path.is_file():
                    zipped.write(path, Path(stem) / path.relative_to(directory))
        return _download(_file_blocks(archive, tmp), archive.name, media_type, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _download(
    body: Iterator[bytes], filename: str, content_type: str, cleanup: Path | None
) -> StreamingResponse:
    """A streamed attachment; ``cleanup`` (a temporary directory) is also removed after
    the response when the body never ran to its end (a client that went away)."""
    task = None if cleanup is None else BackgroundTask(shutil.rmtree, cleanup, ignore_errors=True)
    return StreamingResponse(
        body, media_type=content_type, headers=_attachment(filename), background=task
    )


def _attachment(filename: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{filename}"'}
