"""An in-memory catalog of every version's light columns, so lists stay fast at 100,000.

Filtering, sorting, faceting, paging and full-text search over a large corpus in SQL
would read each version's code on SQLite (the description is stored after the source
in the row) and aggregate play statistics on every request. The catalog reads the
registry's bulk light rows (:meth:`~spade_envs.registry.Registry.light_rows` and its
siblings; no SQL lives here) once (about 1.5 s for 100,000 versions here), then keeps
up in the background: new versions by key, statuses by a covering-index scan, play statistics
when their signature changes. Pages read an immutable :class:`Snapshot`; a refresh
builds a new one and swaps it in, so readers never see half an update.

The environment page itself always reads the registry directly (never stale).
"""

from __future__ import annotations

import functools
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..registry.ids import env_id

__all__ = ["FACETS", "Catalog", "Snapshot"]

#: The categorical columns one can filter and count by. An empty value (no skill, no
#: suite) is kept in the codes but is no choice: ``Snapshot.choices`` leaves it out.
FACETS = ("skill", "kind", "origin", "status", "suite")
_SUMMARY_CHARS = 240
#: Statuses are read whole at least this often (seconds), whatever their counts say.
STATUS_RECHECK_S = 60.0
_BATCH = 5000


def _spaced(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower()


@dataclass(frozen=True)
class Snapshot:
    """Every version's light columns at one moment; arrays are aligned by position.

    Positions are in key order (oldest first). ``codes[f]`` holds small integers into
    ``vocab[f]`` for each facet ``f``. ``hint_gain`` is the highest hint gain (mean return
    with the hint minus without it) of any checkpoint, ``win_rate`` and the mean returns
    those of the most recently updated checkpoint (NaN for versions never played).
    """

    generation: int
    keys: np.ndarray
    names: list[str]
    versions: np.ndarray
    codes: dict[str, np.ndarray]
    vocab: dict[str, list[str]]
    created: np.ndarray
    hint_gain: np.ndarray
    win_rate: np.ndarray
    return_with_hint: np.ndarray
    return_without_hint: np.ndarray
    checkpoints: np.ndarray
    summaries: list[str]
    haystacks: list[str]
    parents: dict[int, tuple[str, ...]]
    children: dict[str, list[int]]
    refreshed_at: float = field(default_factory=time.time)

    def __len__(self) -> int:
        return len(self.keys)

    @functools.cached_property
    def name_set(self) -> frozenset[str]:
        """Every name in the snapshot (built once per snapshot, for membership tests)."""
        return frozenset(self.names)

    def env_id(self, pos: int) -> str:
        return env_id(self.names[pos], int(self.versions[pos]))

    def value(self, facet: str, pos: int) -> str:
        return self.vocab[facet][int(self.codes[facet][pos])]

    def choices(self, facet: str) -> list[str]:
        """The values of ``facet`` one can filter by: those present, sorted, empty left out."""
        return sorted(v for v in self.vocab[facet] if v)

    def position(self, key: int) -> int | None:
        """The position of a version's key, or None when the catalog has not seen it."""
        i = int(np.searchsorted(self.keys, key))
        return i if i < len(self.keys) and int(self.keys[i]) == key else None

    def facet_counts(self, facet: str, positions: np.ndarray | None = None) -> dict[str, int]:
        """How many versions (of ``positions``, default all) have each value of ``facet``."""
        codes = self.codes[facet] if positions is None else self.codes[facet][positions]
        counts = np.bincount(codes, minlength=len(self.vocab[facet]))
        return {v: int(counts[i]) for i, v in enumerate(self.vocab[facet]) if counts[i]}

    def children_of(self, id_: str, name: str) -> list[int]:
        """Positions of versions whose parents name this version (by ID or by name)."""
        found = set(self.children.get(id_, [])) | set(self.children.get(name, []))
        return sorted(found)


def _empty() -> Snapshot:
    floats = np.zeros(0, dtype=np.float64)
    return Snapshot(
        generation=0,
        keys=np.zeros(0, dtype=np.int64),
        names=[],
        versions=np.zeros(0, dtype=np.int32),
        codes={f: np.zeros(0, dtype=np.int32) for f in FACETS},
        vocab={f: [] for f in FACETS},
        created=floats,
        hint_gain=floats,
        win_rate=floats,
        return_with_hint=floats,
        return_without_hint=floats,
        checkpoints=np.zeros(0, dtype=np.int32),
        summaries=[],
        haystacks=[],
        parents={},
        children={},
    )


class Catalog:
    """The light columns of a registry, refreshed in the background.

    Args:
        registry: A :class:`spade_envs.registry.Registry` (only read).
        refresh_s: How old a snapshot may get before a request triggers a refresh (the
            request is answered from the current snapshot; the refresh runs beside it).
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(
        self, registry: Any, refresh_s: float = 5.0, clock: Callable[[], float] = time.monotonic
    ):
        self.registry = registry
        self.refresh_s = refresh_s
        self._clock = clock
        self._snap: Snapshot | None = None
        self._lock = threading.Lock()
        self._checked = -math.inf
        self._play_signature: tuple[Any, ...] | None = None
        self._refreshing = False
        self._statuses_read = -math.inf
        #: The last refresh's error, shown on pages (the old snapshot stays in use).
        self.error = ""

    def snapshot(self) -> Snapshot:
        """The current snapshot; loads on first use, refreshes in the background when old."""
        snap = self._snap
        if snap is None:
            return self.refresh()
        if self._clock() - self._checked >= self.refresh_s and not self._refreshing:
            self._refreshing = True
            threading.Thread(target=self._background, name="spade-web-catalog", daemon=True).start()
        return snap

    def _background(self) -> None:
        try:
            self.refresh()
        except Exception as exc:  # a database hiccup must not kill the server
            self.error = f"catalog refresh failed: {exc}"
        finally:
            self._refreshing = False

    def refresh(self, progress: Callable[[int], None] | None = None) -> Snapshot:
        """Bring the snapshot up to date with the registry now and return it."""
        with self._lock:
            self._checked = self._clock()
            old = self._snap if self._snap is not None else _empty()
            snap = self._with_new_versions(old, progress)
            snap = self._with_statuses(snap, grew=snap is not old)
            snap = self._with_play_stats(snap, force=snap is not old and len(snap) > len(old))
            if snap is not old or self._snap is None:
                snap = replace(snap, generation=old.generation + 1, refreshed_at=time.time())
            self._snap = snap
            self.error = ""
            return snap

    # ----- new versions -----------------------------------------------------------------
    def _with_new_versions(self, old: Snapshot, progress: Callable[[int], None] | None) -> Snapshot:
        after = int(old.keys[-1]) if len(old) else 0
        rows: list[Any] = []  # spade_envs.registry.LightRow
        while True:
            batch = self.registry.light_rows(after, _BATCH)
            if not batch:
                break
            rows.extend(batch)
            after = batch[-1].key
            if progress is not None:
                progress(len(old) + len(rows))
        if not rows:
            return old
        vocab = {f: list(old.vocab[f]) for f in FACETS}
        lookup = {f: {v: i for i, v in enumerate(vocab[f])} for f in FACETS}
        new_codes: dict[str, list[int]] = {f: [] for f in FACETS}
        names = list(old.names)
        summaries = list(old.summaries)
        haystacks = list(old.haystacks)
        parents = dict(old.parents)
        children = {k: list(v) for k, v in old.children.items()}
        keys, versions, created = [], [], []
        for offset, (
            key,
            name,
            version,
            kind,
            skill,
            origin,
            status,
            made,
            text,
            refs,
            suite,
        ) in enumerate(rows):
            pos = len(old) + offset
            for facet, value in zip(FACETS, (skill, kind, origin, status, suite)):
                code = lookup[facet].get(value)
                if code is None:
                    code = lookup[facet][value] = len(vocab[facet])
                    vocab[facet].append(value)
                new_codes[facet].append(code)
            keys.append(key)
            versions.append(version)
            created.append(made)
            names.append(name)
            flat = " ".join(text.split())
            summaries.append(
                flat if len(flat) <= _SUMMARY_CHARS else flat[: _SUMMARY_CHARS - 1] + "…"
            )
            ident = f"spade/{name}-v{version}"  # stored names are valid: no re-check
            haystacks.append(f"{ident.lower()} {_spaced(name)} {skill} {flat.lower()}")
            if refs:
                parents[pos] = refs
                for ref in refs:
                    children.setdefault(ref, []).append(pos)
        nan = np.full(len(rows), np.nan)
        return Snapshot(
            generation=old.generation,
            keys=np.concatenate([old.keys, np.asarray(keys, dtype=np.int64)]),
            names=names,
            versions=np.concatenate([old.versions, np.asarray(versions, dtype=np.int32)]),
            codes={
                f: np.concatenate([old.codes[f], np.asarray(new_codes[f], dtype=np.int32)])
                for f in FACETS
            },
            vocab=vocab,
            created=np.concatenate([old.created, np.asarray(created, dtype=np.float64)]),
            hint_gain=np.concatenate([old.hint_gain, nan]),
            win_rate=np.concatenate([old.win_rate, nan]),
            return_with_hint=np.concatenate([old.return_with_hint, nan]),
            return_without_hint=np.concatenate([old.return_without_hint, nan]),
            checkpoints=np.concatenate([old.checkpoints, np.zeros(len(rows), dtype=np.int32)]),
            summaries=summaries,
            haystacks=haystacks,
            parents=parents,
            children=children,
        )

    # ----- statuses -----------------------------------------------------------------------
    def _with_statuses(self, snap: Snapshot, grew: bool) -> Snapshot:
        if not len(snap):
            return snap
        # Reading every status costs ~0.1 s of Python at 100,000 versions; counting them
        # runs inside SQLite. A change of status changes the counts, so the full read
        # happens only then (and every STATUS_RECHECK_S, for two changes that cancel out).
        counts = self.registry.status_counts()
        due = self._clock() - self._statuses_read >= STATUS_RECHECK_S
        if not grew and not due and counts == snap.facet_counts("status"):
            return snap
        self._statuses_read = self._clock()
        rows = self.registry.statuses()
        keys = np.fromiter((k for k, _ in rows), dtype=np.int64, count=len(rows))
        vocab = list(snap.vocab["status"])
        lookup = {v: i for i, v in enumerate(vocab)}
        values = []
        for _, status in rows:
            code = lookup.get(status)
            if code is None:
                code = lookup[status] = len(vocab)
                vocab.append(status)
            values.append(code)
        codes = snap.codes["status"].copy()
        order = np.argsort(keys)
        keys, found = keys[order], np.asarray(values, dtype=np.int32)[order]
        where = np.searchsorted(snap.keys, keys)
        inside = where < len(snap.keys)
        inside[inside] = snap.keys[where[inside]] == keys[inside]
        codes[where[inside]] = found[inside]
        if len(vocab) == len(snap.vocab["status"]) and np.array_equal(codes, snap.codes["status"]):
            return snap
        return replace(
            snap, codes={**snap.codes, "status": codes}, vocab={**snap.vocab, "status": vocab}
        )

    # ----- play statistics ----------------------------------------------------------------
    def _with_play_stats(self, snap: Snapshot, force: bool) -> Snapshot:
        signature = self.registry.play_signature()
        if signature == self._play_signature and not force:
            return snap
        rows = self.registry.play_rows()
        n = len(snap)
        hint_gain = np.full(n, np.nan)
        win = np.full(n, np.nan)
        with_hint = np.full(n, np.nan)
        without = np.full(n, np.nan)
        checkpoints = np.zeros(n, dtype=np.int32)
        complete = True
        if rows and n:
            keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            pos = np.searchsorted(snap.keys, keys)
            known = pos < n
            known[known] = snap.keys[pos[known]] == keys[known]
            complete = bool(known.all())  # rows of versions registered after our read
            rank = np.arange(len(rows))[known]
            pos = pos[known]
            values = np.asarray([r[2:] for r in rows], dtype=np.float64)[known]
            best = np.full(n, -np.inf)
            np.maximum.at(best, pos, values[:, 0])
            hint_gain = np.where(np.isfinite(best), best, np.nan)
            checkpoints = np.bincount(pos, minlength=n).astype(np.int32)
            order = np.lexsort((rank, pos))  # by version, then by update time
            pos_sorted = pos[order]
            last = np.r_[pos_sorted[1:] != pos_sorted[:-1], True]
            latest = order[last]
            win[pos[latest]] = values[latest, 1]
            with_hint[pos[latest]] = values[latest, 2]
            without[pos[latest]] = values[latest, 3]
        self._play_signature = signature if complete else None
        return replace(
            snap,
            hint_gain=hint_gain,
            win_rate=win,
            return_with_hint=with_hint,
            return_without_hint=without,
            checkpoints=checkpoints,
        )
