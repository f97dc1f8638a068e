"""The server's vectors: background embedding, search, novelty and the map."""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np
import pytest

from spade_envs import describe, seed_class
from spade_envs.memory import (
    Embedder,
    HashingEmbedder,
    Memory,
    MemoryConfig,
    nearest_other_similarity,
    novelty_score,
)
from spade_envs.registry import Registry
from spade_envs.seeds import seed_source
from spade_envs.web.vectors import EmbeddingProgress, Vectors, align, pca_2d

NAMES = ("NumberGuess", "Mastermind", "MazeExplore", "Nim", "LightsOut", "FlightBooking")
MODEL = HashingEmbedder().name


def unit_rows(n: int, dim: int = 32, clusters: int = 12, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    rows = centres[rng.integers(0, clusters, n)] + 0.4 * rng.standard_normal((n, dim))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def register(registry, name, status="validated", copy_of=None):
    if copy_of is None:
        return registry.register(seed_source(name), describe(seed_class(name)), status=status)
    meta = dataclasses.replace(describe(seed_class(copy_of)), name=name)
    source = seed_source(copy_of).replace(f"class {copy_of}(", f"class {name}(")
    return registry.register(source, meta, status=status)


@pytest.fixture
def fresh(registry_url):
    """A registry of a few seeds and no embeddings at all."""
    registry = Registry(registry_url)
    for name in NAMES:
        register(registry, name)
    yield registry
    registry.close()


def until(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_a_fresh_registry_is_embedded_in_the_background_and_new_versions_too(fresh):
    vectors = Vectors(fresh, embedder="hashing", refresh_s=0.05, batch_size=4)
    try:
        assert len(vectors.refresh(force=True)) == 0 and vectors.search("maze", 5) == []
        assert vectors.embedding_progress() == EmbeddingProgress(0, len(NAMES), False, None, MODEL)
        assert vectors.start_embedding() is True
        assert vectors.start_embedding() is False  # safe to call twice: one thread
        assert vectors.wait_for_embeddings(timeout=30)
        assert until(lambda: not vectors.embedding_progress().running)
        progress = vectors.embedding_progress()
        assert progress == EmbeddingProgress(len(NAMES), len(NAMES), False, None, MODEL)
        assert progress.complete and len(vectors) == len(NAMES) == fresh.embedding_count(MODEL)
        keys = {r.key for r in fresh.iter_records()}
        maze = fresh.get("spade/MazeExplore-v1").key
        assert vectors.search("explore a maze grid, find the exit", 1)[0][0] == maze
        assert {k for k, _ in vectors.search("anything", 100)} == keys  # search covers all
        assert {k for k, _ in vectors.neighbours(maze, 100)} == keys - {maze}
        assert vectors.wait_for_novelty()
        assert set(vectors.novelty()[0].tolist()) == keys
        # A version registered later is embedded without anyone asking.
        new = register(fresh, "NumberGuessCopy", copy_of="NumberGuess")
        assert until(lambda: vectors.neighbours(new.key, 1) is not None)
        assert vectors.neighbours(new.key, 1)[0][0] == fresh.get("spade/NumberGuess-v1").key
        assert new.key in {k for k, _ in vectors.search("guess the hidden number", 3)}
        assert until(lambda: vectors.embedding_progress().embedded == len(NAMES) + 1)
        assert vectors.embedding_progress().total == len(NAMES) + 1
        assert vectors.wait_for_novelty() and new.key in vectors.novelty()[0]
        # They were written with the memory's API: the designer's memory has nothing to do.
        memory = Memory(fresh, MemoryConfig(index="exact"), embedder=HashingEmbedder())
        assert memory.missing() == 0 and memory.sync() == 0 and len(memory) == len(NAMES) + 1
    finally:
        vectors.stop_embedding()
    assert not vectors.embedding_progress().running


class BrokenEmbedder(Embedder):
    name = "broken-v1"
    dim = 8

    def embed(self, texts, batch_size=64):
        raise RuntimeError("the model file is missing")


def test_a_failing_embedder_is_reported_and_logged_not_fatal(fresh, caplog):
    vectors = Vectors(fresh, embedder=BrokenEmbedder(), refresh_s=0.05)
    caplog.set_level(logging.ERROR, logger="spade_envs.web.vectors")
    try:
        vectors.start_embedding()
        assert until(lambda: vectors.embedding_progress().error is not None)
        progress = vectors.embedding_progress()
        assert progress.embedded == 0 and progress.total == len(NAMES) and not progress.complete
        assert "embedding with broken-v1 failed: the model file is missing" in progress.error
        assert until(lambda: "the model file is missing" in caplog.text)
        assert vectors._embed_thread.is_alive()  # it retries later; the server goes on
        assert vectors.start_embedding() is False
        assert vectors.search("maze", 3) == [] and len(vectors) == 0
    finally:
        vectors.stop_embedding()


def test_an_embedder_that_recovers_clears_the_error(fresh):
    class Flaky(HashingEmbedder):
        calls = 0

        def embed(self, texts, batch_size=64):
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise RuntimeError("busy")
            return super().embed(texts, batch_size)

    vectors = Vectors(fresh, embedder=Flaky(), refresh_s=0.02)
    try:
        vectors.start_embedding()
        assert until(lambda: vectors.embedding_progress().complete, timeout=30)
        assert until(lambda: vectors.embedding_progress().error is None)
    finally:
        vectors.stop_embedding()


def test_browser_novelty_is_the_designer_memorys_novelty(registry_url):
    """A version's novelty in the browser is what the designer's check gave its code
    against the rest of the corpus: same definition, rejected versions ignored alike."""
    registry = Registry(registry_url)
    try:
        for name in NAMES:
            register(registry, name)
        register(registry, "MazeExplore2", copy_of="MazeExplore")
        source = seed_source("NumberGuess").replace("class NumberGuess(", "class NumberGuess3(")
        meta = dataclasses.replace(describe(seed_class("NumberGuess")), name="NumberGuess3")
        draft = registry.register(source + "\n# a draft\n", meta, status="rejected")
        memory = Memory(registry, MemoryConfig(index="exact"), embedder=HashingEmbedder())
        memory.sync()
        designer = memory.novelty(source, meta.description, meta.skill)
        assert designer.nearest.record.name == "NumberGuess"  # not the rejected, closer draft
        assert memory.search(source, 1)[0].record.key == draft.key  # which is closer
        last = registry.register(source, meta, status="validated")
        vectors = Vectors(registry, embedder="hashing", refresh_s=0.01)
        vectors.start_embedding()
        assert vectors.wait_for_embeddings() and vectors.wait_for_novelty()
        keys, values, current = vectors.novelty()
        assert current
        assert values[list(keys).index(last.key)] == pytest.approx(designer.score, abs=1e-6)
        # the same function gives the same numbers from the raw vectors
        ids, matrix = vectors._index.view()
        statuses = dict(registry.statuses())
        candidates = np.array([statuses[int(k)] != "rejected" for k in ids])
        expected = novelty_score(nearest_other_similarity(matrix, ids, candidates=candidates))
        assert np.allclose(align(ids, expected, keys), values, atol=1e-6)
        # rejecting a version changes who the others' nearest neighbours are
        maze = registry.get("spade/MazeExplore-v1").key
        before = values[list(keys).index(maze)]
        registry.set_status("spade/MazeExplore2-v1", "rejected")
        vectors.refresh(force=True)  # what the next refresh (within refresh_s) notices
        assert vectors.wait_for_novelty()
        keys, values, _ = vectors.novelty()
        assert values[list(keys).index(maze)] > before + 0.05
        vectors.stop_embedding()
    finally:
        registry.close()


def test_novelty_kept_up_to_date_as_vectors_arrive_equals_a_full_computation(fresh):
    vectors = Vectors(fresh, embedder="hashing", refresh_s=0.01)
    try:
        vectors.start_embedding()
        assert vectors.wait_for_embeddings() and vectors.wait_for_novelty()
        first = vectors._novelty
        for name in ("TicTacToe", "CodeTrace"):
            register(fresh, name)
        register(fresh, "NimCopy", copy_of="Nim")
        assert vectors.wait_for_embeddings() and vectors.wait_for_novelty()
        keys, values, _ = vectors.novelty()
        assert len(keys) == len(first[2]) + 3  # computed from the previous result
        ids, matrix = vectors._index.view()
        full = novelty_score(nearest_other_similarity(matrix, ids))
        assert np.allclose(align(ids, full, keys), values, atol=1e-6)
        nim = fresh.get("spade/Nim-v1").key
        assert values[list(keys).index(nim)] < 0.05  # its copy arrived
    finally:
        vectors.stop_embedding()


def test_pca_projection_is_deterministic_and_spreads_the_clusters():
    matrix = unit_rows(2000, clusters=3)
    first = pca_2d(matrix)
    assert first.shape == (2000, 2)
    assert np.allclose(first, pca_2d(matrix.copy()))
    assert abs(first[:, 0].mean()) < 1e-3  # centred
    assert first[:, 0].var() >= first[:, 1].var()  # the first axis explains the most
    sampled = pca_2d(matrix, sample=500)
    corr = np.corrcoef(sampled[:, 0], first[:, 0])[0, 1]
    assert corr > 0.95
    assert pca_2d(np.zeros((0, 8), np.float32)).shape == (0, 2)


def test_align_follows_the_target_keys():
    keys = np.array([30, 10, 20])
    values = np.array([3.0, 1.0, 2.0])
    out = align(keys, values, np.array([10, 20, 25, 30]))
    assert out[:2].tolist() == [1.0, 2.0] and np.isnan(out[2]) and out[3] == 3.0
    assert np.isnan(align(np.zeros(0, np.int64), np.zeros(0), np.array([1]))).all()


def test_large_corpus_novelty_uses_the_approximate_index_and_stays_close(fresh):
    rng = np.random.default_rng(0)
    vectors = Vectors(fresh, embedder="hashing", refresh_s=0.01)
    vectors.start_embedding()
    try:
        assert vectors.wait_for_embeddings()
        vectors.exact_limit = 3  # "large" from 4 versions: the IVF path
        vectors._novelty = None
        assert vectors.wait_for_novelty()
        keys, values, _ = vectors.novelty()
        ids, matrix = vectors._index.view()
        exact = align(ids, novelty_score(nearest_other_similarity(matrix, ids)), keys)
        assert (values >= exact - 1e-5).all()  # approximate novelty is only ever overstated
        assert rng is not None
    finally:
        vectors.stop_embedding()


def test_vectors_refuse_an_unknown_embedder_kind(fresh):
    from spade_envs.error import SpadeError

    with pytest.raises(SpadeError, match="embedder must be auto, hashing or minilm, got 'w2v'"):
        Vectors(fresh, embedder="w2v")


class StoredVectors:
    """Just what :class:`Vectors` reads of a registry: stored embeddings and statuses."""

    def __init__(self, matrix: np.ndarray):
        self.rows: list[tuple[int, int, bytes, str]] = []
        self.add(matrix)

    def add(self, matrix: np.ndarray) -> None:
        start = len(self.rows)
        self.rows += [
            (start + i + 1, 1000 + start + i, row.astype(np.float32).tobytes(), "")
            for i, row in enumerate(matrix)
        ]

    def embeddings(self, model, *, after=0, limit=None):
        found = [row for row in self.rows if row[0] > after]
        return found[:limit] if limit is not None else found

    def status_counts(self):
        return {"validated": len(self.rows)}

    def statuses(self):
        return [(key, "validated") for _, key, _, _ in self.rows]


def brute_force(ids: np.ndarray, matrix: np.ndarray, key: int, k: int) -> list[int]:
    """The ``k`` keys nearest ``key`` (itself left out) by scoring every vector."""
    scores = matrix @ matrix[list(ids).index(key)]
    order = np.lexsort((ids, -scores))
    return [int(i) for i in ids[order] if i != key][:k]


def test_neighbours_through_the_bounds_are_the_full_scans(monkeypatch):
    from spade_envs.web import vectors as vectors_module

    stored = StoredVectors(unit_rows(3000, dim=64, clusters=30, seed=1))
    vectors = Vectors(stored, embedder=HashingEmbedder(dim=64), refresh_s=3600)
    vectors.bound_min_rows = 1000
    scored: list[int] = []
    best = vectors_module._best
    monkeypatch.setattr(
        vectors_module,
        "_best",
        lambda scores, keys, k: scored.append(len(scores)) or best(scores, keys, k),
    )
    ids, matrix = vectors.refresh(force=True).keys, vectors.refresh().matrix
    first = int(ids[0])
    # No bounds yet: a full scan answers, and the bounds are built in the background.
    assert [k for k, _ in vectors.neighbours(first, 5)] == brute_force(ids, matrix, first, 5)
    assert vectors.neighbour_searches == {"bounded": 0, "full": 1}
    assert until(lambda: vectors._bounds is not None)
    for key in ids[1:200].tolist():
        assert [k for k, _ in vectors.neighbours(key, 5)] == brute_force(ids, matrix, key, 5)
    assert vectors.neighbour_searches == {"bounded": 199, "full": 1}
    # Exact scores only for what the bounds left: about one cluster, not all 3,000.
    assert len(scored) == 199 and max(scored) < len(ids) // 3
    # More neighbours than the bounds' threshold is set from: a full scan, as exact.
    many = int(ids[300])
    assert [k for k, _ in vectors.neighbours(many, 100)] == brute_force(ids, matrix, many, 100)
    assert vectors.neighbour_searches == {"bounded": 199, "full": 2}
    # New vectors make a new generation: a full scan until its bounds are built.
    stored.add(unit_rows(50, dim=64, clusters=30, seed=1)[:50])
    loaded = vectors.refresh(force=True)
    new = int(loaded.keys[-1])
    assert [k for k, _ in vectors.neighbours(new, 5)] == brute_force(
        loaded.keys, loaded.matrix, new, 5
    )
    assert vectors.neighbour_searches["full"] == 3
    assert until(lambda: vectors._bounds.generation == loaded.generation)
    assert [k for k, _ in vectors.neighbours(int(loaded.keys[5]), 5)] == brute_force(
        loaded.keys, loaded.matrix, int(loaded.keys[5]), 5
    )
    assert vectors.neighbour_searches["bounded"] == 200


def test_novelty_of_one_version_is_its_value_in_the_column(fresh):
    vectors = Vectors(fresh, embedder="hashing", refresh_s=0.01)
    vectors.start_embedding()
    try:
        assert vectors.wait_for_embeddings() and vectors.wait_for_novelty()
        keys, values, _ = vectors.novelty()
        for key, value in zip(keys.tolist(), values.tolist()):
            assert vectors.novelty_of(key) == value
        assert vectors.novelty_of(-1) is None
    finally:
        vectors.stop_embedding()
