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

__all__ = ["SHARDINGS", "full_tensor", "gradient_sync", "micro_batch_count", "shard_model"]

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
