"""Sharding the learner's model with PyTorch's FSDP2 (``fully_shard``).

:func:`shard_model` shards every decoder block (:func:`~spade_envs.trainer.lean.decoder_blocks`)
and then the root over the process group: each rank keeps 1/world of the weights (float32
masters), of their gradients and of AdamW's moments, and gathers a block's weights, in the
compute dtype, only while that block runs. Gradients are reduced in float32.

Every forward and backward pass is then collective: all ranks must run the same number of
them, which :meth:`~spade_envs.trainer.learner.Learner.step` ensures by padding the ranks
with fewer micro-batches with empty ones (:func:`micro_batch_count`).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from .lean import decoder_blocks

__all__ = [
    "SHARDINGS",
    "full_tensor",
    "full_weights",
    "gradient_sync",
    "load_full_state",
    "load_shards",
    "micro_batch_count",
    "save_shards",
    "shard_model",
]

#: How the learner spreads a model over ranks: every rank holds it all (``ddp``), or each
#: holds a shard (``fsdp``).
SHARDINGS = ("ddp", "fsdp")


def shard_model(model: Any, compute_dtype: Any, root: Any = None) -> None:
    """Shard ``model`` in place: each decoder block, then the whole (FSDP2).

    Args:
        model: A causal LM (or peft's wrapper of one) on this rank's device, with the same
            weights on every rank.
        compute_dtype: The dtype blocks run in (their gathered weights); the shards are
            float32.
        root: The module whose forward pass the learner calls, holding ``model`` (the
            learner's log-prob module); it becomes FSDP's root, so the weights outside
            the blocks (embeddings, final norm, output layer) are gathered for the whole
            of that pass, log-probs computed in chunks from the hidden states included.
            None: ``model`` itself is the root.
    """
    import torch
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    model.to(torch.float32)  # the masters the optimiser updates
    model._spade_compute_dtype = compute_dtype  # what full_weights hands out
    policy = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=torch.float32)
    for block in decoder_blocks(model):
        fully_shard(block, mp_policy=policy)
    fully_shard(model if root is None else root, mp_policy=policy)


@contextlib.contextmanager
def gradient_sync(model: Any, enabled: bool) -> Iterator[None]:
    """Reduce-scatter gradients in the backward passes inside (or only accumulate them);
    ``model`` is FSDP's root (see :func:`shard_model`)."""
    if enabled:
        yield
        return
    model.set_requires_gradient_sync(False)
    try:
        yield
    finally:
        model.set_requires_gradient_sync(True)


def micro_batch_count(local: int, device: Any) -> int:
    """The largest number of micro-batches on any rank (every rank must run as many)."""
    import torch
    import torch.distributed as dist

    count = torch.tensor([local], dtype=torch.int64, device=device)
    dist.all_reduce(count, op=dist.ReduceOp.MAX)
    return int(count.item())


def full_tensor(tensor: Any) -> Any:
    """A sharded tensor gathered whole on every rank (collective); others as they are."""
    gather = getattr(tensor, "full_tensor", None)
    return gather() if callable(gather) else tensor


def full_weights(model: Any) -> dict[str, Any]:
    """Every weight of a sharded model, whole, on every rank (collective), in the dtype its
    blocks compute in: what a generating copy or a vLLM engine beside each rank loads
    after an update. Gathered one tensor at a time, so only one float32 tensor is whole
    at once beside the compute-dtype copies."""
    dtype = getattr(model, "_spade_compute_dtype", None)
    out = {}
    for name, value in model.state_dict().items():
        whole = full_tensor(value.detach())
        if dtype is not None and whole.is_floating_point():
            whole = whole.to(dtype)
        out[name] = whole
    return out


def load_full_state(
    model: Any, optimizer: Any, weights: dict[str, Any], optimizer_state: dict[str, Any]
) -> None:
    """Load whole weights and name-keyed optimiser state (an unsharded learner's
    checkpoint) into a sharded model: each rank takes its shard."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

    set_state_dict(
        model,
        optimizer,
        model_state_dict=weights,
        optim_state_dict=optimizer_state,
        options=StateDictOptions(full_state_dict=True),
    )


def save_shards(model: Any, optimizer: Any, directory: Any) -> None:
    """Write the model's weights and the optimiser's state into ``directory`` shard by
    shard (``torch.distributed.checkpoint``; collective): each rank writes its own file,
    nothing is gathered whole, and rank 0 adds the index (``.metadata``). Every rank must
    see the same ``directory`` (one disk, or a bucket mounted on every node)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    weights, optimizer_state = get_state_dict(model, optimizer)
    dcp.save({"model": weights, "optimizer": optimizer_state}, checkpoint_id=str(directory))


def load_shards(model: Any, optimizer: Any, directory: Any) -> None:
    """Load what :func:`save_shards` wrote into a model sharded over any number of ranks,
    or not sharded at all (one process, no process group): each rank reads the pieces of
    its own shard, re-cut where the world size differs."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    weights, optimizer_state = get_state_dict(model, optimizer)
    state = {"model": weights, "optimizer": optimizer_state}
    with warnings.catch_warnings():
        # Loading into one process without a process group is meant (another world size).
        warnings.filterwarnings("ignore", "torch.distributed is disabled", UserWarning)
        dcp.load(state, checkpoint_id=str(directory))
    set_state_dict(
        model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"]
    )


def by_name(optimizer_state: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """``torch.optim`` state keyed by position, keyed by parameter name instead (the form
    :func:`load_full_state` takes); ``names`` are the optimised parameters in order."""
    state = {names[i]: value for i, value in optimizer_state["state"].items()}
    groups = [
        {**group, "params": [names[i] for i in group["params"]]}
        for group in optimizer_state["param_groups"]
    ]
    return {"state": state, "param_groups": groups}
