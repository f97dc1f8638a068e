"""The list view's query: filters, full-text or semantic search, sort, facets and a page.

Everything runs over a catalog :class:`~spade_envs.web.catalog.Snapshot` with numpy
masks, so the 2,000th page costs what the first does. Full-text search matches every
word (or ``"quoted phrase"``) as a case-insensitive substring of the ID, the name (also
split into words: ``number guess`` finds ``NumberGuess``), the skill and the
description. Semantic search ranks by cosine similarity of the stored embeddings
(:class:`~spade_envs.web.vectors.Vectors`) and keeps the nearest :data:`SEMANTIC_LIMIT`.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .catalog import FACETS, Snapshot
from .params import HTTPError, Params
from .vectors import Vectors, align

__all__ = [
    "MODES",
    "PAGE_SIZES",
    "RENAMED_PARAMS",
    "SEMANTIC_LIMIT",
    "SORTS",
    "ListQuery",
    "ListResult",
    "Searcher",
    "parse_list_query",
    "renamed_query",
]

#: Sort keys of the list, each with its default direction (True: largest first).
SORTS = {
    "relevance": True,
    "created": True,
    "hint_gain": True,
    "novelty": True,
    "win_rate": True,
    "name": False,
}
MODES = ("text", "semantic")
PAGE_SIZES = (25, 50, 100, 200)
#: Semantic search keeps this many nearest versions (then filters and pages them).
SEMANTIC_LIMIT = 1000
#: Hint-gain bounds accepted by the range filter.
HINT_GAIN_BOUND = 1e6
#: Parameters renamed when "regret" became "hint_gain" (the registry's with-hint minus
#: without-hint return was never the floored regret): old name to new name, and
#: ``(name, old value)`` to new value. Old links are redirected (:func:`renamed_query`).
RENAMED_PARAMS = {"regret_min": "hint_gain_min", "regret_max": "hint_gain_max"}
RENAMED_VALUES = {("sort", "regret"): "hint_gain", ("color", "regret"): "hint_gain"}


@dataclass(frozen=True)
class ListQuery:
    """What the list shows: filters, search, order and page (all already checked)."""

    q: str = ""
    mode: str = "text"
    skill: str | None = None
    kind: str | None = None
    origin: str | None = None
    status: str | None = None
    suite: str | None = None
    name: str | None = None
    hint_gain_min: float | None = None
    hint_gain_max: float | None = None
    played: str | None = None
    sort: str = "created"
    descending: bool = True
    page: int = 1
    size: int = 50

    def facet(self, name: str) -> str | None:
        return getattr(self, name)

    def params(self) -> dict[str, Any]:
        """The query as URL parameters (defaults left out), for links and the export form."""
        out: dict[str, Any] = {}
        for key in ("q", *FACETS, "name", "hint_gain_min", "hint_gain_max", "played"):
            value = getattr(self, key)
            if value not in (None, ""):
                out[key] = value if not isinstance(value, float) else f"{value:g}"
        if self.q and self.mode != "text":
            out["mode"] = self.mode
        if self.sort != _default_sort(self):
            out["sort"] = self.sort
        if self.descending != SORTS[self.sort]:
            out["dir"] = "desc" if self.descending else "asc"
        if self.size != 50:
            out["size"] = self.size
        return out

    def filters(self) -> dict[str, Any]:
        """The parameters that choose *which* versions (no sort or page)."""
        return {k: v for k, v in self.params().items() if k not in ("sort", "dir", "size", "page")}


def renamed_query(query: dict[str, list[str]]) -> dict[str, list[str]] | None:
    """``query`` with the names and values of before the ``hint_gain`` rename replaced by
    the new ones, or None when it uses none of them (an old bookmark still finds its list).

    A parameter given under both its old and its new name keeps both, so that the page
    says it was given twice instead of one silently winning.
    """
    if not any(k in RENAMED_PARAMS for k in query) and not any(
        (k, v) in RENAMED_VALUES for k, values in query.items() for v in values
    ):
        return None
    out: dict[str, list[str]] = {}
    for key, values in query.items():
        new = RENAMED_PARAMS.get(key, key)
        out.setdefault(new, []).extend(RENAMED_VALUES.get((key, v), v) for v in values)
    return out


def _default_sort(query: ListQuery) -> str:
    return "relevance" if query.q else "created"


def parse_list_query(params: Params, snap: Snapshot, *, paged: bool = True) -> ListQuery:
    """Check the list parameters against the catalog (an unknown skill, suite, ... is a 400
    with a hint)."""
    q = params.text("q", max_chars=200)
    mode = params.choice("mode", MODES, "text") or "text"
    values: dict[str, Any] = {}
    for facet in FACETS:
        values[facet] = params.choice(facet, snap.choices(facet) or ["(none yet)"])
    name = params.text("name", max_chars=64) or None
    if name is not None and name not in snap.name_set:
        raise HTTPError(400, f"name: no environment is called {name!r}.")
    low = params.number("hint_gain_min", low=-HINT_GAIN_BOUND, high=HINT_GAIN_BOUND)
    high = params.number("hint_gain_max", low=-HINT_GAIN_BOUND, high=HINT_GAIN_BOUND)
    if low is not None and high is not None and low > high:
        raise HTTPError(
            400, f"hint_gain_min ({low:g}) is above hint_gain_max ({high:g}); swap them."
        )
    played = params.choice("played", ("yes", "no"))
    sort = params.choice("sort", tuple(SORTS), "relevance" if q else "created") or "created"
    if sort == "relevance" and not q:
        raise HTTPError(400, "sort=relevance needs a search (q); sort by created, hint_gain, ...")
    direction = params.choice("dir", ("asc", "desc"))
    descending = SORTS[sort] if direction is None else direction == "desc"
    size = params.integer("size", low=1, high=max(PAGE_SIZES), default=50) or 50
    if size not in PAGE_SIZES:
        raise HTTPError(400, f"size must be one of {', '.join(map(str, PAGE_SIZES))}; got {size}.")
    page = (params.integer("page", low=1, high=10**9, default=1) or 1) if paged else 1
    return ListQuery(
        q=q, mode=mode, name=name, hint_gain_min=low, hint_gain_max=high, played=played, sort=sort,
        descending=descending, page=page, size=size, **values,
    )  # fmt: skip


@dataclass
class ListResult:
    """One page of a list query.

    Attributes:
        total: How many versions match (for semantic search: of the nearest kept).
        positions: Catalog positions on this page, in order.
        scores: Relevance of each (text: words matched in the name count double;
            semantic: cosine similarity), None for plain lists.
        novelty: Novelty of each on the page (NaN when unknown).
        facets: For each facet, counts of its values under every *other* filter.
        notes: Things the user should know (novelty still computing, no embeddings, ...).
        pages: The number of pages.
    """

    total: int
    positions: np.ndarray
    scores: np.ndarray | None
    novelty: np.ndarray
    facets: dict[str, dict[str, int]]
    notes: list[str] = field(default_factory=list)
    pages: int = 1
    matching: np.ndarray | None = None  # every matching position, in order (for export)


def _terms(q: str) -> list[str]:
    phrases = re.findall(r'"([^"]+)"', q)
    rest = re.sub(r'"[^"]*"', " ", q)
    return [t.lower() for t in [*phrases, *rest.split()] if t.strip()]


class Searcher:
    """Runs list queries over catalog snapshots, caching sort orders per snapshot."""

    def __init__(self, vectors: Vectors | None):
        self.vectors = vectors
        self._cache: dict[tuple[Any, ...], np.ndarray] = {}
        self._lock = threading.Lock()

    def _cached(self, key: tuple[Any, ...], make: Any) -> np.ndarray:
        with self._lock:
            found = self._cache.get(key)
        if found is None:
            found = make()
            with self._lock:
                if len(self._cache) > 32:
                    self._cache.clear()
                self._cache[key] = found
        return found

    def distinct_names(self, snap: Snapshot) -> int:
        """How many environment names (not versions) the snapshot holds."""
        found = self._cached(("names", snap.generation), lambda: np.array([len(set(snap.names))]))
        return int(found[0])

    def novelty(self, snap: Snapshot) -> tuple[np.ndarray, bool, tuple[Any, ...]]:
        """Novelty aligned with the snapshot's positions, whether it is up to date, and a
        key that changes whenever the values do."""
        if self.vectors is None:
            return np.full(len(snap), np.nan), True, ("none", snap.generation)
        keys, values, current = self.vectors.novelty()
        key = ("novelty", snap.generation, self.vectors.generation, len(keys), current)
        return self._cached(key, lambda: align(keys, values, snap.keys)), current, key

    def _masks(self, snap: Snapshot, query: ListQuery) -> dict[str, np.ndarray]:
        masks: dict[str, np.ndarray] = {}
        for facet in FACETS:
            value = query.facet(facet)
            if value is not None:
                masks[facet] = snap.codes[facet] == snap.vocab[facet].index(value)
        if query.name is not None:
            masks["name"] = np.fromiter((n == query.name for n in snap.names), bool, len(snap))
        if query.hint_gain_min is not None or query.hint_gain_max is not None:
            with np.errstate(invalid="ignore"):
                low = -np.inf if query.hint_gain_min is None else query.hint_gain_min
                high = np.inf if query.hint_gain_max is None else query.hint_gain_max
                masks["hint_gain"] = (snap.hint_gain >= low) & (snap.hint_gain <= high)
        if query.played is not None:
            masks["played"] = (snap.checkpoints > 0) == (query.played == "yes")
        return masks

    def _text_hits(self, snap: Snapshot, candidates: np.ndarray, q: str) -> np.ndarray:
        """Positions among ``candidates`` whose haystack holds every term of ``q``.

        Searches over the whole catalog are cached per snapshot, so paging through the
        results of a search does not search again.
        """
        if len(candidates) == len(snap):
            key = ("text", snap.generation, tuple(sorted(set(_terms(q)))))
            return self._cached(key, lambda: self._scan(snap, candidates, q))
        return self._scan(snap, candidates, q)

    @staticmethod
    def _scan(snap: Snapshot, candidates: np.ndarray, q: str) -> np.ndarray:
        hay = snap.haystacks
        # Rarest term first (judged on a sample), so later terms scan few rows.
        sample = hay[:: max(1, len(hay) // 500)]
        terms = sorted(set(_terms(q)), key=lambda t: (sum(t in h for h in sample), -len(t)))
        if len(candidates) == len(hay):
            found = [i for i, text in enumerate(hay) if terms[0] in text]
        else:
            found = [i for i in candidates.tolist() if terms[0] in hay[i]]
        for term in terms[1:]:
            found = [i for i in found if term in hay[i]]
        return np.asarray(found, dtype=np.int64)

    @staticmethod
    def _text_scores(snap: Snapshot, positions: np.ndarray, q: str) -> np.ndarray:
        """Relevance: each term counts 1, and 1 more when it is in the ID (the name)."""
        terms = _terms(q)
        names = snap.names
        return np.asarray(
            [len(terms) + sum(t in names[i].lower() for t in terms) for i in positions.tolist()],
            dtype=np.float64,
        )

    def run(self, snap: Snapshot, query: ListQuery, *, page_only: bool = True) -> ListResult:
        """The page ``query`` asks for (``page_only=False`` keeps every match, for export)."""
        n = len(snap)
        masks = self._masks(snap, query)
        notes: list[str] = []
        combined = np.ones(n, dtype=bool)
        for mask in masks.values():
            combined &= mask
        scores_all = np.full(n, np.nan)
        searched = np.ones(n, dtype=bool)
        if query.q and query.mode == "semantic":
            searched[:] = False
            hits = self._semantic(snap, query.q, notes)
            for pos, score in hits:
                searched[pos] = True
                scores_all[pos] = score
        elif query.q:
            searched[:] = False
            # Words are sought where the non-facet filters hold, so facet counts stay right.
            base = _all_but({k: m for k, m in masks.items() if k not in FACETS}, "", n)
            found = self._text_hits(snap, np.flatnonzero(base), query.q)
            searched[found] = True
            if query.sort == "relevance":
                scores_all[found] = self._text_scores(snap, found, query.q)
        selected = combined & searched
        facets = {}
        for facet in FACETS:
            others = searched.copy()
            for name, mask in masks.items():
                if name != facet:
                    others &= mask
            facets[facet] = snap.facet_counts(facet, np.flatnonzero(others))
        novelty, current, novelty_key = self.novelty(snap)
        if query.sort == "novelty" and not current:
            notes.append(
                "Novelty is still being computed for the newest embeddings; versions without "
                "a value are listed last."
            )
        positions = self._order(snap, query, scores_all, novelty, novelty_key)
        positions = positions[selected[positions]]
        total = len(positions)
        pages = max(1, -(-total // query.size))
        if query.page > pages and total:
            raise HTTPError(
                400, f"page {query.page} is past the last page ({pages:,}) of {total:,} results."
            )
        start = (query.page - 1) * query.size
        page = positions[start : start + query.size] if page_only else positions
        scores = None
        if query.q:
            scores = scores_all[page]
            if query.mode == "text" and query.sort != "relevance":
                scores = self._text_scores(snap, page, query.q)
        return ListResult(
            total=total,
            positions=page,
            scores=scores,
            novelty=novelty[page],
            facets=facets,
            notes=notes,
            pages=pages,
            matching=None if page_only else positions,
        )

    def _semantic(self, snap: Snapshot, q: str, notes: list[str]) -> list[tuple[int, float]]:
        vectors = self.vectors
        if vectors is None:
            raise HTTPError(400, "Semantic search is switched off on this server; use mode=text.")
        vectors.refresh()
        key = ("semantic", vectors.generation, q)
        found = self._cached(key, lambda: np.asarray(vectors.search(q, SEMANTIC_LIMIT)))
        hits = [(int(k), float(score)) for k, score in found]
        if vectors.problem:
            notes.append(vectors.problem)
        missing = len(snap) - len(vectors)
        if missing > 0:
            progress = vectors.embedding_progress()
            notes.append(
                f"{missing:,} of {len(snap):,} versions have no {vectors.model} embedding yet "
                "and cannot be found by meaning; "
                + (
                    f"embedding them failed: {progress.error}"
                    if progress.error
                    else "the server embeds them in the background."
                )
            )
        out = []
        for key, score in hits:
            pos = snap.position(key)
            if pos is not None:
                out.append((pos, score))
        return out

    def _order(
        self,
        snap: Snapshot,
        query: ListQuery,
        scores: np.ndarray,
        novelty: np.ndarray,
        novelty_key: tuple[Any, ...],
    ) -> np.ndarray:
        """Every position in display order (missing values last in either direction)."""
        sort, desc = query.sort, query.descending
        if sort == "relevance":
            return _by_values(scores, desc, snap.keys)
        if sort == "name":
            key = ("name", snap.generation)
            base = self._cached(key, lambda: np.lexsort((snap.versions, np.asarray(snap.names))))
            return base if not desc else base[::-1]
        if sort == "novelty":
            key = ("novelty-order", desc, *novelty_key)
            return self._cached(key, lambda: _by_values(novelty, desc, snap.keys))
        columns = {"created": snap.created, "hint_gain": snap.hint_gain, "win_rate": snap.win_rate}
        column = columns[sort]
        key = (sort, desc, snap.generation)
        return self._cached(key, lambda: _by_values(column, desc, snap.keys))


def _all_but(masks: dict[str, np.ndarray], skip: str, n: int) -> np.ndarray:
    out = np.ones(n, dtype=bool)
    for name, mask in masks.items():
        if name != skip:
            out &= mask
    return out


def _by_values(values: np.ndarray, descending: bool, keys: np.ndarray) -> np.ndarray:
    """Positions sorted by ``values`` (ties: newest key first), NaN last either way."""
    missing = np.isnan(values)
    primary = np.where(missing, 0.0, -values if descending else values)
    return np.lexsort((-keys, primary, missing))
