"""The IVF quantizer: spherical k-means, two-level assignment and its fallback."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_envs.memory import kmeans
from spade_envs.memory.kmeans import Quantizer, assign_nearest, spherical_kmeans


def blobs(n: int, dim: int, clusters: int, spread: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, dim)).astype(np.float32)
    labels = rng.integers(0, clusters, n)
    points = centers[labels] + spread * rng.standard_normal((n, dim)).astype(np.float32)
    return points / np.linalg.norm(points, axis=1, keepdims=True), labels


def purity(assigned: np.ndarray, truth: np.ndarray) -> float:
    """Share of points whose list is dominated by their own true cluster."""
    return sum(np.bincount(truth[assigned == g]).max() for g in np.unique(assigned)) / len(truth)


def test_spherical_kmeans_is_seeded_unit_and_recovers_clusters():
    points, truth = blobs(3000, 16, 12, spread=0.2)
    first = spherical_kmeans(points, 24, rng=np.random.default_rng(5))
    again = spherical_kmeans(points, 24, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(first, again)
    assert first.shape == (24, 16) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-5)
    assert purity(assign_nearest(points, first)[0], truth) > 0.9
    # Every centroid serves someone (emptied clusters are re-seeded).
    assert len(np.unique(assign_nearest(points, first)[0])) == 24


def test_spherical_kmeans_survives_zero_and_duplicate_rows():
    points = np.zeros((50, 4), np.float32)
    points[25:] = [1, 0, 0, 0]
    centroids = spherical_kmeans(points, 5, rng=np.random.default_rng(0))
    assert np.isfinite(centroids).all() and centroids.shape == (5, 4)


def test_two_level_assignment_matches_flat_on_structured_data():
    points, _ = blobs(8000, 32, 40, spread=0.3)
    quantizer = Quantizer.train(points, 200, two_level=True, rng=np.random.default_rng(0))
    assert quantizer.groups is not None and quantizer.agreement >= 0.95
    assert quantizer.n_lists == 200 and quantizer.group_start[-1] == 200
    flat = assign_nearest(points, quantizer.centroids)[0]
    assert np.mean(quantizer.assign(points) == flat) >= 0.95


def test_two_level_falls_back_to_flat_when_it_disagrees(monkeypatch):
    monkeypatch.setattr(kmeans, "_MIN_AGREEMENT", 1.01)  # never agree enough
    points, _ = blobs(4000, 32, 40, spread=0.3)
    quantizer = Quantizer.train(points, 100, two_level=True, rng=np.random.default_rng(0))
    assert quantizer.groups is None and quantizer.agreement <= 1.0
    np.testing.assert_array_equal(
        quantizer.assign(points), assign_nearest(points, quantizer.centroids)[0]
    )


@given(st.lists(st.integers(0, 500), min_size=1, max_size=40), st.integers(1, 2000))
def test_share_gives_every_group_a_list_and_never_more_than_its_members(counts, total):
    counts = np.array(counts)
    share = kmeans._share(counts, total)
    assert (share >= 1).all()
    assert (share <= np.maximum(counts, 1)).all()
    assert share.sum() == max(len(counts), min(total, int(np.maximum(counts, 1).sum())))


@pytest.mark.parametrize("two_level", [False, True])
def test_quantizer_caps_lists_at_the_sample_size(two_level):
    points, _ = blobs(30, 8, 3, spread=0.5)
    quantizer = Quantizer.train(points, 100, two_level=two_level, rng=np.random.default_rng(0))
    assert quantizer.n_lists == 30
    assert quantizer.assign(points).max() < 30
