"""Packing samples for the learner: truncation, rows, right-padded micro-batches, and the
module that computes token log-probs (what :class:`~spade_envs.trainer.learner.Learner`
differentiates through, for GRPO and for the cold start's likelihood steps alike).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MicroBatch",
    "Row",
    "batch_columns",
    "fit_to_length",
    "group_rows",
    "pack_micro_batches",
    "row_values",
    "sample_rows",
    "token_logprobs_class",
]


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


def sample_rows(samples: Sequence[Any], max_seq_len: int) -> tuple[list[Row], int]:
    """Each :class:`~spade_envs.trainer.samples.Sample` as a :class:`Row` cut to
    ``max_seq_len`` (:func:`fit_to_length`), and how many were cut."""
    rows, truncated = [], 0
    for index, sample in enumerate(samples):
        prompt, completion, cut = fit_to_length(
            sample.prompt_ids, sample.completion_ids, max_seq_len
        )
        truncated += cut
        # A cut prompt is a different context than the one generation saw: the recorded
        # log-probs no longer describe it, so they are recomputed. Recorded log-probs are
        # at temperature 1 (as the backends report them): they are the behaviour
        # policy's only for a sample drawn at temperature 1.
        reuse = not cut and sample.old_logprobs is not None and sample.temperature == 1.0
        rows.append(
            Row(
                index=index,
                agent=sample.role == "agent",
                prompt_len=len(prompt),
                tokens=prompt + completion,
                advantage=sample.advantage,
                old=list(sample.old_logprobs) if reuse else None,
                temperature=sample.temperature,
                loss_mask=None
                if sample.loss_mask is None
                else list(sample.loss_mask[: len(completion)]),
            )
        )
    return rows, truncated


def group_rows(rows: Sequence[Row], micro_batch: int, token_budget: int = 0) -> list[list[Row]]:
    """Rows grouped into micro-batches, longest first (so padding stays small): at most
    ``micro_batch`` rows each and, with a ``token_budget``, at most that many tokens as
    padded (rows x the longest row's length); a row longer than the budget goes alone.
    """
    ordered = sorted(rows, key=lambda r: (-len(r.tokens), r.index))
    groups: list[list[Row]] = []
    for row in ordered:
        current = groups[-1] if groups else None
        fits = (
            current is not None
            and len(current) < micro_batch
            and (not token_budget or (len(current) + 1) * len(current[0].tokens) <= token_budget)
        )
        if fits:
            current.append(row)
        else:
            groups.append([row])
    return groups


def pack_micro_batches(
    rows: Sequence[Row], micro_batch: int, token_budget: int, pad_token_id: int, device: Any
) -> list[MicroBatch]:
    """Right-padded micro-batches of ``rows`` (see :func:`group_rows`) on ``device``, with
    the mask of the columns whose log-probs reach the loss."""
    import torch

    batches = []
    for chunk in group_rows(rows, micro_batch, token_budget):
        width = max(len(r.tokens) for r in chunk)
        first = min(r.prompt_len for r in chunk)  # first completion token position
        keep = width - first + 1
        input_ids = torch.full((len(chunk), width), pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(chunk), width), dtype=torch.long)
        mask = torch.zeros((len(chunk), keep - 1), dtype=torch.bool)
        spans = []
        for i, row in enumerate(chunk):
            input_ids[i, : len(row.tokens)] = torch.tensor(row.tokens)
            attention[i, : len(row.tokens)] = 1
            # Token t is predicted at position t - 1, i.e. column t - first.
            span = (row.prompt_len - first, len(row.tokens) - first)
            mask[i, span[0] : span[1]] = (
                True if row.loss_mask is None else torch.tensor(row.loss_mask, dtype=torch.bool)
            )
            spans.append(span)
        batch = MicroBatch(
            rows=chunk,
            input_ids=input_ids.to(device),
            attention_mask=attention.to(device),
            keep=keep,
            mask=mask.to(device),
            spans=spans,
        )
        batch.advantages = torch.tensor(
            [r.advantage for r in chunk], dtype=torch.float32, device=device
        )
        batch.agent = torch.tensor([r.agent for r in chunk], device=device)
        batch.temperature = torch.tensor(
            [r.temperature for r in chunk], dtype=torch.float32, device=device
        )
        batches.append(batch)
    return batches


def batch_columns(batch: MicroBatch, values: list[list[float]]) -> Any:
    """Per-row values of the completion tokens (``values[i]`` for row ``i``) laid out as
    the micro-batch's ``[B, keep - 1]`` columns, zeros elsewhere, on its device."""
    import torch

    out = torch.zeros(batch.mask.shape, dtype=torch.float32)
    for i, ((lo, hi), row) in enumerate(zip(batch.spans, values)):
        out[i, lo:hi] = torch.tensor(row, dtype=torch.float32)
    return out.to(batch.mask.device)


def row_values(batch: MicroBatch, columns: Any) -> list[list[float]]:
    """The inverse of :func:`batch_columns`: each row's completion values."""
    cpu = columns.detach().float().cpu()
    return [cpu[i, lo:hi].tolist() for i, (lo, hi) in enumerate(batch.spans)]


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
