"""Checkpoints: whole or absent, newest N kept, RNG states restored exactly."""

from __future__ import annotations

import importlib
import os
import random

import numpy as np
import pytest

from spade_envs.trainer.checkpoint import (
    CheckpointError,
    capture_rng,
    checkpoint_root,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    restore_rng,
    save_checkpoint,
    write_shards,
)

if os.environ.get("CI"):  # in CI a missing dependency fails
    torch = importlib.import_module("torch")
else:
    torch = pytest.importorskip("torch")


def _save(root, iteration, keep=2, **state):
    return save_checkpoint(
        root,
        iteration,
        learner_state={"model": {"w": torch.full((2, 3), float(iteration))}, "steps": iteration},
        state={"run_id": "r-1", **state},
        config_toml="iterations = 9\n",
        metrics="".join(f'{{"iteration": {i}}}\n' for i in range(1, iteration + 1)),
        keep=keep,
    )


def test_a_checkpoint_reads_back_what_was_saved(tmp_path):
    path = _save(tmp_path, 3, pending=[[2, [{"index": 0}]]])
    assert path == tmp_path / "iter-0003"
    loaded = load_checkpoint(path)
    assert loaded.iteration == 3
    assert torch.equal(loaded.learner["model"]["w"], torch.full((2, 3), 3.0))
    assert loaded.state["run_id"] == "r-1" and loaded.state["pending"] == [[2, [{"index": 0}]]]
    assert loaded.config_toml == "iterations = 9\n"
    assert loaded.metrics.count("\n") == 3


def test_only_the_newest_are_kept_and_partial_ones_are_ignored(tmp_path):
    for iteration in range(1, 5):
        _save(tmp_path, iteration, keep=2)
    assert [i for i, _ in list_checkpoints(tmp_path)] == [3, 4]
    # A save killed before its marker file, and a directory of another kind, are not
    # checkpoints; the leftover temporary directory goes at the next save.
    (tmp_path / "iter-0009").mkdir()
    (tmp_path / "iter-0009" / "learner.pt").write_bytes(b"half")
    (tmp_path / ".tmp-iter-0010-1-ab").mkdir()
    (tmp_path / "notes").mkdir()
    assert latest_checkpoint(tmp_path) == tmp_path / "iter-0004"
    _save(tmp_path, 5, keep=2)
    assert not (tmp_path / ".tmp-iter-0010-1-ab").exists()
    assert [i for i, _ in list_checkpoints(tmp_path)] == [4, 5]


def test_a_sharded_learner_s_shards_move_into_the_checkpoint(tmp_path):
    # Every rank writes into the staging directory (here one process); rank 0 moves it in.
    stale = tmp_path / ".shards-iter-0003"
    stale.mkdir()
    (stale / "__7_0.distcp").write_bytes(b"a killed save's")

    def write(directory):
        (directory / "__0_0.distcp").write_bytes(b"shard")
        (directory / ".metadata").write_bytes(b"index")

    staging = write_shards(tmp_path, 3, write, is_main=True)
    assert staging == stale and sorted(p.name for p in staging.iterdir()) == [
        ".metadata",
        "__0_0.distcp",
    ]
    path = save_checkpoint(tmp_path, 3, learner_state={"shards": True, "steps": 3},
                           state={}, config_toml="", metrics="", shards=staging)  # fmt: skip
    loaded = load_checkpoint(path)
    assert loaded.shards == path / "learner-shards" and not staging.exists()
    assert (loaded.shards / "__0_0.distcp").read_bytes() == b"shard"
    assert load_checkpoint(_save(tmp_path, 4)).shards is None  # an unsharded learner's
    # A staging directory a killed save left is removed by the next save.
    (tmp_path / ".shards-iter-0009").mkdir()
    _save(tmp_path, 5)
    assert not (tmp_path / ".shards-iter-0009").exists()


def test_a_failed_save_leaves_nothing_behind(tmp_path, monkeypatch):
    _save(tmp_path, 1)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken)
    with pytest.raises(OSError, match="disk full"):
        _save(tmp_path, 2)
    assert [p.name for p in tmp_path.iterdir()] == ["iter-0001"]


def test_an_existing_checkpoint_of_the_same_iteration_is_replaced(tmp_path):
    _save(tmp_path, 2)
    _save(tmp_path, 2, run_id="r-2")
    assert load_checkpoint(tmp_path / "iter-0002").state["run_id"] == "r-2"


def test_incomplete_checkpoints_and_bad_keep_are_errors(tmp_path):
    (tmp_path / "iter-0001").mkdir()
    with pytest.raises(CheckpointError, match=r"not a complete checkpoint \(no state.json\)"):
        load_checkpoint(tmp_path / "iter-0001")
    with pytest.raises(CheckpointError, match="keep must be at least 1"):
        _save(tmp_path, 1, keep=0)
    assert latest_checkpoint(tmp_path / "missing") is None


def test_rng_states_come_back_exactly():
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    state = capture_rng()
    first = (random.random(), np.random.rand(3).tolist(), torch.rand(3).tolist())
    random.seed(99), np.random.seed(99), torch.manual_seed(99)
    restore_rng(state)
    assert (random.random(), np.random.rand(3).tolist(), torch.rand(3).tolist()) == first


def test_the_checkpoint_directory_can_be_moved(tmp_path, monkeypatch):
    monkeypatch.delenv("SPADE_CHECKPOINT_DIR", raising=False)
    assert checkpoint_root(tmp_path) == tmp_path / "checkpoints"
    assert checkpoint_root(tmp_path, str(tmp_path / "ck")) == tmp_path / "ck"
    monkeypatch.setenv("SPADE_CHECKPOINT_DIR", str(tmp_path / "bucket"))
    assert checkpoint_root(tmp_path, str(tmp_path / "ck")) == tmp_path / "bucket"
