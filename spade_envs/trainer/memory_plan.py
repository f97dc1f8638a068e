"""Will a training setup fit on its accelerators? Memory per GPU, worked out before a node
starts, from the model's ``config.json`` alone (no weights).

:func:`plan_memory` adds up, for one rank of the learner:

- **weights**: every parameter in the model's dtype; with FSDP sharding, a 1/world share
  of float32 master weights plus the blocks being gathered (two at a time: the one
  computing and the one prefetched) in the compute dtype;
- **gradients** of the trainable parameters (all of them, or LoRA's), sharded like the
  weights;
- **optimizer**: AdamW's two moments per trainable parameter, plus the step's
  temporaries (the foreach implementation works on whole lists of tensors at once);
- **reference**: a frozen copy of the weights when the KL term is on with full
  fine-tuning;
- **activations** of one micro-batch: per decoder block, what its backward needs (the
  block's input, the norms, q/k/v and the attention output, the MLP's four intermediate
  tensors); with activation checkpointing, only each block's input, plus one block
  recomputed at a time;
- **logits**: the full-vocabulary logits of every kept position, as the learner computes
  log-probs (model dtype, a float32 copy, the log-softmax and its gradient), or of one
  chunk of positions when log-probs are computed in chunks;
- **vLLM**: a colocated engine's reservation (``gpu_memory_utilization`` of the GPU), or
  its remainder while it sleeps during the update;
- **overhead**: the CUDA context and allocator fragmentation;
- **gathered** (sharded, with vLLM): the whole weights each rank gathers for its engine
  after the update, in the compute dtype;
- **generator** (sharded, without vLLM): each rank's whole copy that generates.

Between updates a colocated engine is awake beside what the learner keeps (weights,
moments, gradients): with the engine asleep during the update, that phase can be the
peak, and the plan takes it.

The peak is the larger of the backward pass and the optimiser step. In the backward pass
the weights, moments, gradients (accumulated over earlier micro-batches) and the kept
activations are there throughout, with either the logits (at its start) or one block
being recomputed (later), whichever is larger; the step holds the weights, moments,
gradients and its temporaries. The parts printed are each part's own peak, so they add
up to more than the peak.

The arithmetic is checked against measured peaks of small models on the CPU
(:func:`measure_peak`) and, on a GPU machine, against ``torch.cuda.max_memory_allocated``
(``benchmarks/gpu_check.py``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ..error import SpadeError, suggest

__all__ = [
    "GPU_MEMORY_GIB",
    "MemoryPlan",
    "ModelShape",
    "TrainShape",
    "UnknownAcceleratorError",
    "check_on_cpu",
    "gpu_memory_gib",
    "measure_peak",
    "plan_memory",
]

GIB = 1024**3

#: Memory per accelerator in GiB, by SkyPilot accelerator name.
GPU_MEMORY_GIB: dict[str, float] = {
    "H100": 80.0,
    "H100-MEGA": 80.0,
    "H200": 141.0,
    "B200": 180.0,
    "A100": 40.0,
    "A100-80GB": 80.0,
    "L40S": 48.0,
    "L4": 24.0,
    "A10G": 24.0,
    "A10": 24.0,
    "V100": 16.0,
    "V100-32GB": 32.0,
    "T4": 16.0,
}

#: What the CUDA context and the caching allocator's fragmentation take besides tensors.
CUDA_CONTEXT_GIB = 0.75
FRAGMENTATION = 0.08

_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


class UnknownAcceleratorError(SpadeError):
    """An accelerator the planner has no memory size for."""


def gpu_memory_gib(name: str) -> float:
    """The memory of one ``name`` accelerator (``H100``), or UnknownAcceleratorError with
    close matches."""
    key = name.upper()
    if key not in GPU_MEMORY_GIB:
        raise UnknownAcceleratorError(
            f"Unknown accelerator {name!r}: the planner knows "
            f"{', '.join(GPU_MEMORY_GIB)}.{suggest(key, GPU_MEMORY_GIB)}"
        )
    return GPU_MEMORY_GIB[key]


@dataclass(frozen=True)
class ModelShape:
    """What memory depends on in a decoder-only model (Llama, Qwen2/3, Mistral shapes).

    Read from a ``config.json`` by :meth:`from_config` (no weights needed).
    """

    hidden: int
    layers: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    qk_norm: bool = False
    name: str = ""

    @classmethod
    def from_config(cls, source: str | Path | dict[str, Any]) -> ModelShape:
        """From a config dict, a ``config.json``, a model directory holding one, or a
        bundled shape name (``qwen3-4b``, ``qwen3-8b``, ``qwen3-14b``, ``qwen3-32b``,
        ``llama-3.1-8b``, ``qwen3-0.6b``, ``smollm2``).

        Raises:
            SpadeError: Not found, not a decoder-only config we can size (a
                mixture-of-experts config says so), or a field missing.
        """
        if isinstance(source, dict):
            return cls._from_dict(source, "the config")
        text = str(source)
        path = Path(text).expanduser()
        if path.is_dir():
            path = path / "config.json"
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise SpadeError(f"{path} is not a readable config.json ({exc}).") from None
            return cls._from_dict(data, str(path))
        bundled = bundled_shapes()
        if text.lower() in bundled:
            shape_file = resources.files(__package__).joinpath(f"shapes/{text.lower()}.json")
            return cls._from_dict(json.loads(shape_file.read_text("utf-8")), text.lower())
        raise SpadeError(
            f"No model config at {text!r}: give a model directory with a config.json, a "
            f"config.json, or a bundled shape ({', '.join(bundled)}).{suggest(text, bundled)}"
        )

    @classmethod
    def _from_dict(cls, data: dict[str, Any], where: str) -> ModelShape:
        data = data.get("text_config", data) if isinstance(data, dict) else {}
        if any(k in data for k in ("num_experts", "num_local_experts", "n_routed_experts")):
            raise SpadeError(
                f"{where} is a mixture-of-experts model; the planner sizes dense decoders "
                "only (Llama, Qwen2/3, Mistral shapes)."
            )
        try:
            heads = int(data["num_attention_heads"])
            hidden = int(data["hidden_size"])
            return cls(
                hidden=hidden,
                layers=int(data["num_hidden_layers"]),
                intermediate=int(data["intermediate_size"]),
                heads=heads,
                kv_heads=int(data.get("num_key_value_heads") or heads),
                head_dim=int(data.get("head_dim") or hidden // heads),
                vocab=int(data["vocab_size"]),
                tied=bool(data.get("tie_word_embeddings", False)),
                qk_norm=str(data.get("model_type", "")).startswith("qwen3"),
                name=str(data.get("_name_or_path") or where),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SpadeError(f"{where} lacks what the planner needs: {exc}.") from None

    @property
    def block_params(self) -> int:
        """Parameters of one decoder block."""
        attention = self.hidden * self.head_dim * (2 * self.heads + 2 * self.kv_heads)
        mlp = 3 * self.hidden * self.intermediate
        norms = 2 * self.hidden + (2 * self.head_dim if self.qk_norm else 0)
        return attention + mlp + norms

    @property
    def params(self) -> int:
        """Every parameter: embeddings, blocks, final norm, and an untied output head."""
        embeddings = self.vocab * self.hidden * (1 if self.tied else 2)
        return embeddings + self.layers * self.block_params + self.hidden

    def lora_params(self, rank: int, targets: tuple[str, ...]) -> int:
        """LoRA's parameters for ``rank`` on the named projections of every block."""
        q = self.heads * self.head_dim
        kv = self.kv_heads * self.head_dim
        sizes = {
            "q_proj": (self.hidden, q),
            "k_proj": (self.hidden, kv),
            "v_proj": (self.hidden, kv),
            "o_proj": (q, self.hidden),
            "gate_proj": (self.hidden, self.intermediate),
            "up_proj": (self.hidden, self.intermediate),
            "down_proj": (self.intermediate, self.hidden),
        }
        return self.layers * sum(rank * sum(sizes[t]) for t in targets if t in sizes)

    def activation_bytes_per_token(self, dtype_bytes: int) -> int:
        """What one block keeps for its backward pass, per token."""
        q = self.heads * self.head_dim
        kv = self.kv_heads * self.head_dim
        # block input, two norm outputs, residual, attention output and o_proj input;
        # q, k, v before and after the rotary embedding; gate, up, the activation and
        # the product going into down_proj.
        values = 4 * self.hidden + 2 * q + 2 * (q + 2 * kv) + 4 * self.intermediate
        return values * dtype_bytes


def bundled_shapes() -> list[str]:
    """The names of the bundled model shapes."""
    folder = resources.files(__package__).joinpath("shapes")
    return sorted(
        p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json")
    )


@dataclass(frozen=True)
class TrainShape:
    """How the learner runs, as far as memory goes.

    Attributes:
        micro_batch: Sequences per forward pass.
        micro_batch_tokens: The learner's token budget per pass (0: none): a pass then
            holds at most that many tokens, or one sequence of ``seq_len``.
        seq_len: Tokens per sequence (the learner's ``max_seq_len``).
        dtype: ``bfloat16``, ``float16`` or ``float32``: the weights and activations.
        lora_rank: 0 for full fine-tuning.
        lora_targets: The projections LoRA adapts.
        kl: Whether the KL term is on (full fine-tuning then keeps a reference copy).
        sharding: ``ddp`` (every rank holds everything) or ``fsdp`` (weights, gradients
            and moments sharded over the ranks, float32 masters).
        world: Ranks the learner runs on (GPUs in all).
        activation_checkpointing: Keep only each block's input, recompute the rest.
        logprob_chunk: Positions per chunk when log-probs are computed in chunks (0: all
            kept positions at once).
        vllm_memory: A colocated vLLM engine's share of the GPU (0: none).
        vllm_sleep: Whether the engine sleeps during the update (it then keeps only its
            context, ``vllm_sleep_gib``).
        vllm_lora: Whether the engine gets only the LoRA adapter after each update (its
            base weights stay), rather than the whole merged weights.
    """

    micro_batch: int
    seq_len: int
    dtype: str = "bfloat16"
    lora_rank: int = 0
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")
    kl: bool = False
    sharding: str = "ddp"
    world: int = 1
    activation_checkpointing: bool = False
    logprob_chunk: int = 0
    vllm_memory: float = 0.0
    vllm_sleep: bool = False
    vllm_sleep_gib: float = 1.0
    vllm_lora: bool = False
    micro_batch_tokens: int = 0
    attention: str = "flash"
    foreach: bool = True
    generator_copy: bool = False

    def __post_init__(self) -> None:
        if self.dtype not in _DTYPE_BYTES:
            raise SpadeError(f"dtype must be one of {', '.join(_DTYPE_BYTES)}, got {self.dtype!r}.")
        if self.attention not in ("flash", "math"):
            raise SpadeError(f"attention must be flash or math, got {self.attention!r}.")
        if self.sharding not in ("ddp", "fsdp"):
            raise SpadeError(f"sharding must be ddp or fsdp, got {self.sharding!r}.")
        if self.micro_batch < 1 or self.seq_len < 2 or self.world < 1:
            raise SpadeError("micro_batch, world must be at least 1 and seq_len at least 2.")
        if not 0.0 <= self.vllm_memory < 1.0:
            raise SpadeError(f"vllm_memory must be in [0, 1), got {self.vllm_memory}.")


@dataclass(frozen=True)
class MemoryPlan:
    """Bytes per GPU by what holds them, the peak, and whether it fits.

    Attributes:
        parts: Bytes by part (``weights``, ``gradients``, ``optimizer``, ``reference``,
            ``activations``, ``logits``, ``vllm``, ``overhead``); ``optimizer`` includes
            the step's temporaries.
        peak: The most held at once (see the module's docstring).
        capacity: The GPU's memory (0: unknown, nothing is judged).
        model: The shape planned for.
        train: The setup planned for.
        notes: What the reader should know about the plan.
        blockers: Why it cannot run whatever the peak (e.g. vLLM's share of the GPU cannot
            hold the model's weights); any makes :attr:`fits` false.
    """

    parts: dict[str, int]
    peak: int
    capacity: int
    model: ModelShape
    train: TrainShape
    notes: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return not self.blockers and (self.capacity == 0 or self.peak <= self.capacity)

    def table(self) -> str:
        """The plan as aligned lines (GiB), for a terminal."""
        t = self.train
        head = (
            f"{self.model.name or 'model'}: {self.model.params / 1e9:.2f}B parameters; "
            f"{t.sharding} over {t.world} rank(s), {t.dtype}, "
            + (f"LoRA rank {t.lora_rank}" if t.lora_rank else "full fine-tuning")
            + f", micro-batch {t.micro_batch} x {t.seq_len} tokens"
            + (", activation checkpointing" if t.activation_checkpointing else "")
            + (f", log-probs in chunks of {t.logprob_chunk}" if t.logprob_chunk else "")
        )
        lines = [head, "per GPU:"]
        for name, value in self.parts.items():
            lines.append(f"  {name:<12} {value / GIB:9.2f} GiB")
        lines.append(f"  {'peak':<12} {self.peak / GIB:9.2f} GiB")
        if self.capacity:
            verdict = "fits" if self.fits else "DOES NOT FIT"
            lines.append(f"  {'capacity':<12} {self.capacity / GIB:9.2f} GiB: {verdict}")
        lines.extend(f"DOES NOT RUN: {b}" for b in self.blockers)
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "parts_gib": {k: round(v / GIB, 3) for k, v in self.parts.items()},
            "peak_gib": round(self.peak / GIB, 3),
            "capacity_gib": round(self.capacity / GIB, 3),
            "fits": self.fits,
            "params": self.model.params,
            "notes": list(self.notes),
            "blockers": list(self.blockers),
        }


#: vLLM's share must hold the weights with this much to spare (a KV cache, its buffers).
ENGINE_WEIGHTS_MARGIN = 1.1


def plan_memory(model: ModelShape, train: TrainShape, capacity_gib: float = 0.0) -> MemoryPlan:
    """Memory of one learner rank for ``train`` on ``model`` (see the module docstring).

    Args:
        model: The model's shape.
        train: The learner's setup.
        capacity_gib: One GPU's memory (0: judge nothing; the CPU).

    Returns:
        The :class:`MemoryPlan`.
    """
    b = _DTYPE_BYTES[train.dtype]
    params = model.params
    trainable = (
        model.lora_params(train.lora_rank, train.lora_targets) if train.lora_rank else params
    )
    shards = train.world if train.sharding == "fsdp" else 1
    tokens = train.micro_batch * train.seq_len
    if train.micro_batch_tokens:
        tokens = min(tokens, max(train.seq_len, train.micro_batch_tokens))
    notes: list[str] = []
    if train.sharding == "fsdp":
        # float32 masters, sharded; two blocks gathered in the compute dtype at a time.
        # Every parameter, adapters included, becomes a float32 shard.
        weights = math.ceil(params * 4 / shards) + 2 * model.block_params * b
        grad_bytes = opt_bytes = 4
    else:
        weights = params * b
        grad_bytes = opt_bytes = b  # torch's AdamW keeps moments in the parameters' dtype
    gradients = math.ceil(trainable * grad_bytes / shards)
    moments = 2 * math.ceil(trainable * opt_bytes / shards)
    # foreach AdamW (the default on GPUs): one list-sized temporary at a time; the
    # per-tensor loop (CPUs) holds one tensor's worth.
    step_temporaries = moments // 2 if train.foreach else 0
    # A sharded reference is float32 shards, like the weights.
    ref_bytes = 4 if train.sharding == "fsdp" else b
    reference = math.ceil(params * ref_bytes / shards) if train.kl and not train.lora_rank else 0
    per_token = model.activation_bytes_per_token(b)
    # What the forward pass keeps until the backward pass needs it ...
    if train.activation_checkpointing:
        kept = model.layers * tokens * model.hidden * b
        block = tokens * per_token  # ... and one block recomputed at a time
    else:
        kept = model.layers * tokens * per_token
        block = 0
    if train.attention == "math":
        # one block's attention matrix and its gradient, in the backward pass
        block += 2 * train.micro_batch * model.heads * train.seq_len**2 * b
    activations = kept + block
    positions = tokens if not train.logprob_chunk else min(tokens, train.logprob_chunk)
    # At the peak: the logits in the model dtype and their float32 copy (the same tensor
    # for a float32 model), the temperature-scaled logits, and the log-softmax kept for
    # the backward pass (its gradient takes the place of the freed logits there).
    logits = positions * model.vocab * ((b if b != 4 else 0) + 4 + 4 + 4)
    capacity = int(capacity_gib * GIB)
    if train.vllm_memory and not capacity:
        notes.append("vllm_memory is a share of a GPU; give the GPU to count it.")
    vllm = awake = 0
    blockers: list[str] = []
    if train.vllm_memory and capacity:
        awake = int(train.vllm_memory * capacity)
        vllm = int(train.vllm_sleep_gib * GIB) if train.vllm_sleep else awake
        # The engine's own share holds the whole weights (one engine per GPU), then its
        # KV cache: a share smaller than the weights cannot even start.
        if awake < params * b * ENGINE_WEIGHTS_MARGIN:
            blockers.append(
                f"vLLM's share of each GPU ({awake / GIB:.1f} GiB, model.vllm_memory = "
                f"{train.vllm_memory}) cannot hold the model's weights "
                f"({params * b / GIB:.1f} GiB) and a KV cache; each rank's engine holds "
                "them whole"
            )
    # The logits' peak opens the backward pass; a block is recomputed (or its attention
    # differentiated) later, once they are freed: the larger of the two counts.
    backward = weights + moments + gradients + reference + kept + max(block, logits)
    step = weights + moments + gradients + reference + step_temporaries
    tensors = max(backward, step)
    held = weights + moments + gradients + reference  # what stays between updates
    gathered = generator = 0
    if train.sharding == "fsdp" and train.vllm_memory:
        # After the update every rank gathers the whole weights for its engine (or only
        # the adapter, which is all the engine gets with vllm_lora).
        gathered = trainable * b if train.vllm_lora and train.lora_rank else params * b
        tensors = max(tensors, held + gathered)
    if train.sharding == "fsdp" and train.generator_copy:
        generator = params * b  # each rank generates with a whole copy of its own
        tensors += generator
    # Between updates the engine is awake (generating, and while its weights load) beside
    # what the learner keeps: with the engine asleep in the update, that can be the peak.
    between = held + generator + (gathered if train.vllm_sleep else 0) + awake
    tensors_and_vllm = max(tensors + vllm, between)
    overhead = int(CUDA_CONTEXT_GIB * GIB + FRAGMENTATION * tensors) if capacity else 0
    parts = {
        "weights": weights,
        "gradients": gradients,
        "optimizer": moments + step_temporaries,
        "reference": reference,
        "activations": activations,
        "logits": logits,
        "vllm": vllm,
        "overhead": overhead,
    }
    if gathered:
        parts["gathered"] = gathered
    if generator:
        parts["generator"] = generator
    return MemoryPlan(
        parts=parts,
        peak=tensors_and_vllm + overhead,
        capacity=capacity,
        model=model,
        train=train,
        notes=notes,
        blockers=blockers,
    )


def largest_fitting(
    model: ModelShape, train: TrainShape, capacity_gib: float, field_name: str, upper: int
) -> int:
    """The largest ``micro_batch`` or ``seq_len`` (``field_name``) up to ``upper`` that
    fits, the rest of ``train`` unchanged (0: not even 1, or 2 tokens)."""
    low = 1 if field_name == "micro_batch" else 2
    if not plan_memory(model, replace(train, **{field_name: low}), capacity_gib).fits:
        return 0
    high = low
    while (
        high < upper
        and plan_memory(
            model, replace(train, **{field_name: min(upper, high * 2)}), capacity_gib
        ).fits
    ):
        high = min(upper, high * 2)
    if high == upper:
        return upper
    lo, hi = high, min(upper, high * 2)  # lo fits, hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if plan_memory(model, replace(train, **{field_name: mid}), capacity_gib).fits:
            lo = mid
        else:
            hi = mid
    return lo


def measure_peak(fn: Any) -> tuple[Any, int]:
    """Run ``fn()`` and return ``(its result, the peak bytes of the tensors it created)``.

    On the CPU, where torch keeps no allocator statistics, every tensor storage an
    operation creates is counted until it is freed (a ``TorchDispatchMode``); tensors
    that existed before the call are not counted. Used to check the planner's arithmetic
    on small models.
    """
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class _Peak(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.live: dict[int, int] = {}
            self.current = 0
            self.peak = 0

        def _track(self, tensor: Any) -> None:
            if not isinstance(tensor, torch.Tensor) or tensor.device.type == "meta":
                return
            storage = tensor.untyped_storage()
            key = storage.data_ptr()
            if key == 0 or key in self.live:
                return
            size = storage.nbytes()
            self.live[key] = size
            self.current += size
            self.peak = max(self.peak, self.current)

            def freed(key: int = key, size: int = size) -> None:
                if self.live.pop(key, None) is not None:
                    self.current -= size

            weakref.finalize(storage, freed)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            # An output on an input's storage (in-place ops, views) allocated nothing.
            inputs = {
                t.untyped_storage().data_ptr()
                for t in tree_flatten((args, kwargs))[0]
                if isinstance(t, torch.Tensor) and t.device.type != "meta"
            }
            for tensor in tree_flatten(out)[0]:
                if isinstance(tensor, torch.Tensor) and (
                    tensor.device.type == "meta" or tensor.untyped_storage().data_ptr() in inputs
                ):
                    continue
                self._track(tensor)
            return out

    tracker = _Peak()
    with tracker:
        result = fn()
    return result, tracker.peak


def check_on_cpu(
    config: dict[str, Any], micro_batch: int, seq_len: int, **grpo: Any
) -> tuple[int, int]:
    """What a learner step of a Llama built from ``config`` (random weights, float32, on
    the CPU) creates, measured, and what the plan predicts for it: ``(measured,
    predicted)`` bytes. Two micro-batches, so gradients accumulate beside activations,
    after a first step, so the moments exist as in training; the weights and the moments
    exist before the measured step, so neither side counts them.

    Args:
        config: ``LlamaConfig`` fields (``vocab_size`` among them).
        micro_batch: Sequences per micro-batch.
        seq_len: Tokens per sequence.
        **grpo: Further :class:`~spade_envs.trainer.grpo.GRPOConfig` fields
            (``activation_checkpointing``, ``logprob_chunk``).
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from .learner import GRPOConfig, Learner
    from .samples import Sample

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**config))
    learner = Learner(
        model, GRPOConfig(micro_batch=micro_batch, max_seq_len=seq_len, learning_rate=1e-4, **grpo)
    )
    samples = [
        Sample(
            role="agent",
            prompt_ids=[1] * 8,
            completion_ids=[(i * 7 + j) % config["vocab_size"] for j in range(seq_len - 8)],
            reward=float(i % 2),
            group="g",
        )
        for i in range(2 * micro_batch)
    ]
    learner.step(samples)
    _, measured = measure_peak(lambda: learner.step(samples))
    # On the CPU: attention without fused kernels, AdamW one tensor at a time.
    plan = plan_memory(
        ModelShape.from_config({**config, "model_type": "llama"}),
        TrainShape(micro_batch, seq_len, "float32", attention="math", foreach=False, **grpo),
    )
    return measured, plan.peak - plan.parts["weights"] - 2 * plan.model.params * 4
