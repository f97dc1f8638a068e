"""``spade-envs plan``: a trainer preset's memory per GPU on the accelerators it will get,
before anything starts; ``spade-envs launch`` refuses a plan that does not fit.

:func:`plan_preset` reads the preset (with ``--set`` overrides), the model's
``config.json`` (``model.spec`` when it is a local directory, or ``--model``: a path or a
bundled shape such as ``qwen3-4b``), and the accelerators (``--gpus H100:8 --nodes 2``),
and returns a :class:`PresetPlan`: the :class:`~spade_envs.trainer.memory_plan.MemoryPlan`
of one rank, the largest micro-batch and sequence length that would fit, and what to
change when it does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..error import SpadeError
from .launch import DEFAULT_NODES
from .memory_plan import (
    GIB,
    MemoryPlan,
    ModelShape,
    TrainShape,
    bundled_shapes,
    gpu_memory_gib,
    largest_fitting,
    plan_memory,
)

__all__ = ["PresetPlan", "plan_preset"]

#: What the launch task files ask for when ``--gpus`` is not given.
DEFAULT_GPUS = "H100:8"


@dataclass(frozen=True)
class PresetPlan:
    """A preset's memory plan on its accelerators.

    Attributes:
        memory: One rank's plan.
        gpu: The accelerator (``H100``) and ``count`` per node, ``nodes`` in all.
        largest_micro_batch: The largest micro-batch that fits at the preset's length.
        largest_seq_len: The longest sequence that fits at the preset's micro-batch.
        advice: What to change when it does not fit (empty when it does).
    """

    memory: MemoryPlan
    gpu: str
    count: int
    nodes: int
    largest_micro_batch: int
    largest_seq_len: int
    advice: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.memory.fits

    def report(self) -> str:
        """What ``spade-envs plan`` prints."""
        t = self.memory.train
        lines = [
            f"{self.nodes} node(s) x {self.count} {self.gpu} "
            f"({self.memory.capacity / GIB:.0f} GiB each)",
            self.memory.table(),
            f"largest micro-batch at {t.seq_len} tokens: {self.largest_micro_batch}",
            f"longest sequence at micro-batch {t.micro_batch}: {self.largest_seq_len} tokens",
        ]
        if not self.fits:
            lines.append("it does not fit; to make it fit:")
            lines.extend(f"  {a}" for a in self.advice)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.memory.to_dict(),
            "gpu": self.gpu,
            "gpus_per_node": self.count,
            "nodes": self.nodes,
            "largest_micro_batch": self.largest_micro_batch,
            "largest_seq_len": self.largest_seq_len,
            "advice": list(self.advice),
        }


def _gpus(text: str) -> tuple[str, int]:
    # The same forms as `launch --gpus` (one grammar for both commands).
    from .launch import _GPUS, _GPUS_TYPO

    typo = _GPUS_TYPO.match(text)
    if typo is not None:
        raise SpadeError(
            f"--gpus {text!r}: the count follows a colon, as in {typo['name']}:{typo['count']} "
            "(NAME[:COUNT])."
        )
    match = _GPUS.match(text)
    if match is None or (match["count"] is not None and int(match["count"]) < 1):
        raise SpadeError(f"--gpus {text!r} is not NAME[:COUNT], e.g. H100:8 or A100-80GB:4.")
    return match["name"].upper(), int(match["count"] or 1)


def _shape(spec: str, model: str | None) -> ModelShape:
    if model:
        return ModelShape.from_config(model)
    if spec.lower() in bundled_shapes() or (Path(spec).expanduser() / "config.json").is_file():
        return ModelShape.from_config(spec)
    raise SpadeError(
        f"model.spec {spec!r} has no config.json on this machine, so its size is unknown: "
        f"pass --model with a local model directory or config.json, or a bundled shape "
        f"({', '.join(bundled_shapes())})."
    )


def plan_preset(
    preset: str,
    overrides: tuple[str, ...] = (),
    *,
    gpus: str | None = None,
    nodes: int | None = None,
    model: str | None = None,
    sharding: str | None = None,
) -> PresetPlan:
    """The memory plan of ``preset`` on ``nodes`` x ``gpus``.

    Args:
        preset: A preset name or ``.toml`` file.
        overrides: ``--set`` overrides (``grpo.micro_batch=2``).
        gpus: ``NAME[:COUNT]`` per node (default ``H100:8``, what the task files ask).
        nodes: Nodes (default: :data:`~spade_envs.trainer.launch.DEFAULT_NODES`, else 1).
        model: The model to size: a directory with ``config.json``, a ``config.json``,
            or a bundled shape (default: ``model.spec`` when it is one of those).
        sharding: ``ddp`` or ``fsdp`` (default: the preset's ``grpo.sharding``).

    Raises:
        SpadeError: Unknown preset, setting, accelerator or model.
    """
    from .config_io import load_config

    config = load_config(preset, overrides)
    name, count = _gpus(gpus or DEFAULT_GPUS)
    nodes = nodes if nodes is not None else DEFAULT_NODES.get(Path(preset).stem, 1)
    if nodes < 1:
        raise SpadeError(f"--nodes must be at least 1, got {nodes}.")
    shape = _shape(config.model.spec, model)
    grpo = config.grpo
    dtype = "bfloat16" if config.model.dtype == "auto" else config.model.dtype
    train = TrainShape(
        micro_batch=grpo.micro_batch,
        micro_batch_tokens=grpo.micro_batch_tokens,
        seq_len=grpo.max_seq_len,
        dtype=dtype,
        lora_rank=grpo.lora_rank,
        lora_targets=tuple(grpo.lora_targets),
        kl=grpo.kl_coef > 0,
        sharding=sharding or grpo.sharding,
        world=count * nodes,
        activation_checkpointing=grpo.activation_checkpointing,
        logprob_chunk=grpo.logprob_chunk,
        vllm_memory=config.model.vllm_memory if config.model.backend == "vllm" else 0.0,
        vllm_sleep=config.model.vllm_sleep,
        vllm_lora=config.model.vllm_lora,
        generator_copy=config.model.backend == "transformers",
    )
    capacity = gpu_memory_gib(name)
    memory = plan_memory(shape, train, capacity)
    batch = largest_fitting(shape, train, capacity, "micro_batch", 1024)
    length = largest_fitting(shape, train, capacity, "seq_len", 1 << 20)
    advice: list[str] = []
    if not memory.fits:
        if not train.activation_checkpointing:
            advice.append("--set grpo.activation_checkpointing=true")
        if not train.logprob_chunk:
            advice.append("--set grpo.logprob_chunk=2048")
        lean = replace(
            train, activation_checkpointing=True, logprob_chunk=train.logprob_chunk or 2048
        )
        lean_batch = largest_fitting(shape, lean, capacity, "micro_batch", 1024)
        if lean_batch:
            advice.append(
                f"with both, micro-batches of up to {lean_batch} fit "
                f"(--set grpo.micro_batch={min(lean_batch, train.micro_batch)})"
            )
        if batch and batch < train.micro_batch:
            advice.append(f"or --set grpo.micro_batch={batch} as it is")
        if train.vllm_memory and not train.vllm_sleep:
            advice.append(
                f"vLLM asleep during updates (--set model.vllm_sleep=true) instead of "
                f"holding {memory.parts['vllm'] / GIB:.0f} GiB of each GPU, or a smaller "
                f"model.vllm_memory than {train.vllm_memory}"
            )
        if memory.blockers:
            advice.append(_engine_share_advice(shape, train, capacity))
        if not train.lora_rank:
            advice.append("LoRA (--set grpo.lora_rank=32) trains far fewer parameters")
        elif train.vllm_memory and train.sharding == "fsdp" and not train.vllm_lora:
            adapter = plan_memory(shape, replace(train, vllm_lora=True), capacity)
            advice.append(
                "the adapter alone to vLLM (--set model.vllm_lora=true): each rank gathers "
                f"{adapter.parts.get('gathered', 0) / GIB:.2f} GiB instead of the whole "
                f"weights ({memory.parts.get('gathered', 0) / GIB:.1f} GiB)"
            )
        if train.sharding == "ddp" and train.world > 1:
            sharded = plan_memory(shape, replace(train, sharding="fsdp"), capacity)
            advice.append(
                f"sharding over the {train.world} GPUs would need {sharded.peak / GIB:.1f} "
                "GiB per GPU (--set grpo.sharding=fsdp)"
            )
        advice.append("or larger GPUs (--gpus H200:8, B200:8)")
    return PresetPlan(memory, name, count, nodes, batch, length, advice)


def _engine_share_advice(shape: ModelShape, train: TrainShape, capacity: float) -> str:
    """The smallest vLLM share (in steps of 0.05) whose engine holds the weights and
    leaves the learner room, with the micro-batch that then fits; or that none does."""
    for hundredths in range(10, 100, 5):
        share = hundredths / 100
        wider = replace(train, vllm_memory=share)
        if not plan_memory(shape, replace(wider, micro_batch=1), capacity).fits:
            continue
        batch = largest_fitting(shape, wider, capacity, "micro_batch", train.micro_batch)
        return (
            f"a larger vLLM share: --set model.vllm_memory={share}"
            + (f" --set grpo.micro_batch={batch}" if batch < train.micro_batch else "")
            + (" (the engine sleeps during updates)" if train.vllm_sleep else "")
        )
    return "no vLLM share holds the weights and leaves the learner room on this GPU"
