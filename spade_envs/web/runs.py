"""Self-play runs: the trainer's ``metrics.jsonl`` curves, read from a directory of runs.

A run is a directory holding ``metrics.jsonl``: one JSON object per iteration with
flat numeric fields (``iteration``, ``designer_yield``, ``mean_regret``, ...). The runs
directory given to ``spade-envs serve --runs DIR`` holds run directories (or is one).
Runs are looked up by name among the directory's entries, never by joining a path
from the URL, so no request can reach outside it. A run still being written is read up
to its last complete line.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..trainer.metrics import RENAMED_FIELDS
from .params import HTTPError

__all__ = ["METRICS_FILE", "Run", "RunsDir"]

METRICS_FILE = "metrics.jsonl"
#: A run's saved configuration, first found wins.
CONFIG_FILES = ("config.toml", "config.json")
#: Run names shown and accepted (the directory's own entries, filtered by this).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: Points drawn per series; longer runs are thinned evenly (the last point always kept).
MAX_POINTS = 1000
#: The largest metrics file read (bytes); a larger one is read from its start up to this.
MAX_BYTES = 64 * 1024 * 1024


@dataclass
class Run:
    """One run's metrics.

    Attributes:
        name: The run directory's name (``.`` for a runs directory that is itself a run).
        rows: Parsed lines (only numeric fields kept), in file order.
        skipped: Lines that were not JSON objects (a partial last line is not counted).
        modified: The metrics file's modification time (epoch seconds).
        config: The run's saved configuration (``config.toml``, as the trainer writes it, or
            ``config.json``), at most 20,000 characters; empty when there is none.
        config_name: Which of those files it is.
    """

    name: str
    rows: list[dict[str, float]] = field(default_factory=list)
    skipped: int = 0
    modified: float = 0.0
    config: str = ""
    config_name: str = ""

    @property
    def fields(self) -> list[str]:
        """Every numeric field, in first-seen order (``iteration`` is the x axis, not a series)."""
        seen: dict[str, None] = {}
        for row in self.rows:
            for key in row:
                seen.setdefault(key, None)
        return [k for k in seen if k != "iteration"]

    def series(self, name: str) -> list[tuple[float, float]]:
        """``(iteration, value)`` of one field, thinned to :data:`MAX_POINTS`."""
        points = [
            (row.get("iteration", float(i)), row[name])
            for i, row in enumerate(self.rows)
            if name in row
        ]
        if len(points) <= MAX_POINTS:
            return points
        step = len(points) / MAX_POINTS
        kept = [points[int(i * step)] for i in range(MAX_POINTS - 1)]
        return [*kept, points[-1]]

    def last(self) -> dict[str, float]:
        return self.rows[-1] if self.rows else {}


def _numeric(row: dict[str, Any]) -> dict[str, float]:
    return {
        str(k): float(v)
        for k, v in row.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }


def read_metrics(path: Path) -> tuple[list[dict[str, float]], int]:
    """Rows of a metrics file and how many lines were not JSON objects."""
    rows: list[dict[str, float]] = []
    skipped = 0
    with path.open("rb") as handle:
        data = handle.read(MAX_BYTES)
    lines = data.split(b"\n")
    if lines and lines[-1].strip() and not data.endswith(b"\n"):
        lines = lines[:-1]  # a line still being written
    for line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if not isinstance(row, dict):
            skipped += 1
            continue
        for old, new in RENAMED_FIELDS.items():  # a run written before a field's rename
            if old in row:
                row.setdefault(new, row.pop(old))
        rows.append(_numeric(row))
    return rows, skipped


class RunsDir:
    """The runs under one directory, re-read only when a metrics file changes.

    Args:
        root: The directory given to ``--runs`` (None: no runs to show).
    """

    def __init__(self, root: str | os.PathLike[str] | None):
        self.root = None if root is None else Path(root)
        self._cache: dict[str, tuple[tuple[float, int], Run]] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """Runs, most recently updated first."""
        if self.root is None or not self.root.is_dir():
            return []
        found: list[tuple[float, str]] = []
        if (self.root / METRICS_FILE).is_file():
            found.append(((self.root / METRICS_FILE).stat().st_mtime, "."))
        try:
            entries = list(os.scandir(self.root))
        except OSError:
            return [name for _, name in found]
        for entry in entries:
            if not _NAME.fullmatch(entry.name) or not entry.is_dir():
                continue
            metrics = Path(entry.path) / METRICS_FILE
            try:
                found.append((metrics.stat().st_mtime, entry.name))
            except OSError:
                continue
        return [name for _, name in sorted(found, reverse=True)]

    def get(self, name: str) -> Run:
        """The run called ``name`` (404 unless it is one of :meth:`names`)."""
        if self.root is None or name not in self.names():
            raise HTTPError(404, f"There is no run called {name!r} in the runs directory.")
        directory = self.root if name == "." else self.root / name
        metrics = directory / METRICS_FILE
        try:
            stat = metrics.stat()
        except OSError as exc:
            raise HTTPError(404, f"The metrics of run {name!r} cannot be read: {exc}.") from exc
        stamp = (stat.st_mtime, stat.st_size)
        with self._lock:
            cached = self._cache.get(name)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            rows, skipped = read_metrics(metrics)
        except OSError as exc:
            raise HTTPError(404, f"The metrics of run {name!r} cannot be read: {exc}.") from exc
        config, config_name = "", ""
        for candidate in CONFIG_FILES:
            config_path = directory / candidate
            if config_path.is_file():
                try:
                    config = config_path.read_text(encoding="utf-8", errors="replace")[:20_000]
                except OSError:
                    continue
                config_name = candidate
                break
        run = Run(
            name=name,
            rows=rows,
            skipped=skipped,
            modified=stat.st_mtime,
            config=config,
            config_name=config_name,
        )
        with self._lock:
            self._cache[name] = (stamp, run)
        return run
