"""Novelty and the map's projection over unit vectors (no registry needed)."""

from __future__ import annotations

import numpy as np
import pytest

from spade_envs.web import vectors as vectors_module
from spade_envs.web.vectors import _exact_nearest, align, nearest_other_similarity, pca_2d


def unit_rows(n: int, dim: int = 32, clusters: int = 12, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    rows = centres[rng.integers(0, clusters, n)] + 0.4 * rng.standard_normal((n, dim))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def brute_force(matrix: np.ndarray) -> np.ndarray:
    scores = matrix @ matrix.T
    np.fill_diagonal(scores, -np.inf)
    return scores.max(axis=1)


def test_exact_novelty_matches_brute_force():
    matrix = unit_rows(300)
    assert np.allclose(nearest_other_similarity(matrix), brute_force(matrix), atol=1e-5)
    assert nearest_other_similarity(matrix[:1])[0] == -np.inf


def test_approximate_novelty_never_overstates_similarity_and_is_mostly_exact(monkeypatch):
    matrix = unit_rows(3000)
    monkeypatch.setattr(vectors_module, "EXACT_NOVELTY_LIMIT", 100)
    approx = nearest_other_similarity(matrix, seed=1)
    exact = brute_force(matrix)
    assert (approx <= exact + 1e-5).all()
    assert np.isclose(approx, exact, atol=1e-5).mean() > 0.95
    assert np.isfinite(approx).all()


def test_duplicates_have_zero_novelty():
    matrix = unit_rows(50)
    matrix = np.vstack([matrix, matrix[:1]])
    best = nearest_other_similarity(matrix)
    assert best[0] == pytest.approx(1.0, abs=1e-5) and best[-1] == pytest.approx(1.0, abs=1e-5)


def test_new_vectors_update_novelty_exactly():
    matrix = unit_rows(400, seed=3)
    old = brute_force(matrix[:300])
    new = matrix[300:]
    best_new = _exact_nearest(new, matrix, np.arange(300, 400))
    best_old = np.maximum(old, _exact_nearest(matrix[:300], new, None))
    assert np.allclose(np.concatenate([best_old, best_new]), brute_force(matrix), atol=1e-5)


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


def test_clusters_partition_the_rows_and_probe_the_nearest():
    from spade_envs.web.vectors import Clusters

    matrix = unit_rows(3000, seed=4)
    clusters = Clusters.build(matrix, np.arange(3000), seed=0)
    members = np.sort(np.concatenate([clusters.members(c) for c in range(len(clusters.centroids))]))
    assert np.array_equal(members, np.arange(3000))
    near = clusters.nearest(matrix[:10], 3)
    assert near.shape == (10, 3)
    home = np.argmax(matrix[:10] @ clusters.centroids.T, axis=1)
    assert all(home[i] in near[i] for i in range(10))
