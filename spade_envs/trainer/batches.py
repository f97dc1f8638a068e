"""Packing samples for the learner: truncation, rows, right-padded micro-batches, and the
module that computes token log-probs (what :class:`~spade_envs.trainer.learner.Learner`
differentiates through, for GRPO and for the cold start's likelihood steps alike).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MicroBatch", "Row", "fit_to_length", "token_logprobs_class"]


def fit_to_length(
    prompt: Sequence[int], completion: Sequence[int], max_len: int
) -> tuple[list[int], list[int], bool]:
    """Cut a sample to at most ``max_len`` tokens, keeping the completion.

    Tokens go from the left of the prompt first; one prompt token always stays (it
    predicts the first completion token), so a completion of ``max_len`` tokens or more
    loses its tail.

    Returns:
        ``(prompt, completion, truncated)``.
    """
    prompt, completion = list(prompt), list(completion)
    if len(prompt) + len(completion) <= max_len:
        return prompt, completion, False
    keep = max(1, max_len - len(completion))
    return prompt[-keep:], completion[: max_len - keep], True


@dataclass
class Row:
    """One sample ready to pack (after truncation)."""

    index: int
    agent: bool
    prompt_len: int
    tokens: list[int]
    advantage: float
    old: list[float] | None
    temperature: float = 1.0
    ref: list[float] | None = None
    loss_mask: list[int] | None = None  # per completion token (None: all in the loss)

    @property
    def completion_len(self) -> int:
        """Completion tokens in the loss."""
        if self.loss_mask is not None:
            return sum(self.loss_mask)
        return len(self.tokens) - self.prompt_len


@dataclass
class MicroBatch:
    """Rows packed for one forward pass."""

    rows: list[Row]
    input_ids: Any
    attention_mask: Any
    keep: int  # logits kept: positions [T - keep, T)
    mask: Any  # [B, keep - 1] bool: column j predicts token T - keep + 1 + j
    spans: list[tuple[int, int]] = field(default_factory=list)  # completion columns per row
    old: Any = None
    ref: Any = None
    advantages: Any = None
    agent: Any = None
    temperature: Any = None  # [B] float32: each row's sampling temperature


def token_logprobs_class() -> type:
    import torch
    from torch import nn

    class TokenLogprobs(nn.Module):
        """Log-probs of the next tokens in the last ``keep - 1`` positions of each row,
        under each row's sampling temperature: ``log_softmax(logits / T)``; with
        ``chunk``, a chunk of positions at a time (:mod:`~spade_envs.trainer.lean`).

        A module of its own so DistributedDataParallel can wrap exactly what the loss
        differentiates through.
        """

        def __init__(self, model: nn.Module, chunk: int = 0) -> None:
            super().__init__()
            self.model = model
            self.chunk = chunk
            params = inspect.signature(model.forward).parameters
            self.keeps_logits = "logits_to_keep" in params

        def forward(
            self, input_ids: Any, attention_mask: Any, keep: int, temperature: Any = None
        ) -> Any:
            """``[B, keep - 1]`` token log-probs.

            Args:
                input_ids: ``[B, W]`` token ids (right-padded).
                attention_mask: ``[B, W]``.
                keep: Logits kept: positions ``[W - keep, W)``.
                temperature: ``[B]`` sampling temperatures (each row's logits are divided
                    by its own), or None for temperature 1.
            """
            if self.chunk:
                from .lean import chunked_token_logprobs

                return chunked_token_logprobs(
                    self.model, input_ids, attention_mask, keep, temperature, self.chunk
                )
            extra = {"logits_to_keep": keep} if self.keeps_logits else {}
            out = self.model(
                input_ids=input_ids, attention_mask=attention_mask, use_cache=False, **extra
            )
            logits = out.logits[:, -keep:]
            targets = input_ids[:, input_ids.shape[1] - keep + 1 :]
            # float32 softmax even for a bf16 model: log-probs of rare tokens need it.
            logits = logits[:, :-1].float()
            if temperature is not None:
                logits = logits / temperature.to(logits.dtype)[:, None, None]
            logp = torch.log_softmax(logits, dim=-1)
            return logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)

    return TokenLogprobs
