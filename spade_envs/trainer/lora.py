"""A small LoRA (low-rank adapters) of our own: wrap chosen linear layers in place.

``W x`` becomes ``W x + (alpha / r) * B A x`` with ``A`` (``r x in``) initialised like a
linear layer and ``B`` (``out x r``) at zero, so the wrapped model starts exactly equal to
the base model. Only ``A`` and ``B`` train; every base weight is frozen. The adapted model
stays a normal Hugging Face model (``generate`` keeps working), its base weights can be
recovered unchanged, and :func:`merged_state_dict` gives the weights with the adapters
folded in under the base model's own names (what a vLLM weight reload wants).

torch is imported inside the functions (and the module class is built on first use) so
that importing this module stays light.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

from ..error import SpadeError, suggest

__all__ = [
    "LoRAError",
    "apply_lora",
    "lora_disabled",
    "lora_layer_class",
    "lora_modules",
    "lora_state_dict",
    "merge_lora",
    "merged_state_dict",
]


class LoRAError(SpadeError, ValueError):
    """LoRA cannot be applied as asked (bad rank, no matching layer, wrong state)."""


@lru_cache(maxsize=1)
def lora_layer_class() -> type:
    """The ``LoRALinear`` module class (built once, when torch is first needed)."""
    import torch
    from torch import nn

    class LoRALinear(nn.Module):
        """A frozen ``nn.Linear`` plus a trainable low-rank update.

        Args:
            base: The linear layer to adapt (its parameters are frozen).
            rank: Rank ``r`` of the update.
            alpha: Scale numerator: the update is multiplied by ``alpha / rank``.
            generator: Seeds the initialisation of ``A``.
        """

        def __init__(
            self, base: nn.Linear, rank: int, alpha: float, generator: torch.Generator
        ) -> None:
            super().__init__()
            self.base = base
            for param in base.parameters():
                param.requires_grad_(False)
            weight = base.weight
            self.rank = rank
            self.scaling = alpha / rank
            self.enabled = True
            a = torch.empty(rank, base.in_features, dtype=torch.float32)
            # nn.Linear's default: kaiming_uniform with a = sqrt(5), bound 1/sqrt(fan_in).
            bound = 1.0 / math.sqrt(base.in_features)
            a.uniform_(-bound, bound, generator=generator)
            self.lora_a = nn.Parameter(a.to(device=weight.device, dtype=weight.dtype))
            self.lora_b = nn.Parameter(
                torch.zeros(base.out_features, rank, device=weight.device, dtype=weight.dtype)
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = self.base(x)
            if not self.enabled:
                return out
            return out + (x @ self.lora_a.t() @ self.lora_b.t()) * self.scaling

        def merged_weight(self) -> torch.Tensor:
            """``W + (alpha / r) B A`` (detached)."""
            with torch.no_grad():
                delta = (self.lora_b @ self.lora_a) * self.scaling
                return self.base.weight + delta.to(self.base.weight.dtype)

    return LoRALinear


def lora_modules(model: Any) -> dict[str, Any]:
    """The LoRA layers of ``model`` by module name (empty when none was applied)."""
    cls = lora_layer_class()
    return {name: m for name, m in model.named_modules() if isinstance(m, cls)}


def apply_lora(
    model: Any, *, rank: int, alpha: float = 16.0, targets: Sequence[str], seed: int = 0
) -> list[str]:
    """Wrap every ``nn.Linear`` whose last name part is in ``targets``; freeze the rest.

    Args:
        model: A torch module (a Hugging Face causal LM), changed in place.
        rank: Adapter rank (> 0).
        alpha: Adapter scale numerator.
        targets: Module name endings, e.g. ``("q_proj", "v_proj")``.
        seed: Seeds the adapters' initialisation.

    Returns:
        The names of the wrapped modules.

    Raises:
        LoRAError: Bad rank or alpha, LoRA already applied, or no linear layer matched
            (the message lists the linear layer names the model has).
    """
    import torch
    from torch import nn

    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise LoRAError(f"LoRA rank must be a positive int, got {rank!r}.")
    if not alpha > 0:
        raise LoRAError(f"LoRA alpha must be > 0, got {alpha!r}.")
    if lora_modules(model):
        raise LoRAError("LoRA is already applied to this model; apply it once.")
    wanted = set(targets)
    linear_names = sorted(
        {name.rsplit(".", 1)[-1] for name, m in model.named_modules() if isinstance(m, nn.Linear)}
    )
    chosen = [
        name
        for name, m in model.named_modules()
        if isinstance(m, nn.Linear) and name.rsplit(".", 1)[-1] in wanted
    ]
    if not chosen:
        hint = suggest(next(iter(wanted), ""), linear_names) if len(wanted) == 1 else ""
        raise LoRAError(
            f"No linear layer named {sorted(wanted)} in the model.{hint} Its linear layers "
            f"are named {linear_names}; set lora_targets to some of them."
        )
    for param in model.parameters():
        param.requires_grad_(False)
    generator = torch.Generator().manual_seed(seed)
    cls = lora_layer_class()
    for name in chosen:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, cls(getattr(parent, child), rank, alpha, generator))
    return chosen


@contextlib.contextmanager
def lora_disabled(model: Any) -> Iterator[None]:
    """Run ``model`` as its base model (adapters off) inside the block."""
    layers = list(lora_modules(model).values())
    before = [layer.enabled for layer in layers]
    for layer in layers:
        layer.enabled = False
    try:
        yield
    finally:
        for layer, state in zip(layers, before):
            layer.enabled = state


def lora_state_dict(model: Any) -> dict[str, Any]:
    """The adapter weights only (``...lora_a`` / ``...lora_b``), detached copies."""
    return {
        k: v.detach().clone()
        for k, v in model.state_dict().items()
        if k.endswith(".lora_a") or k.endswith(".lora_b")
    }


def merged_state_dict(model: Any) -> dict[str, Any]:
    """The model's weights with adapters folded in, under the base model's names.

    ``...q_proj.base.weight`` becomes ``...q_proj.weight`` (equal to ``W + s B A``),
    adapter tensors are dropped: a state dict the un-adapted architecture loads.
    """
    layers = lora_modules(model)
    renamed = {
        f"{name}.base.{key}": f"{name}.{key}"
        for name, layer in layers.items()
        for key in layer.base.state_dict()
    }
    out = {}
    for key, value in model.state_dict().items():
        if key.endswith(".lora_a") or key.endswith(".lora_b"):
            continue
        if key in renamed:
            key = renamed[key]
            name, _, leaf = key.rpartition(".")
            if leaf == "weight":
                value = layers[name].merged_weight()
        out[key] = value.detach().clone()
    return out


def merge_lora(model: Any) -> Any:
    """Fold the adapters into their base layers and remove them, in place.

    Returns:
        ``model``, now without LoRA layers: its linear layers hold ``W + s B A``.
    """
    import torch

    for name, layer in lora_modules(model).items():
        base = layer.base
        with torch.no_grad():
            base.weight.copy_(layer.merged_weight())
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, base)
    return model
