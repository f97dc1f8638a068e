"""The catalog and the list query over real SQLite and PostgreSQL registries."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from spade_envs import describe, seed_class
from spade_envs.registry import Registry
from spade_envs.seeds import seed_source
from spade_envs.web.catalog import Catalog
from spade_envs.web.params import HTTPError, Params
from spade_envs.web.search import ListQuery, Searcher, parse_list_query
from spade_envs.web.vectors import Vectors

from .conftest import EVIL_DESCRIPTION, SEEDS, embed, fill_registry


@pytest.fixture
def filled(registry_url):
    registry = Registry(registry_url)
    ids = fill_registry(registry)
    yield registry, ids
    registry.close()


def ids_of(snap, result):
    return [snap.env_id(int(p)) for p in result.positions]


def test_catalog_holds_light_columns_and_play_stats(filled):
    registry, ids = filled
    snap = Catalog(registry).refresh()
    assert len(snap) == len(SEEDS) + 2 == registry.count()
    pos = {snap.env_id(p): p for p in range(len(snap))}
    guess = pos[ids["NumberGuess"]]
    assert snap.value("kind", guess) == "text" and snap.value("status", guess) == "validated"
    # hint gain: highest of any checkpoint; win rate and returns: the latest checkpoint
    assert snap.hint_gain[guess] == pytest.approx(0.5)
    assert snap.win_rate[guess] == pytest.approx(0.4) and snap.checkpoints[guess] == 2
    assert snap.return_with_hint[guess] == pytest.approx(0.9)
    assert math.isnan(snap.hint_gain[pos[ids["Nim"]]])
    assert snap.facet_counts("status") == {
        "validated": 7,
        "candidate": 1,
        "retired": 1,
        "rejected": 1,
    }
    evil = pos[ids["EvilMarkup"]]
    assert snap.summaries[evil] == " ".join(
        EVIL_DESCRIPTION.split()
    )  # kept raw: escaped when shown
    assert snap.children_of(ids["NumberGuess"], "NumberGuess") == [pos[ids["NumberGuessHarder"]]]
    assert snap.parents[pos[ids["NumberGuessHarder"]]] == (ids["NumberGuess"],)


def test_refresh_picks_up_new_versions_statuses_and_stats(filled):
    registry, ids = filled
    catalog = Catalog(registry)
    first = catalog.refresh()
    assert catalog.refresh() is first  # nothing changed: the same snapshot
    meta = dataclasses.replace(describe(seed_class("Chomp")), origin="imported")
    new = registry.register(seed_source("Chomp"), meta, status="candidate")
    registry.retire(ids["Mastermind"])
    registry.record_play_stats(
        ids["Nim"], "ckpt-2", plays_with_hint=4, plays_without_hint=4,
        mean_return_with_hint=1.0, mean_return_without_hint=0.25, win_rate=0.25,
    )  # fmt: skip
    snap = catalog.refresh()
    assert snap.generation == first.generation + 1 and len(snap) == len(first) + 1
    pos = {snap.env_id(p): p for p in range(len(snap))}
    assert snap.value("origin", pos[new.id]) == "imported"
    assert snap.value("status", pos[ids["Mastermind"]]) == "retired"
    assert snap.hint_gain[pos[ids["Nim"]]] == pytest.approx(0.75)
    assert len(first) == len(SEEDS) + 2  # an old snapshot never changes


def test_status_changes_are_seen_even_when_they_cancel_out(filled):
    registry, ids = filled
    now = [0.0]
    catalog = Catalog(registry, clock=lambda: now[0])
    catalog.refresh()
    registry.retire(ids["Nim"])  # counts change: read at once
    snap = catalog.refresh()
    pos = {snap.env_id(p): p for p in range(len(snap))}
    assert snap.value("status", pos[ids["Nim"]]) == "retired"
    registry.set_status(ids["Nim"], "validated")  # two changes that leave the counts as
    registry.retire(ids["Mastermind"])  # they were: seen at the periodic full read
    now[0] += 10
    assert catalog.refresh().value("status", pos[ids["Mastermind"]]) == "validated"
    now[0] += 60
    snap = catalog.refresh()
    assert snap.value("status", pos[ids["Mastermind"]]) == "retired"
    assert snap.value("status", pos[ids["Nim"]]) == "validated"


LIGHT = ("light_rows", "statuses", "status_counts", "play_signature", "play_rows")


class OnlyLightRows:
    """A registry that offers the light-rows methods and nothing else (no engine)."""

    def __init__(self, registry):
        self._registry, self.calls = registry, []

    def __getattr__(self, name):
        if name not in LIGHT:
            raise AttributeError(f"the catalog used Registry.{name}")
        self.calls.append(name)
        return getattr(self._registry, name)


def test_the_catalog_reads_only_the_registrys_light_rows(filled):
    registry, ids = filled
    light = OnlyLightRows(registry)
    snap = Catalog(light).refresh()
    assert len(snap) == len(SEEDS) + 2 and set(light.calls) == set(LIGHT)
    assert snap.env_id(len(snap) - 1) == ids["EvilMarkup"]


def test_list_filters_sorts_pages_and_counts_facets(filled):
    registry, ids = filled
    snap = Catalog(registry).refresh()
    searcher = Searcher(None)
    result = searcher.run(snap, ListQuery(skill="logic"))
    assert {snap.value("skill", p) for p in result.positions} == {"logic"}
    # facet counts ignore the facet's own filter: other skills still show their counts
    assert result.facets["skill"]["math"] == 3  # NumberGuess, Nim, NumberGuessHarder
    assert result.facets["kind"] == {"text": 2}  # under skill=logic: Mastermind, EvilMarkup
    gain = searcher.run(snap, ListQuery(sort="hint_gain"))
    assert ids_of(snap, gain)[:3] == [ids["NumberGuess"], ids["Mastermind"], ids["MazeExplore"]]
    assert ids_of(snap, gain)[3] == ids["EvilMarkup"]  # negative gain, then unplayed last
    band = searcher.run(snap, ListQuery(hint_gain_min=0.0, hint_gain_max=0.25))
    assert set(ids_of(snap, band)) == {ids["Mastermind"], ids["MazeExplore"]}
    unplayed = searcher.run(snap, ListQuery(played="no"))
    assert ids["Nim"] in ids_of(snap, unplayed) and ids["Mastermind"] not in ids_of(snap, unplayed)
    named = searcher.run(snap, ListQuery(sort="name", descending=False, size=25))
    assert ids_of(snap, named) == sorted(ids_of(snap, named))
    page2 = searcher.run(snap, ListQuery(sort="name", descending=False, size=25, page=1))
    assert page2.pages == 1
    with pytest.raises(HTTPError, match="page 3 is past the last page"):
        searcher.run(snap, ListQuery(page=3, size=25))
    newest = searcher.run(snap, ListQuery())
    assert ids_of(snap, newest)[0] == ids["EvilMarkup"]


def test_facet_counts_are_computed_under_the_other_filters(filled):
    registry, ids = filled
    snap = Catalog(registry).refresh()
    result = Searcher(None).run(snap, ListQuery(skill="logic", status="validated"))
    assert result.facets["skill"]["math"] == 3  # validated: NumberGuess, Nim, NumberGuessHarder
    assert result.facets["status"] == {"validated": 2}  # logic: Mastermind, EvilMarkup
    assert result.total == 2


def test_full_text_search(filled):
    registry, ids = filled
    snap = Catalog(registry).refresh()
    searcher = Searcher(None)
    found = searcher.run(snap, ListQuery(q="number guess", sort="relevance"))
    assert set(ids_of(snap, found)[:2]) == {ids["NumberGuess"], ids["NumberGuessHarder"]}
    assert all(s >= 2 for s in found.scores)
    phrase = searcher.run(snap, ListQuery(q='"wider range"'))
    assert ids_of(snap, phrase) == [ids["NumberGuessHarder"]]
    markup = searcher.run(snap, ListQuery(q="<script>"))
    assert ids_of(snap, markup) == [ids["EvilMarkup"]]
    none = searcher.run(snap, ListQuery(q="zzqqxx"))
    assert none.total == 0 and len(none.positions) == 0
    filtered = searcher.run(snap, ListQuery(q="number", skill="logic"))
    assert filtered.total == 0 and filtered.facets["skill"]["math"] >= 2


def test_semantic_search_uses_the_stored_embeddings(filled):
    registry, ids = filled
    embed(registry)
    snap = Catalog(registry).refresh()
    vectors = Vectors(registry)
    vectors.refresh()
    assert vectors.model == "hashing-384-v1" and len(vectors) == len(snap)  # "auto": as stored
    vectors.warm()
    searcher = Searcher(vectors)
    result = searcher.run(
        snap, ListQuery(q="find the way out of a maze", mode="semantic", sort="relevance")
    )
    neighbours = vectors.neighbours(snap.keys[0], 3)
    assert len(neighbours) == 3 and int(snap.keys[0]) not in [k for k, _ in neighbours]
    assert vectors.neighbours(10**9, 3) is None
    assert ids_of(snap, result)[0] == ids["MazeExplore"]
    assert list(result.scores) == sorted(result.scores, reverse=True)
    games = searcher.run(snap, ListQuery(q="take stones from heaps", mode="semantic", kind="game"))
    assert {snap.value("kind", p) for p in games.positions} == {"game"}


def test_list_parameters_are_checked_against_the_catalog(filled):
    registry, _ = filled
    snap = Catalog(registry).refresh()

    def parse(**values):
        params = Params({k: [v] for k, v in values.items()})
        query = parse_list_query(params, snap)
        params.done()
        return query

    assert parse(skill="logic", sort="hint_gain", dir="asc").descending is False
    with pytest.raises(
        HTTPError, match="skill must be one of: .*got 'logik'. Did you mean 'logic'"
    ):
        parse(skill="logik")
    with pytest.raises(HTTPError, match=r"hint_gain_min \(0.5\) is above hint_gain_max \(0.1\)"):
        parse(hint_gain_min="0.5", hint_gain_max="0.1")
    with pytest.raises(HTTPError, match="sort=relevance needs a search"):
        parse(sort="relevance")
    with pytest.raises(HTTPError, match="size must be one of 25, 50, 100, 200; got 30"):
        parse(size="30")
    with pytest.raises(HTTPError, match="name: no environment is called 'Nope'"):
        parse(name="Nope")
    assert parse(q="maze").sort == "relevance"
    assert parse(q="maze", mode="semantic").params() == {"q": "maze", "mode": "semantic"}


def test_novelty_is_one_minus_the_nearest_other_similarity(filled):
    registry, ids = filled
    embed(registry)
    snap = Catalog(registry).refresh()
    vectors = Vectors(registry)
    assert vectors.wait_for_novelty()
    novelty, current, _ = Searcher(vectors).novelty(snap)
    assert current and np.isfinite(novelty).all()
    pos = {snap.env_id(p): p for p in range(len(snap))}
    # the renamed copy of NumberGuess is nearly identical: least novel of all
    close = novelty[pos[ids["NumberGuessHarder"]]]
    assert close == pytest.approx(novelty[pos[ids["NumberGuess"]]], abs=1e-6)
    # The pair is symmetric: either of the two is the minimum, to float32 rounding.
    assert close == pytest.approx(novelty.min(), abs=1e-6) and close < 0.2
    ordered = Searcher(vectors).run(snap, ListQuery(sort="novelty"))
    values = [novelty[p] for p in ordered.positions]
    assert values == sorted(values, reverse=True)


def test_an_empty_registry_then_its_first_version(tmp_path):
    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    catalog = Catalog(registry)
    empty = catalog.refresh()
    assert len(empty) == 0 and empty.facet_counts("skill") == {}
    meta = describe(seed_class("Nim"))
    registry.register(seed_source("Nim"), meta, status="validated")
    snap = catalog.refresh()
    assert len(snap) == 1 and snap.generation > empty.generation  # caches key on it
    registry.close()


def test_the_server_embeds_what_memory_did_not_and_search_covers_it(filled):
    registry, ids = filled
    embed(registry)  # the designer's memory embedded these...
    meta = dataclasses.replace(describe(seed_class("Chomp")), origin="imported")
    new = registry.register(seed_source("Chomp"), meta, status="validated")  # ...not this
    snap = Catalog(registry).refresh()
    vectors = Vectors(registry, refresh_s=0.01)  # "auto": the stored hashing model
    vectors.refresh(force=True)
    assert vectors.model == "hashing-384-v1" and len(vectors) == len(snap) - 1
    searcher = Searcher(vectors)
    query = ListQuery(q="take squares from a chocolate bar", mode="semantic", sort="relevance")
    assert any("have no hashing-384-v1 embedding" in n for n in searcher.run(snap, query).notes)
    vectors.start_embedding()
    try:
        assert vectors.wait_for_embeddings()
        result = Searcher(vectors).run(snap, query)
        assert ids_of(snap, result)[0] == new.id and not result.notes
        assert result.total == len(snap)  # every version can be found by meaning
        nearest = vectors.neighbours(new.key, len(snap))
        assert len(nearest) == len(snap) - 1
        assert vectors.wait_for_novelty()
        novelty, current, _ = Searcher(vectors).novelty(snap)
        assert current and np.isfinite(novelty).all()
    finally:
        vectors.stop_embedding()
