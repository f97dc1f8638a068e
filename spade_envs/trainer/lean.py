"""Memory-lean learning: activation checkpointing per decoder block, and log-probs
computed from the final hidden states a chunk of positions at a time.

Both trade compute for memory and change no number the loss sees (the tests compare
gradients with and without them). They work on any Hugging Face causal LM that names its
decoder block class in ``_no_split_modules`` (Llama, Qwen2/3, Mistral, SmolLM2, ...) and
exposes ``get_decoder()`` and ``get_output_embeddings()``, with or without peft's LoRA.
"""

from __future__ import annotations

from typing import Any

from ..error import SpadeError

__all__ = ["chunked_token_logprobs", "checkpoint_blocks", "decoder_blocks"]


def _hf_model(model: Any) -> Any:
    """The transformers model under a peft wrapper (the model itself otherwise)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def decoder_blocks(model: Any) -> list[Any]:
    """The decoder blocks of ``model``, in order.

    Raises:
        SpadeError: The model names no block class (``_no_split_modules``) or has none.
    """
    hf = _hf_model(model)
    names = set(getattr(hf, "_no_split_modules", None) or ())
    blocks = [m for m in hf.modules() if type(m).__name__ in names]
    if not blocks:
        raise SpadeError(
            f"{type(hf).__name__} names no decoder block class (_no_split_modules), so its "
            "blocks cannot be checkpointed or sharded one by one."
        )
    return blocks


def checkpoint_blocks(model: Any) -> int:
    """Recompute every decoder block in the backward pass instead of keeping its
    activations (``torch.utils.checkpoint``, non-reentrant); returns how many blocks.

    Works in eval mode too (the learner trains without dropout), unlike transformers'
    ``gradient_checkpointing_enable``, and leaves parameter names alone. Under
    ``torch.no_grad`` a block runs as usual.
    """
    import torch
    from torch.utils.checkpoint import checkpoint

    blocks = decoder_blocks(model)
    for block in blocks:
        if getattr(block, "_spade_checkpointed", False):
            continue
        original = block.forward

        def forward(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            if not torch.is_grad_enabled():
                return _original(*args, **kwargs)
            return checkpoint(_original, *args, use_reentrant=False, **kwargs)

        block.forward = forward
        block._spade_checkpointed = True
    return len(blocks)


def chunked_token_logprobs(
    model: Any,
    input_ids: Any,
    attention_mask: Any,
    keep: int,
    temperature: Any,
    chunk: int,
) -> Any:
    """``[B, keep - 1]`` log-probs of the next tokens, as the learner's usual path
    computes them (``log_softmax(logits / T)`` in float32), but from the final hidden
    states through the output layer ``chunk`` positions (over the whole micro-batch) at a
    time; with gradients on, each chunk is recomputed in the backward pass, so at most one
    chunk's full-vocabulary logits are alive at once.
    """
    import torch
    from torch.utils.checkpoint import checkpoint

    hf = _hf_model(model)
    decoder, head = hf.get_decoder(), hf.get_output_embeddings()
    if decoder is None or head is None:
        raise SpadeError(
            f"{type(hf).__name__} exposes no decoder or output layer: log-probs cannot be "
            "computed in chunks (set grpo.logprob_chunk = 0)."
        )
    hidden = decoder(
        input_ids=input_ids, attention_mask=attention_mask, use_cache=False
    ).last_hidden_state
    width = input_ids.shape[1]
    hidden = hidden[:, width - keep : width - 1]
    targets = input_ids[:, width - keep + 1 :]
    scale = None if temperature is None else temperature.float()[:, None, None]
    columns = max(1, chunk // max(1, input_ids.shape[0]))

    def piece(h: Any, t: Any) -> Any:
        logits = head(h).float()
        if scale is not None:
            logits = logits / scale
        return torch.log_softmax(logits, dim=-1).gather(-1, t.unsqueeze(-1)).squeeze(-1)

    out = []
    for start in range(0, hidden.shape[1], columns):
        h, t = hidden[:, start : start + columns], targets[:, start : start + columns]
        if torch.is_grad_enabled():
            out.append(checkpoint(piece, h, t, use_reentrant=False))
        else:
            out.append(piece(h, t))
    return torch.cat(out, dim=1)
