"""The one novelty definition and the nearest-other search both indexes answer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spade_envs.memory import ExactIndex, IVFIndex, nearest_other_similarity, novelty_score
from spade_envs.memory.index import VectorIndexError


def unit_rows(n: int, dim: int = 32, clusters: int = 12, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    rows = centres[rng.integers(0, clusters, n)] + 0.4 * rng.standard_normal((n, dim))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def brute_force(matrix: np.ndarray, candidates: np.ndarray | None = None) -> np.ndarray:
    scores = matrix @ matrix.T
    np.fill_diagonal(scores, -np.inf)
    if candidates is not None:
        scores[:, ~candidates] = -np.inf
    return scores.max(axis=1)


def test_novelty_score_is_one_minus_similarity_floored_and_one_when_alone():
    assert novelty_score(0.75) == pytest.approx(0.25)
    assert novelty_score(1.0000001) == 0.0  # rounding above 1 is floored
    assert novelty_score(-1.0) == pytest.approx(2.0)
    assert novelty_score(-math.inf) == 1.0 and novelty_score(math.nan) == 1.0
    values = novelty_score(np.array([0.5, -np.inf, 1.0], dtype=np.float32))
    assert isinstance(values, np.ndarray) and values.tolist() == [0.5, 1.0, 0.0]


def test_exact_nearest_other_matches_brute_force():
    matrix = unit_rows(300)
    assert np.allclose(nearest_other_similarity(matrix), brute_force(matrix), atol=1e-5)
    assert nearest_other_similarity(matrix[:1])[0] == -np.inf
    assert nearest_other_similarity(np.zeros((0, 4), np.float32)).shape == (0,)


def test_candidates_limit_who_can_be_a_neighbour():
    matrix = unit_rows(200, seed=2)
    candidates = np.arange(200) % 3 != 0
    best = nearest_other_similarity(matrix, np.arange(1000, 1200), candidates=candidates)
    assert np.allclose(best, brute_force(matrix, candidates), atol=1e-5)
    nobody = nearest_other_similarity(matrix, candidates=np.zeros(200, bool))
    assert np.isneginf(nobody).all()


def test_approximate_nearest_other_never_overstates_similarity_and_is_mostly_exact():
    matrix = unit_rows(3000)
    approx = nearest_other_similarity(matrix, exact_limit=100, seed=1)
    exact = brute_force(matrix)
    assert (approx <= exact + 1e-5).all()
    assert np.isclose(approx, exact, atol=1e-5).mean() > 0.95
    assert np.isfinite(approx).all()


def test_duplicates_have_zero_novelty():
    matrix = unit_rows(50)
    matrix = np.vstack([matrix, matrix[:1]])
    best = nearest_other_similarity(matrix)
    assert novelty_score(best)[0] == pytest.approx(0.0, abs=1e-5)
    assert novelty_score(best)[-1] == pytest.approx(0.0, abs=1e-5)


def test_max_scores_of_both_indexes_skip_the_excluded_id():
    matrix = unit_rows(2000, seed=5)
    ids = np.arange(10, 2010)
    exact, ivf = ExactIndex(32), IVFIndex(32, seed=0)
    exact.add(ids, matrix)
    ivf.add(ids, matrix)
    truth = brute_force(matrix)
    assert np.allclose(exact.max_scores(matrix, exclude=ids), truth, atol=1e-5)
    approx = ivf.max_scores(matrix, exclude=ids)
    assert (approx <= truth + 1e-5).all() and np.isclose(approx, truth, atol=1e-5).mean() > 0.95
    full = ivf.max_scores(matrix, exclude=ids, n_probe=ivf.n_lists)  # every list: exact
    assert np.allclose(full, truth, atol=1e-5)
    assert np.allclose(exact.max_scores(matrix[:5]), 1.0, atol=1e-5)  # itself, not excluded
    with pytest.raises(VectorIndexError, match="Got 5 queries but 4 ids to exclude"):
        exact.max_scores(matrix[:5], exclude=ids[:4])
    with pytest.raises(VectorIndexError, match="Got 5 queries but 4 ids to exclude"):
        ivf.max_scores(matrix[:5], exclude=ids[:4])
    assert np.isneginf(ExactIndex(32).max_scores(matrix[:3])).all()


def test_exact_index_views_survive_growth_and_see_only_their_rows():
    index = ExactIndex(4)
    index.add([1, 2], np.eye(4, dtype=np.float32)[:2])
    ids, vecs = index.view()
    index.add(np.arange(3, 200), np.tile(np.eye(4, dtype=np.float32)[2], (197, 1)))
    assert ids.tolist() == [1, 2] and vecs.shape == (2, 4)  # the old view is unchanged
    assert not vecs.flags.writeable
    assert len(index.view()[0]) == 199
