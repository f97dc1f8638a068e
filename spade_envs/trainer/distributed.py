"""Data-parallel plumbing: join the process group ``torchrun`` describes, or run alone.

``torchrun --nproc_per_node=N ...`` starts N processes and gives each ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``. :func:`init_distributed`
reads them and joins the group (NCCL when CUDA is available, gloo on CPU); without them
(or with ``WORLD_SIZE=1``) it returns a single-process :class:`DistInfo` and every helper
here is a no-op, so the same trainer code runs with and without ``torchrun``.

The learner wraps its model in ``DistributedDataParallel`` once a group exists, so each
rank trains on its own shard of the samples (:meth:`DistInfo.shard`) and DDP averages the
gradients.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from ..error import SpadeError, suggest

__all__ = [
    "BACKENDS",
    "DistInfo",
    "DistributedError",
    "all_gather_objects",
    "barrier",
    "init_distributed",
    "is_initialized",
    "shutdown",
]

T = TypeVar("T")

#: Process-group backends we start: NCCL for GPUs, gloo for CPUs.
BACKENDS = ("gloo", "nccl")


class DistributedError(SpadeError, RuntimeError):
    """The torchrun environment is incomplete or the process group cannot start."""


@dataclass(frozen=True)
class DistInfo:
    """Where this process stands in the job.

    Attributes:
        rank: Global rank (0 .. world_size - 1).
        world_size: Number of processes.
        local_rank: Rank on this machine (picks the GPU).
        backend: ``"gloo"``, ``"nccl"``, or ``""`` when single-process.
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str = ""

    @property
    def is_main(self) -> bool:
        """Rank 0: the process that writes logs, metrics and checkpoints."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def shard(self, items: Sequence[T]) -> list[T]:
        """This rank's share: ``items[rank::world_size]`` (round robin, so shards differ
        in size by at most one)."""
        return list(items)[self.rank :: self.world_size]


def _env_int(name: str, default: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        if default is None:
            raise DistributedError(
                f"{name} is not set. Start the job with torchrun (it sets RANK, WORLD_SIZE, "
                "LOCAL_RANK, MASTER_ADDR and MASTER_PORT), or unset WORLD_SIZE to run alone."
            )
        return default
    try:
        return int(raw)
    except ValueError:
        raise DistributedError(f"{name} must be an integer, got {raw!r}.") from None


def is_initialized() -> bool:
    """Whether a torch.distributed process group exists (False when torch is absent)."""
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    return dist.is_available() and dist.is_initialized()


def init_distributed(backend: str | None = None, *, timeout_s: float = 1800.0) -> DistInfo:
    """Join the process group described by torchrun's environment variables.

    Args:
        backend: ``"gloo"`` or ``"nccl"``; None: NCCL when CUDA is available, else gloo.
        timeout_s: How long collectives wait for slow ranks before failing.

    Returns:
        This process's :class:`DistInfo`; ``DistInfo()`` (rank 0 of 1) when ``WORLD_SIZE``
        is unset or 1. Calling it again returns the existing group's info.

    Raises:
        DistributedError: A variable is missing or malformed, the backend is unknown
            or unusable here, or the group cannot be joined.
    """
    if backend is not None and backend not in BACKENDS:
        raise DistributedError(
            f"Unknown process-group backend {backend!r}.{suggest(backend, BACKENDS)} "
            f"Use one of {BACKENDS} (or None to choose by hardware)."
        )
    world_size = _env_int("WORLD_SIZE", 1)
    if world_size < 1:
        raise DistributedError(f"WORLD_SIZE must be >= 1, got {world_size}.")
    if world_size == 1 and not is_initialized():
        return DistInfo()

    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return DistInfo(
            rank=dist.get_rank(),
            world_size=dist.get_world_size(),
            local_rank=_env_int("LOCAL_RANK", 0),
            backend=str(dist.get_backend()),
        )
    rank = _env_int("RANK")
    local_rank = _env_int("LOCAL_RANK", 0)
    if not 0 <= rank < world_size:
        raise DistributedError(f"RANK={rank} is outside 0..{world_size - 1} (WORLD_SIZE).")
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if not os.environ.get(name):
            raise DistributedError(
                f"{name} is not set; torchrun sets it (or set it to rank 0's address/port)."
            )
    chosen = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    if chosen == "nccl":
        if not torch.cuda.is_available():
            raise DistributedError("The nccl backend needs CUDA GPUs; use gloo on CPUs.")
        torch.cuda.set_device(local_rank)
    try:
        dist.init_process_group(
            backend=chosen,
            init_method="env://",
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=timeout_s),
        )
    except (RuntimeError, ValueError) as exc:
        raise DistributedError(
            f"Cannot join the {chosen} process group as rank {rank} of {world_size} at "
            f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}: {exc}"
        ) from exc
    return DistInfo(rank=rank, world_size=world_size, local_rank=local_rank, backend=chosen)


def all_gather_objects(obj: Any) -> list[Any]:
    """Every rank's ``obj`` (picklable), in rank order; ``[obj]`` when single-process."""
    if not is_initialized():
        return [obj]
    import torch.distributed as dist

    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def current_rank() -> int:
    """This process's rank (0 when single-process)."""
    if not is_initialized():
        return 0
    import torch.distributed as dist

    return dist.get_rank()


def barrier() -> None:
    """Wait for every rank (no-op when single-process)."""
    if is_initialized():
        import torch.distributed as dist

        dist.barrier()


def shutdown() -> None:
    """Leave the process group (no-op when there is none)."""
    if is_initialized():
        import torch.distributed as dist

        dist.destroy_process_group()
