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
from collections.abc import Iterator
from typing import Any

from .lean import decoder_blocks

__all__ = [
    "SHARDINGS",
    "full_state",
    "full_tensor",
    "full_weights",
    "gradient_sync",
    "load_full_state",
    "micro_batch_count",
    "shard_model",
]

#: How the learner spreads a model over ranks: every rank holds it all (``ddp``), or each
#: holds a shard (``fsdp``).
SHARDINGS = ("ddp", "fsdp")


def shard_model(model: Any, compute_dtype: Any) -> None:
    """Shard ``model`` in place: each decoder block, then the whole (FSDP2).

    Args:
        model: A causal LM (or peft's wrapper of one) on this rank's device, with the same
            weights on every rank.
        compute_dtype: The dtype blocks run in (their gathered weights); the shards are
            float32.
    """
    import torch
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    model.to(torch.float32)  # the masters the optimiser updates
    model._spade_compute_dtype = compute_dtype  # what full_weights hands out
    policy = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=torch.float32)
    for block in decoder_blocks(model):
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)


@contextlib.contextmanager
def gradient_sync(model: Any, enabled: bool) -> Iterator[None]:
    """Reduce-scatter gradients in the backward passes inside (or only accumulate them)."""
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


def full_state(model: Any, optimizer: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model's weights and the optimiser's state, whole, on rank 0's CPU (collective;
    the other ranks get empty dicts): a checkpoint any world size, sharded or not, loads.
    The optimiser's state is keyed by parameter name, not by position."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_state_dict(model, optimizer, options=options)


def load_full_state(
    model: Any, optimizer: Any, weights: dict[str, Any], optimizer_state: dict[str, Any]
) -> None:
    """Load what :func:`full_state` returned into a model sharded or not (each rank takes
    its shard)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

    set_state_dict(
        model,
        optimizer,
        model_state_dict=weights,
        optim_state_dict=optimizer_state,
        options=StateDictOptions(full_state_dict=True),
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
