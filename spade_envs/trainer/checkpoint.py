"""Checkpoints of a training run: written whole or not at all, the newest N kept.

A checkpoint is a directory ``<root>/iter-XXXX`` holding:

- ``learner.pt``: :meth:`Learner.state_dict` (model or adapter weights, optimizer state,
  step count), saved with ``torch.save``;
- ``learner-shards/`` (sharded learners): the weights and optimiser state as
  ``torch.distributed.checkpoint`` wrote them, one file per rank
  (:meth:`Learner.save_shards`), which any world size loads; ``learner.pt`` then holds only
  the step count and settings;
- ``state.json``: the iteration, the run id, the Python / NumPy / torch RNG states, the
  designer attempts waiting for a delayed update, the frozen pool, and whatever else the
  loop needs to continue exactly;
- ``config.toml``: the run's settings;
- ``adapter/`` (LoRA runs): the adapter in peft's format, for
  ``peft.PeftModel.from_pretrained(base_model, "<checkpoint>/adapter")``;
- ``metrics.jsonl``: the metrics lines up to this iteration (a resumed run rewrites the
  run's file from it, so a line written after the checkpoint by a killed run disappears,
  and a new machine with an empty run directory gets the history back).

It is written into a temporary sibling directory and renamed into place, so a process
killed while saving leaves only a ``.tmp-*`` directory, which is ignored and removed
later. ``state.json`` is written last: a directory without it (a bucket mount that cannot
rename atomically) is not a checkpoint.
"""

from __future__ import annotations

import json
import os
import random
import re
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..error import SpadeError

__all__ = [
    "ADAPTER_DIR",
    "SHARDS_DIR",
    "Checkpoint",
    "CheckpointError",
    "capture_rng",
    "checkpoint_root",
    "latest_checkpoint",
    "list_checkpoints",
    "load_checkpoint",
    "restore_rng",
    "save_checkpoint",
    "write_shards",
]

_NAME = re.compile(r"^iter-(\d{4,})$")
STATE_FILE = "state.json"
#: Where a checkpoint keeps the LoRA adapter in peft's format (LoRA runs only).
ADAPTER_DIR = "adapter"
#: Where a sharded learner's checkpoint keeps its shards.
SHARDS_DIR = "learner-shards"


class CheckpointError(SpadeError):
    """A checkpoint is missing, incomplete, or does not fit the run."""


@dataclass
class Checkpoint:
    """A loaded checkpoint.

    Attributes:
        path: Its directory.
        iteration: The last finished iteration.
        learner: :meth:`Learner.state_dict` as saved.
        state: The loop's state (``state.json``).
        config_toml: The run's settings as saved.
        metrics: The metrics lines up to ``iteration`` (text).
        shards: The sharded learner's shards (:meth:`Learner.load_state_dict` reads them),
            or None.
    """

    path: Path
    iteration: int
    learner: dict[str, Any]
    state: dict[str, Any]
    config_toml: str
    metrics: str
    shards: Path | None = None


def checkpoint_root(run_dir: str | Path, configured: str = "") -> Path:
    """Where checkpoints go: ``$SPADE_CHECKPOINT_DIR``, else ``configured``, else
    ``RUN_DIR/checkpoints``."""
    chosen = os.environ.get("SPADE_CHECKPOINT_DIR") or configured
    return Path(chosen).expanduser() if chosen else Path(run_dir) / "checkpoints"


def list_checkpoints(root: str | Path) -> list[tuple[int, Path]]:
    """Complete checkpoints under ``root`` as ``(iteration, path)``, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    for child in root.iterdir():
        match = _NAME.match(child.name)
        if match and (child / STATE_FILE).is_file():
            found.append((int(match.group(1)), child))
    return sorted(found)


def latest_checkpoint(root: str | Path) -> Path | None:
    """The newest complete checkpoint, or None."""
    found = list_checkpoints(root)
    return found[-1][1] if found else None


# ----------------------------------------------------------------- random number generators


def capture_rng() -> dict[str, Any]:
    """The global Python, NumPy and torch (CPU and CUDA) RNG states, as JSON-ready lists."""
    import numpy as np

    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "python": [version, list(internal), gauss],
        "numpy": [kind, keys.tolist(), int(pos), int(has_gauss), float(cached)],
    }
    try:
        import torch
    except ImportError:
        return state
    state["torch"] = torch.get_rng_state().tolist()
    if torch.cuda.is_available():
        state["cuda"] = [s.tolist() for s in torch.cuda.get_rng_state_all()]
    return state


def restore_rng(state: dict[str, Any]) -> None:
    """Set the global RNGs back to what :func:`capture_rng` recorded."""
    import numpy as np

    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    if "torch" in state:
        import torch

        torch.set_rng_state(torch.tensor(state["torch"], dtype=torch.uint8))
        if "cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(
                [torch.tensor(s, dtype=torch.uint8) for s in state["cuda"]]
            )


# ----------------------------------------------------------------- saving and loading


def _write(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def write_shards(
    root: str | Path, iteration: int, write: Callable[[Path], None], *, is_main: bool
) -> Path:
    """Every rank writes its shard of a sharded learner (collective) into a staging
    directory next to the checkpoints, which rank 0's :func:`save_checkpoint` then moves
    into ``iter-XXXX`` (``shards=``). Rank 0 first clears what a killed save left there.

    Args:
        root: The checkpoint directory, the same on every rank.
        iteration: The iteration being saved.
        write: :meth:`Learner.save_shards`.
        is_main: Whether this is rank 0.

    Returns:
        The staging directory.
    """
    from . import distributed

    staging = Path(root) / f".shards-iter-{iteration:04d}"
    if is_main:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
    distributed.barrier()
    write(staging)
    return staging


def save_checkpoint(
    root: str | Path,
    iteration: int,
    *,
    learner_state: dict[str, Any],
    state: dict[str, Any],
    config_toml: str,
    metrics: str,
    keep: int = 2,
    adapter: Callable[[Path], None] | None = None,
    shards: Path | None = None,
) -> Path:
    """Write checkpoint ``iter-XXXX`` under ``root`` atomically and prune old ones.

    Args:
        root: The checkpoint directory (see :func:`checkpoint_root`).
        iteration: The last finished iteration.
        learner_state: :meth:`Learner.state_dict`.
        state: JSON-ready loop state (``iteration`` is added).
        config_toml: The run's settings.
        metrics: The metrics lines so far.
        keep: How many of the newest checkpoints to keep (at least 1).
        adapter: Writes the LoRA adapter in peft's format into a directory
            (:meth:`Learner.save_adapter`): it goes to ``iter-XXXX/adapter/``, where
            ``peft.PeftModel.from_pretrained(base_model, path)`` loads it.
        shards: What :func:`write_shards` wrote; it moves to ``iter-XXXX/learner-shards``.

    Returns:
        The checkpoint's directory.
    """
    import torch

    if keep < 1:
        raise CheckpointError(f"keep must be at least 1, got {keep}.")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"iter-{iteration:04d}"
    tmp = root / f".tmp-iter-{iteration:04d}-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        torch.save(learner_state, tmp / "learner.pt")
        if adapter is not None:
            adapter(tmp / ADAPTER_DIR)
        if shards is not None:
            _move_dir(shards, tmp / SHARDS_DIR)
        _write(tmp / "config.toml", config_toml)
        _write(tmp / "metrics.jsonl", metrics)
        _write(tmp / STATE_FILE, json.dumps({**state, "iteration": iteration}))
        if final.exists():  # left by a run killed after saving it: replace it
            shutil.rmtree(final)
        try:
            os.replace(tmp, final)
        except OSError:
            # Bucket mounts may not rename directories: copy, with the marker file last.
            final.mkdir(parents=True, exist_ok=True)
            for name in (ADAPTER_DIR, SHARDS_DIR):
                if (tmp / name).is_dir():
                    shutil.copytree(tmp / name, final / name, dirs_exist_ok=True)
            for name in ("learner.pt", "config.toml", "metrics.jsonl", STATE_FILE):
                shutil.copyfile(tmp / name, final / name)
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _prune(root, keep)
    return final


def _move_dir(source: Path, target: Path) -> None:
    try:
        os.replace(source, target)
    except OSError:  # a bucket mount that cannot rename directories
        shutil.copytree(source, target)
        shutil.rmtree(source, ignore_errors=True)


def _prune(root: Path, keep: int) -> None:
    for _iteration, path in list_checkpoints(root)[:-keep]:
        shutil.rmtree(path, ignore_errors=True)
    for child in [*root.glob(".tmp-iter-*"), *root.glob(".shards-iter-*")]:
        # Only rank 0 saves, one checkpoint at a time: what is left is a killed save's.
        shutil.rmtree(child, ignore_errors=True)


def load_checkpoint(path: str | Path) -> Checkpoint:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Raises:
        CheckpointError: The directory is not a complete checkpoint.
    """
    import torch

    path = Path(path)
    if not (path / STATE_FILE).is_file():
        raise CheckpointError(
            f"{path} is not a complete checkpoint (no {STATE_FILE}); pass a directory "
            "iter-XXXX written by the trainer, or --resume never to start over."
        )
    try:
        state = json.loads((path / STATE_FILE).read_text(encoding="utf-8"))
        learner = torch.load(path / "learner.pt", map_location="cpu", weights_only=True)
        config_toml = (path / "config.toml").read_text(encoding="utf-8")
        metrics = (path / "metrics.jsonl").read_text(encoding="utf-8")
    except (OSError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"Cannot read the checkpoint {path}: {exc}") from exc
    return Checkpoint(
        path=path,
        iteration=int(state["iteration"]),
        learner=learner,
        state=state,
        config_toml=config_toml,
        metrics=metrics,
        shards=path / SHARDS_DIR if (path / SHARDS_DIR).is_dir() else None,
    )
