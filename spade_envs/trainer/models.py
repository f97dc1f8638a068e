"""The trainer's models: the one it trains and the one it generates with.

With the ``transformers`` backend they are the same object: the learner trains
``chat_model.model`` in place and generation after an update uses the new weights, so
nothing needs synchronising. With the ``vllm`` backend generation runs in a vLLM engine
on the same GPU; after each update :func:`push_weights` copies the trained weights into
it (with LoRA, the adapters folded in: :func:`~spade_envs.trainer.lora.merged_state_dict`)
through vLLM's ``LLM.apply_model`` (each worker's model loads them with its own
``load_weights``, which knows how to map Hugging Face names onto vLLM's fused layers),
then drops vLLM's prefix cache, whose keys and values came from the old weights.
Older vLLM releases without ``apply_model`` are reached through the V0 engine's driver
worker. In vLLM V1 the engine runs in another process, so the weights are pickled
across: vLLM only allows that with ``VLLM_ALLOW_INSECURE_SERIALIZATION=1``, which
:func:`load_models` sets for its own engine.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
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
        started = time.perf_counter()
        try:
            replies = self.inner.generate(conversations, params)
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


def load_models(settings: Any, *, seed: int = 0, local_rank: int = 0) -> tuple[Any, ChatModel]:
    """Load the model to train and the model to generate with.

    Args:
        settings: :class:`~spade_envs.trainer.config.ModelSettings`.
        seed: vLLM's engine seed.
        local_rank: Picks the GPU.

    Returns:
        ``(trainer_model, generator)``: a :class:`~spade_envs.llm.TransformersChatModel`
        (``.model``, ``.tokenizer``, ``.encode``) and the chat model that generates
        (the same object with the transformers backend).
    """
    from ..llm import TransformersChatModel, load_model, smollm2_hf_dir

    device = resolve_device(settings.device, local_rank)
    dtype = None if settings.dtype == "auto" else settings.dtype
    trainer = load_model(settings.spec, device=device, dtype=dtype, batch_size=settings.batch_size)
    if not isinstance(trainer, TransformersChatModel):
        raise SpadeError(
            f"model.spec {settings.spec!r} is not a local model the trainer can train; pass "
            "'smollm2' or a Hugging Face model directory."
        )
    if settings.backend == "transformers":
        return trainer, trainer
    from ..llm import VLLMChatModel

    path = str(smollm2_hf_dir()) if settings.spec.lower() == "smollm2" else str(trainer.model_dir)
    os.environ.setdefault("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")
    generator = VLLMChatModel(
        path,
        name=trainer.name,
        gpu_memory_utilization=settings.vllm_memory,
        max_model_len=settings.vllm_max_len,
        seed=seed,
        dtype=str(trainer.model.dtype).replace("torch.", ""),
    )
    return trainer, generator


def push_weights(generator: Any, model: Any) -> bool:
    """Copy ``model``'s weights into a vLLM ``generator``; a no-op for any other model.

    Args:
        generator: The generating chat model (a :class:`~spade_envs.llm.VLLMChatModel`
            when there is something to do).
        model: The trained Hugging Face model (LoRA adapters, if any, are folded in).

    Returns:
        Whether weights were pushed.

    Raises:
        SpadeError: The vLLM engine offers no way to load weights.
    """
    engine = getattr(getattr(generator, "inner", generator), "engine", None)
    if engine is None or not hasattr(engine, "llm_engine"):
        return False  # the transformers backend generates with the trained model itself
    from .lora import lora_modules, merged_state_dict

    state = merged_state_dict(model) if lora_modules(model) else model.state_dict()
    weights = [(name, tensor.detach()) for name, tensor in state.items()]
    if hasattr(engine, "apply_model"):
        engine.apply_model(lambda vllm_model: vllm_model.load_weights(weights))
    else:
        try:
            runner = engine.llm_engine.model_executor.driver_worker.model_runner
        except AttributeError as exc:
            raise SpadeError(
                "This vLLM version offers neither LLM.apply_model nor the V0 driver worker, "
                "so the trainer cannot reload its weights; use vLLM >= 0.9."
            ) from exc
        runner.model.load_weights(weights)
    if hasattr(engine, "reset_prefix_cache"):
        engine.reset_prefix_cache()
    return True
