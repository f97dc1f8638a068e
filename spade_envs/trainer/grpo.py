"""GRPO, the math only: group-normalised advantages and the clipped token-level loss.

Read top to bottom:

1. **Advantages** (:func:`group_advantages`). Samples compete only with samples of the
   same role and group (plays of one environment; attempts on one document). Inside a
   group the advantage is the reward minus the group mean, divided by the group's
   (population) standard deviation with ``normalize="std"``. A group of one sample, or
   one whose rewards are all equal, teaches nothing: its advantages are exactly 0.
2. **Ratio** ``r = exp(logp - old_logp)`` per completion token: how much more likely the
   current policy makes the token than the policy that generated it. Both log-probs (and
   the reference's) are taken under the temperature ``T`` that sampled the reply,
   ``log_softmax(logits / T)``: at ``T != 1`` that, not the raw distribution, is the
   behaviour policy (the learner does the scaling).
3. **Clipped surrogate** per token: ``-min(r * A, clip(r, 1 - clip_low, 1 + clip_high) * A)``
   (PPO, with separate low and high bounds as in DAPO: a higher upper bound lets rare
   good tokens grow faster).
4. **KL to a reference** (optional): the k3 estimator
   ``exp(ref - logp) - (ref - logp) - 1`` (unbiased, always >= 0), times ``kl_coef``.
5. **Token mean** over the completion mask, taken by the learner across its micro-batches
   (:meth:`~spade_envs.trainer.learner.Learner.step`): every generated token weighs the
   same, so long replies are not down-weighted (DAPO's token-level loss).

numpy computes advantages; torch is imported lazily, only by the loss.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..error import SpadeError, suggest
from .samples import Sample, SampleError

__all__ = [
    "GRPOConfig",
    "GRPOConfigError",
    "NORMALIZE",
    "group_advantages",
    "token_policy_loss",
]

#: How advantages are scaled inside a group: ``std`` (divide by the group's std) or ``none``.
NORMALIZE = ("std", "none")


def group_advantages(
    samples: Sequence[Sample], *, normalize: str = "std", eps: float = 1e-6
) -> list[Sample]:
    """Copies of ``samples`` with their GRPO advantage set.

    Args:
        samples: Samples of either role.
        normalize: ``"std"``: ``(r - mean) / (std + eps)`` per group (population std);
            ``"none"``: ``r - mean``.
        eps: Keeps the division finite for groups with a tiny spread.

    Returns:
        New samples (the inputs are not changed), in the same order.

    Raises:
        SampleError: ``normalize`` is unknown or ``eps`` is negative.
    """
    if normalize not in NORMALIZE:
        raise SampleError(
            f"Unknown advantage normalisation {normalize!r}.{suggest(normalize, NORMALIZE)} "
            f"Use one of {NORMALIZE}."
        )
    if not eps >= 0:
        raise SampleError(f"eps must be >= 0, got {eps!r}.")
    members: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, sample in enumerate(samples):
        members[(sample.role, sample.group)].append(index)

    advantages = np.zeros(len(samples), dtype=np.float64)
    for indices in members.values():
        rewards = np.array([samples[i].reward for i in indices], dtype=np.float64)
        if len(rewards) < 2 or np.all(rewards == rewards[0]):
            continue  # nothing to compare: exactly 0, not rounding noise
        centred = rewards - rewards.mean()
        if normalize == "std":
            centred = centred / (rewards.std() + eps)
        advantages[indices] = centred
    return [replace(s, advantage=float(a)) for s, a in zip(samples, advantages)]


def token_policy_loss(
    logprobs: Any,
    old_logprobs: Any,
    advantages: Any,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    ref_logprobs: Any = None,
    kl_coef: float = 0.0,
) -> tuple[Any, Any, Any, Any]:
    """The per-token GRPO loss, before masking and averaging.

    Args:
        logprobs: ``[B, T]`` log-probs of the completion tokens under the current policy
            (with gradient), at each reply's sampling temperature.
        old_logprobs: ``[B, T]`` behaviour log-probs (no gradient), at the same
            temperature.
        advantages: ``[B]`` (one per sample) or ``[B, T]``.
        clip_low: The ratio is clipped below at ``1 - clip_low``.
        clip_high: ... and above at ``1 + clip_high``.
        ref_logprobs: ``[B, T]`` reference log-probs at the same temperature, or None (no
            KL term).
        kl_coef: Weight of the k3 KL estimate.

    Returns:
        ``(loss, clipped, kl, ratio)``, each ``[B, T]``: the per-token loss, whether the
        clipped branch was taken (bool), the k3 KL estimate (0 without a reference) and
        the probability ratio (detached).
    """
    import torch

    if advantages.dim() == 1:
        advantages = advantages[:, None]
    advantages = advantages.to(logprobs.dtype)
    ratio = torch.exp(logprobs - old_logprobs.detach())
    unclipped = ratio * advantages
    clipped_ratio = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    clipped = clipped_ratio * advantages
    # Pessimistic bound: the smaller objective. Where the clipped one is smaller the
    # ratio is outside the trust region in the direction the advantage pushes, and the
    # clamp makes its gradient zero.
    loss = -torch.minimum(unclipped, clipped)
    was_clipped = clipped < unclipped

    if ref_logprobs is not None and kl_coef:
        log_ratio_ref = ref_logprobs.detach() - logprobs
        kl = torch.exp(log_ratio_ref) - log_ratio_ref - 1.0
        loss = loss + kl_coef * kl
    elif ref_logprobs is not None:
        log_ratio_ref = ref_logprobs.detach() - logprobs.detach()
        kl = torch.exp(log_ratio_ref) - log_ratio_ref - 1.0
    else:
        kl = torch.zeros_like(logprobs).detach()
    return loss, was_clipped, kl.detach(), ratio.detach()


class GRPOConfigError(SpadeError, ValueError):
    """A GRPO setting is out of range, or a learner state does not fit the learner."""


@dataclass(frozen=True)
class GRPOConfig:
    """How the learner updates the model.

    Attributes:
        learning_rate: AdamW learning rate.
        clip_low: The probability ratio is clipped below at ``1 - clip_low``.
        clip_high: ... and above at ``1 + clip_high`` (DAPO: higher than ``clip_low``).
        kl_coef: Weight of the k3 KL penalty to the reference policy (the weights the
            model had when the learner was built); 0 turns it off and saves the forward
            pass (and, for full fine-tuning, the frozen copy).
        max_grad_norm: Gradient norm clipping; 0 turns clipping off (the norm is still
            reported).
        micro_batch: Samples per forward/backward pass (gradients accumulate).
        micro_batch_tokens: A token budget per forward/backward pass (rows x padded
            width), on top of ``micro_batch``: micro-batches of long samples then hold
            fewer rows, those of short ones up to ``micro_batch``, so memory follows the
            tokens rather than the row count. 0: ``micro_batch`` alone decides.
        epochs: Optimiser steps per batch (PPO epochs); after the first, the clipping of
            the ratio to the behaviour policy matters.
        weight_decay: AdamW weight decay.
        max_seq_len: Longest prompt + completion trained on; longer samples lose tokens
            from the left of the prompt.
        lora_rank: 0 = full fine-tuning; > 0 = LoRA adapters of this rank.
        lora_alpha: LoRA scale numerator (the update is scaled by ``alpha / rank``).
        lora_targets: Names of the linear layers that get adapters.
        normalize: Advantage normalisation inside a group: ``"std"`` or ``"none"``.
        activation_checkpointing: Keep only each decoder block's input during the forward
            pass and recompute the block in the backward pass (less memory, about a
            third more compute).
        logprob_chunk: Compute log-probs from the final hidden states this many positions
            at a time (each chunk recomputed in the backward pass), so the
            full-vocabulary logits of the whole micro-batch are never held at once; 0
            computes them all together.
        sharding: With several ranks, ``ddp`` replicates the model on every rank;
            ``fsdp`` shards weights, gradients and AdamW's moments over them (FSDP2,
            float32 masters; :mod:`~spade_envs.trainer.sharding`).
    """

    learning_rate: float = 1e-5
    clip_low: float = 0.2
    clip_high: float = 0.28
    kl_coef: float = 0.0
    max_grad_norm: float = 1.0
    micro_batch: int = 4
    micro_batch_tokens: int = 0
    epochs: int = 1
    weight_decay: float = 0.0
    max_seq_len: int = 2048
    lora_rank: int = 0
    lora_alpha: float = 16.0
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")
    normalize: str = "std"
    activation_checkpointing: bool = False
    logprob_chunk: int = 0
    sharding: str = "ddp"

    def __post_init__(self) -> None:
        def number(name: str, low: float, *, strict: bool = False, high: float | None = None):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise GRPOConfigError(f"{name} must be a number, got {value!r}.")
            bad = value <= low if strict else value < low
            if bad or value != value or (high is not None and value >= high):
                bound = f"> {low}" if strict else f">= {low}"
                upper = f" and < {high}" if high is not None else ""
                raise GRPOConfigError(f"{name} must be {bound}{upper}, got {value!r}.")

        def integer(name: str, low: int):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise GRPOConfigError(f"{name} must be an int >= {low}, got {value!r}.")

        number("learning_rate", 0.0, strict=True)
        number("clip_low", 0.0, high=1.0)
        number("clip_high", 0.0)
        number("kl_coef", 0.0)
        number("max_grad_norm", 0.0)
        number("weight_decay", 0.0)
        number("lora_alpha", 0.0, strict=True)
        integer("micro_batch", 1)
        integer("micro_batch_tokens", 0)
        integer("epochs", 1)
        integer("max_seq_len", 2)
        integer("lora_rank", 0)
        integer("logprob_chunk", 0)
        if self.sharding not in ("ddp", "fsdp"):
            raise GRPOConfigError(
                f"sharding must be ddp or fsdp, got {self.sharding!r}."
                + suggest(str(self.sharding), ("ddp", "fsdp"))
            )
        if not isinstance(self.activation_checkpointing, bool):
            raise GRPOConfigError(
                f"activation_checkpointing must be true or false, got "
                f"{self.activation_checkpointing!r}."
            )
        targets = self.lora_targets
        if not isinstance(targets, (tuple, list)) or not all(
            isinstance(t, str) and t for t in targets
        ):
            raise GRPOConfigError(
                f"lora_targets must be a tuple of layer names, got {self.lora_targets!r}."
            )
        object.__setattr__(self, "lora_targets", tuple(self.lora_targets))
        if self.lora_rank and not self.lora_targets:
            raise GRPOConfigError("lora_rank > 0 needs at least one name in lora_targets.")
        if self.normalize not in NORMALIZE:
            raise GRPOConfigError(
                f"normalize must be one of {NORMALIZE}, got {self.normalize!r}."
                + suggest(str(self.normalize), NORMALIZE)
            )
