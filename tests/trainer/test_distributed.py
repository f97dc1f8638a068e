"""Data parallelism: torchrun environment handling, and a real 2-process gloo run on CPU
whose all-reduced gradients match a single-process step over the union of the shards."""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from spade_envs.error import SpadeError
from spade_envs.trainer.distributed import (
    DistInfo,
    DistributedError,
    all_gather_objects,
    barrier,
    init_distributed,
    shutdown,
)

from .ddp_worker import DDP_CONFIG, VARIANTS, mixed_samples, tiny_llama, tiny_qwen3

ROOT = Path(__file__).resolve().parents[2]
TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def _need(*modules: str) -> None:
    # In CI a missing dependency is a failure, not a skip.
    for name in modules:
        if os.environ.get("CI"):
            importlib.import_module(name)
        else:
            pytest.importorskip(name)


@pytest.fixture
def clean_env(monkeypatch):
    for name in TORCHRUN_ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_shard_is_round_robin_and_covers_everything():
    items = list(range(7))
    shards = [DistInfo(rank=r, world_size=3).shard(items) for r in range(3)]
    assert shards == [[0, 3, 6], [1, 4], [2, 5]]
    assert sorted(x for shard in shards for x in shard) == items
    assert DistInfo().shard(items) == items
    assert DistInfo().is_main and not DistInfo(rank=1, world_size=2).is_main


def test_without_torchrun_everything_is_single_process(clean_env):
    assert init_distributed() == DistInfo(rank=0, world_size=1, local_rank=0, backend="")
    clean_env.setenv("WORLD_SIZE", "1")
    assert init_distributed().world_size == 1
    assert all_gather_objects({"a": 1}) == [{"a": 1}]
    barrier()
    shutdown()


def test_incomplete_torchrun_environment_says_what_is_missing(clean_env):
    _need("torch")
    clean_env.setenv("WORLD_SIZE", "2")
    with pytest.raises(DistributedError, match="RANK is not set. Start the job with torchrun"):
        init_distributed()
    clean_env.setenv("RANK", "2")
    with pytest.raises(DistributedError, match=r"RANK=2 is outside 0\.\.1"):
        init_distributed()
    clean_env.setenv("RANK", "0")
    with pytest.raises(DistributedError, match="MASTER_ADDR is not set"):
        init_distributed()
    clean_env.setenv("WORLD_SIZE", "two")
    with pytest.raises(DistributedError, match="WORLD_SIZE must be an integer, got 'two'"):
        init_distributed()


def test_backend_is_checked(clean_env):
    _need("torch")
    import torch

    with pytest.raises(DistributedError, match="Unknown process-group backend 'glo'.*'gloo'"):
        init_distributed("glo")
    for name, value in zip(TORCHRUN_ENV, ("0", "2", "0", "127.0.0.1", "29999")):
        clean_env.setenv(name, value)
    clean_env.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(DistributedError, match="nccl backend needs CUDA GPUs; use gloo"):
        init_distributed("nccl")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _torchrun(tmp_path_factory, sharding: str, variant: str = "") -> list:
    """Run the worker under torchrun with 2 CPU processes (gloo) and load what each saved."""
    _need("torch", "transformers")
    import torch

    out = tmp_path_factory.mktemp(f"{sharding}{variant}")
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    for name in TORCHRUN_ENV:
        env.pop(name, None)
    # --standalone: a local c10d rendezvous on a port it picks itself (parallel runs do not
    # collide); the free --master_port is there for runs without it.
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nnodes=1",
        "--nproc_per_node=2",
        f"--master_port={_free_port()}",
        str(Path(__file__).with_name("ddp_worker.py")),
        str(out),
        sharding,
        variant,
    ]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = [torch.load(out / f"rank{r}.pt", weights_only=False) for r in (0, 1)]
    for run in runs:
        run["shards"] = out / "shards"
    return runs


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    return _torchrun(tmp_path_factory, "ddp")


@pytest.fixture(scope="module")
def fsdp_run(tmp_path_factory):
    return _torchrun(tmp_path_factory, "fsdp")


@pytest.fixture(scope="module")
def fsdp_lora_run(tmp_path_factory):
    return _torchrun(tmp_path_factory, "fsdp", "lora")


@pytest.fixture(scope="module")
def fsdp_qwen3_run(tmp_path_factory):
    return _torchrun(tmp_path_factory, "fsdp", "qwen3")


@pytest.fixture(scope="module")
def fsdp_lean_run(tmp_path_factory):
    return _torchrun(tmp_path_factory, "fsdp", "lean")


RUNS = ["ddp", "fsdp", "fsdp_lora", "fsdp_qwen3", "fsdp_lean"]


def _variant(run: str) -> str:
    """The worker variant of a run's name (``fsdp_lora`` -> ``lora``; ``ddp`` -> none)."""
    return run.partition("_")[2]


SHARDED_RUNS = [r for r in RUNS if r.startswith("fsdp")]


@pytest.fixture(params=RUNS)
def ranked_run(request):
    """The model replicated (DDP) and sharded (FSDP2) over the two ranks; sharded also
    with LoRA, with a Qwen3 model, and with log-probs in chunks and checkpointed blocks."""
    return request.getfixturevalue(f"{request.param}_run")


@pytest.fixture(params=RUNS)
def ranked_and_model(request):
    """A run, and a one-process learner built as its rank 0 was."""
    from spade_envs.trainer.learner import GRPOConfig, Learner

    variant = _variant(request.param)
    model = tiny_qwen3(seed=100) if variant == "qwen3" else tiny_llama(seed=100)
    # The one-process learner is plain: the lean run must match it all the same.
    extra = VARIANTS[variant] if variant != "lean" else {}
    learner = Learner(model, GRPOConfig(**DDP_CONFIG, **extra), seed=0)
    return request.getfixturevalue(f"{request.param}_run"), model, learner


def _close(a, b, atol: float = 1e-6) -> bool:
    import torch

    return torch.allclose(a, b, rtol=1e-4, atol=atol)


def test_torchrun_ranks_agree_on_gradients_and_weights(ranked_run):
    rank0, rank1 = ranked_run
    assert (rank0["world_size"], rank1["world_size"]) == (2, 2)
    # Step 1: shards of 3 and 2 samples (2 and 1 micro-batches); step 2: rank 1 has none.
    assert [s["samples"] for s in rank0["steps"]][:2] == [3, 3]
    assert [s["samples"] for s in rank1["steps"]][:2] == [2, 0]
    for one, two in zip(rank0["steps"], rank1["steps"]):
        assert one["grads"].keys() == two["grads"].keys() and one["grads"]
        for name, grad in one["grads"].items():
            assert _close(grad, two["grads"][name]), name
        for name, param in one["params"].items():
            assert _close(param, two["params"][name]), name
        # Stats are reduced over ranks: both report the whole batch.
        assert one["stats"] == {**two["stats"], "seconds": one["stats"]["seconds"]}


def test_torchrun_gradients_equal_one_process_over_the_union(ranked_and_model):
    # Rank 0's model: the run started from rank 0's weights (rank 1's were replaced).
    ranked_run, model, learner = ranked_and_model
    for step, batch in enumerate([mixed_samples(5), mixed_samples(3, seed=1)]):
        stats = learner.step(batch)
        ranked = ranked_run[0]["steps"][step]
        for key in ("loss", "loss_agent", "loss_designer", "tokens_agent", "tokens_designer"):
            assert stats[key] == pytest.approx(ranked["stats"][key], rel=1e-5, abs=1e-7), key
        grads = learner.gradients()
        assert grads.keys() == ranked["grads"].keys()
        nonzero = 0
        for name, grad in grads.items():
            assert _close(grad, ranked["grads"][name]), name
            nonzero += bool(grad.abs().sum() > 0)
        # A real gradient, not zeros that trivially agree (LoRA's A gets none while B is 0).
        assert nonzero >= len(grads) // 2
        # Adam's first steps are ~lr * sign(grad): where a gradient is ~1e-9 its rounding
        # noise moves a weight by up to ~1e-5 (lr 1e-2), so weights get a looser bound.
        for name, param in model.named_parameters():
            assert _close(param.detach(), ranked["params"][name], atol=1e-4), name


def test_fsdp_ranks_hold_a_shard_each_and_ddp_ranks_all(ddp_run, fsdp_run):
    assert [r["sharded"] for r in fsdp_run] == [True, True]
    # Each rank keeps about half of every parameter (FSDP2 shards dim 0, padding odd sizes).
    assert all(0.45 < r["local_share"] < 0.6 for r in fsdp_run)
    assert [r["sharded"] for r in ddp_run] == [False, False]
    assert all(r["local_share"] == 1.0 for r in ddp_run)


@pytest.mark.parametrize("run", SHARDED_RUNS)
def test_a_sharded_checkpoint_resumes_exactly_on_one_process(run, request):
    from spade_envs.trainer.learner import GRPOConfig, Learner

    fsdp_run = request.getfixturevalue(f"{run}_run")
    state = fsdp_run[0]["state"]  # after two steps on two ranks, sharded
    assert state == {**state, "shards": True, "steps": 2} and "model" not in state
    # One file per rank, and the index; nothing gathered whole.
    assert sorted(p.name for p in fsdp_run[0]["shards"].iterdir()) == [
        ".metadata",
        "__0_0.distcp",
        "__1_0.distcp",
    ]
    # Another world size, unsharded: the shards load, and the third step lands where the
    # sharded run's third step did. Built on the run's base model (rank 0's): the KL
    # term's reference is the model the learner was built on, which a checkpoint does
    # not carry.
    variant = _variant(run)
    model = tiny_qwen3(seed=100) if variant == "qwen3" else tiny_llama(seed=100)
    learner = Learner(model, GRPOConfig(**DDP_CONFIG, **VARIANTS[variant]), seed=0)
    with pytest.raises(SpadeError, match="saved sharded: pass the directory"):
        learner.load_state_dict(state)
    learner.load_state_dict(state, shards=fsdp_run[0]["shards"])
    assert learner.steps == 2
    for name, param in model.named_parameters():
        assert _close(param.detach(), fsdp_run[0]["steps"][1]["params"][name]), name
    learner.step(mixed_samples(6, seed=2))
    for name, param in model.named_parameters():
        assert _close(param.detach(), fsdp_run[0]["steps"][2]["params"][name], atol=1e-4), name
