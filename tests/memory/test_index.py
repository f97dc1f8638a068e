"""Vector indexes: exact search against brute force, IVF recall, updates, persistence."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_envs.error import SpadeError
from spade_envs.memory import (
    ExactIndex,
    Hit,
    IVFIndex,
    VectorIndexError,
    build_index,
    load_index,
)
from spade_envs.memory import ivf as ivf_module


def brute_force(ids: np.ndarray, vectors: np.ndarray, query: np.ndarray, k: int) -> list[Hit]:
    scores = vectors @ query
    order = np.lexsort((ids, -scores))[:k]
    return [Hit(int(ids[i]), float(scores[i])) for i in order]


@st.composite
def small_collections(draw):
    """Unique ids with small integer vectors: scores are exact, and ties are common."""
    dim = draw(st.integers(1, 6))
    n = draw(st.integers(0, 60))
    ids = draw(st.lists(st.integers(-1000, 10**9), min_size=n, max_size=n, unique=True))
    values = draw(st.lists(st.integers(-3, 3), min_size=n * dim, max_size=n * dim))
    vectors = np.array(values, dtype=np.float32).reshape(n, dim)
    query = np.array(draw(st.lists(st.integers(-3, 3), min_size=dim, max_size=dim)), np.float32)
    k = draw(st.integers(1, 20))
    return np.array(ids, dtype=np.int64), vectors, query, k


@given(small_collections())
def test_exact_index_equals_brute_force(case):
    ids, vectors, query, k = case
    index = ExactIndex(len(query))
    index.add(ids, vectors)
    assert len(index) == len(ids)
    assert index.search(query, k) == [brute_force(ids, vectors, query, k)]


@given(small_collections(), st.integers(1, 12), st.integers(0, 3))
def test_ivf_probing_every_list_equals_exact(case, n_lists, seed):
    ids, vectors, query, k = case
    index = IVFIndex(len(query), n_lists=n_lists, seed=seed)
    index.add(ids, vectors)
    expected = brute_force(ids, vectors, query, k)
    assert index.search(query, k, n_probe=n_lists) == [expected]


@settings(max_examples=60)
@given(st.data())
def test_updates_match_a_dictionary_model(data):
    """Random adds, replacements and removals, before and after training, with rebuilds."""
    dim = 3
    model: dict[int, np.ndarray] = {}
    exact, ivf = ExactIndex(dim), IVFIndex(dim, n_lists=4, seed=1)
    vector = st.lists(st.integers(-3, 3), min_size=dim, max_size=dim)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ivf_module, "_MIN_OVERFLOW", 3)  # rebuild often
        for _ in range(data.draw(st.integers(1, 12))):
            op = data.draw(st.sampled_from(["add", "add", "remove", "search"]))
            if op == "add":
                ids = data.draw(st.lists(st.integers(0, 25), min_size=1, max_size=8))
                rows = np.array(data.draw(st.lists(vector, min_size=len(ids), max_size=len(ids))))
                for i, row in zip(ids, rows):
                    model[i] = row.astype(np.float32)
                exact.add(ids, rows)
                ivf.add(ids, rows)
            elif op == "remove":
                ids = data.draw(st.lists(st.integers(0, 30), max_size=5, unique=True))
                gone = sum(i in model for i in ids)
                for i in ids:
                    model.pop(i, None)
                assert exact.remove(ids) == gone and ivf.remove(ids) == gone
            else:
                q = np.array(data.draw(vector), dtype=np.float32)
                keys = np.array(sorted(model), dtype=np.int64)
                stored = np.array([model[i] for i in keys], np.float32).reshape(-1, dim)
                expected = brute_force(keys, stored, q, 5)
                assert exact.search(q, 5) == [expected]
                assert ivf.search(q, 5, n_probe=ivf.n_lists) == [expected]
            assert len(exact) == len(ivf) == len(model)
            assert sorted(exact.ids().tolist()) == sorted(ivf.ids().tolist()) == sorted(model)
    for i, row in model.items():
        np.testing.assert_array_equal(exact.get(i), row)
        np.testing.assert_array_equal(ivf.get(i), row)


def clustered(n: int, dim: int, clusters: int, seed: int, spread: float = 0.6) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = np.random.default_rng(0).standard_normal((clusters, dim)).astype(np.float32)
    points = centers[rng.integers(0, clusters, n)]
    points += spread * rng.standard_normal((n, dim)).astype(np.float32)
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def recall(approx: list[list[Hit]], exact: list[list[Hit]]) -> float:
    found = [len({h.id for h in a} & {h.id for h in e}) / len(e) for a, e in zip(approx, exact)]
    return float(np.mean(found))


@pytest.fixture(scope="module")
def corpus():
    vectors = clustered(20_000, 64, 200, seed=1)
    exact = ExactIndex(64)
    exact.add(np.arange(len(vectors)), vectors)
    return vectors, exact


@pytest.mark.parametrize("two_level", [False, True])
def test_ivf_on_clustered_data_reaches_target_recall(corpus, two_level):
    vectors, exact = corpus
    index = IVFIndex(64, seed=0, two_level=two_level)
    index.add(np.arange(len(vectors)), vectors)
    index.train()
    assert 400 <= index.n_lists <= 700  # about 4 * sqrt(20,000)
    # Automatic n_probe: measured on new queries, not the stored sample it was tuned on.
    fresh = clustered(300, 64, 200, seed=2)
    truth = exact.search(fresh, 10)
    assert recall(index.search(fresh, 10), truth) >= 0.95
    assert index.n_probe <= index.n_lists // 8  # it is actually approximate
    # Explicit tuning hits its target on the tuning queries and is monotone in the target.
    tune = clustered(200, 64, 200, seed=3)
    low = index.tune_n_probe(tune, target_recall=0.8)
    high = index.tune_n_probe(tune, target_recall=0.95)
    assert 1 <= low <= high == index.n_probe
    assert recall(index.search(tune, 10), exact.search(tune, 10)) >= 0.95
    assert recall(index.search(tune, 10, n_probe=index.n_lists), exact.search(tune, 10)) == 1.0


def test_ivf_add_replace_remove_after_training(corpus):
    vectors, _ = corpus
    index = IVFIndex(64, n_lists=32, n_probe=32, seed=0)
    index.add(np.arange(2000), vectors[:2000])
    index.train()
    query = vectors[5000]
    # A new vector lands in the overflow area and is found.
    index.add([99_999], query)
    assert index.search(query, 1)[0][0].id == 99_999
    # Replacing a packed vector with one from another list moves it.
    index.add([7], -query)
    assert 7 not in {h.id for h in index.search(query, 50)[0]}
    assert index.search(-query, 1)[0] == [Hit(7, pytest.approx(1.0, abs=1e-5))]
    assert index.remove([99_999, 12345]) == 1
    assert 99_999 not in index and len(index) == 2000
    assert index.search(query, 1)[0][0].id != 99_999
    # Duplicate ids in one call: the last vector wins.
    index.add([3, 3], np.stack([query, -query]))
    assert index.get(3) == pytest.approx(-query)


def test_ivf_trains_on_first_search_and_retrains_after_growth(corpus):
    vectors, _ = corpus
    index = IVFIndex(64, seed=0)
    assert index.search(vectors[0], 3) == [[]]
    index.add(np.arange(300), vectors[:300])
    assert not index.is_trained
    assert index.search(vectors[0], 1)[0][0].id == 0
    first = index.n_lists
    index.add(np.arange(300, 1300), vectors[300:1300])
    index.search(vectors[0], 1)
    assert index.n_lists > first
    # Training on separate vectors does not add them.
    other = IVFIndex(64, n_lists=16)
    other.train(vectors[:1000])
    assert other.is_trained and len(other) == 0 and other.n_lists == 16


def test_exact_index_replace_and_remove_keep_storage_dense():
    index = ExactIndex(2, capacity=1)
    index.add([1, 2, 3], np.array([[1, 0], [0, 1], [1, 1]], np.float32))
    index.add([2], np.array([-1, 0], np.float32))
    assert index.search(np.array([-1, 0], np.float32), 1)[0][0] == Hit(2, 1.0)
    assert index.remove([1, 42]) == 1
    assert 1 not in index and len(index) == 2
    assert sorted(index.ids().tolist()) == [2, 3]
    assert [h.id for h in index.search(np.array([1, 1], np.float32), 5)[0]] == [3, 2]
    assert index.search(np.array([[1, 1], [0, 1]], np.float32), 10)[1][0].id == 3


@pytest.mark.parametrize("kind", ["exact", "ivf"])
def test_dimension_and_input_errors_say_what_to_do(kind):
    index = build_index(kind, 4)
    with pytest.raises(VectorIndexError, match="dimension 3 but this index holds 4-dimensional"):
        index.add([1], np.zeros((1, 3), np.float32))
    index.add([1, 2], np.eye(4, dtype=np.float32)[:2])
    with pytest.raises(VectorIndexError, match="Query has dimension 5 .* 4-dimensional"):
        index.search(np.zeros(5, np.float32))
    with pytest.raises(VectorIndexError, match="2 ids but 1 vectors"):
        index.add([3, 4], np.zeros((1, 4), np.float32))
    with pytest.raises(VectorIndexError, match="NaN"):
        index.add([3], np.full(4, np.nan, np.float32))
    with pytest.raises(VectorIndexError, match="integers"):
        index.add([1.5], np.zeros((1, 4), np.float32))
    with pytest.raises(VectorIndexError, match="k must be"):
        index.search(np.zeros(4, np.float32), k=0)
    assert len(index) == 2


def test_build_index_unknown_kind_suggests():
    with pytest.raises(SpadeError, match="Did you mean 'exact'.*exact, ivf"):
        build_index("exakt", 8)
    assert isinstance(build_index("IVF", 8, n_lists=4), IVFIndex)


@pytest.mark.parametrize("trained", [False, True])
def test_save_and_load_round_trip(tmp_path, corpus, trained):
    vectors, _ = corpus
    queries = vectors[:20] + 0.01
    exact, ivf = ExactIndex(64), IVFIndex(64, n_lists=20, seed=3)
    for index in (exact, ivf):
        index.add(np.arange(10, 1010), vectors[:1000])
        index.remove([10, 11])
    if trained:
        ivf.search(queries, 5)
        ivf.add([5000], vectors[5000])  # pending in overflow when saved
    for index in (exact, ivf):
        path = tmp_path / f"{index.kind}.npz"
        index.save(path)
        loaded = load_index(path)
        assert type(loaded) is type(index) and len(loaded) == len(index)
        assert sorted(loaded.ids().tolist()) == sorted(index.ids().tolist())
        if isinstance(loaded, IVFIndex):
            assert loaded.is_trained == trained
            if trained:
                assert (loaded.n_lists, loaded.n_probe) == (ivf.n_lists, ivf.n_probe)
        assert loaded.search(queries, 5) == index.search(queries, 5)
    with pytest.raises(VectorIndexError, match="not a 'ivf' index"):
        IVFIndex.load(tmp_path / "exact.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(VectorIndexError, match="Could not read"):
        load_index(tmp_path / "junk.npz")
