"""LoRA adapters through peft, and the trained weights as the base model names them.

The learner adds adapters with :func:`add_adapters` (peft's ``get_peft_model``: only the
adapters train, ``B`` starts at zero so the adapted model starts equal to the base model).
peft changes the Hugging Face model in place, so the model the transformers backend
generates with is the adapted one. Adapters are saved in peft's own format
(``adapter_config.json`` + ``adapter_model.safetensors``), which ``PeftModel.from_pretrained``
and vLLM's LoRA support read.

:func:`merged_weights` gives the weights with the adapters folded in under the base
model's own names, without changing the model: what a generation engine that loaded the
base checkpoint reloads after an update.

peft and torch are imported inside the functions, so importing this module stays light.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..error import SpadeError, suggest

__all__ = [
    "ADAPTER_NAME",
    "LoRAError",
    "add_adapters",
    "adapter_state",
    "adapters_disabled",
    "load_adapter_state",
    "merged_weights",
    "write_adapter",
]

#: peft's name for the one adapter the learner trains.
ADAPTER_NAME = "default"

_INSTALL = "Install it with: pip install 'spade-envs[train]' (it pins peft with the rest)."


class LoRAError(SpadeError, ValueError):
    """LoRA cannot be applied as asked (bad rank, no matching layer, wrong state)."""


def _linear_names(model: Any) -> list[str]:
    from torch import nn

    return sorted(
        {name.rsplit(".", 1)[-1] for name, m in model.named_modules() if isinstance(m, nn.Linear)}
    )


def add_adapters(
    model: Any, *, rank: int, alpha: float, targets: Sequence[str], seed: int = 0
) -> Any:
    """Add trainable LoRA adapters to the linear layers named in ``targets``.

    Args:
        model: A Hugging Face causal LM, changed in place (its other weights freeze).
        rank: Adapter rank (> 0).
        alpha: Scale numerator: the update is ``alpha / rank * B A``.
        targets: Linear layer name endings, e.g. ``("q_proj", "v_proj")``.
        seed: Seeds the adapters' initialisation.

    Returns:
        The ``peft.PeftModel`` around ``model`` (``model`` itself now runs with the
        adapters).

    Raises:
        LoRAError: Bad rank or alpha, adapters already added, no linear layer matched
            (the message lists the model's linear layer names), or peft is missing.
    """
    import torch

    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise LoRAError(f"LoRA rank must be a positive int, got {rank!r}.")
    if not alpha > 0:
        raise LoRAError(f"LoRA alpha must be > 0, got {alpha!r}.")
    try:
        import peft
    except ImportError as exc:
        raise LoRAError(f"LoRA needs peft ({exc}). {_INSTALL}") from None
    if any(isinstance(m, peft.tuners.lora.LoraLayer) for m in model.modules()):
        raise LoRAError("LoRA adapters are already on this model; add them once.")
    wanted = list(dict.fromkeys(targets))
    names = _linear_names(model)
    missing = [t for t in wanted if t not in names]
    if not wanted or len(missing) == len(wanted):
        hint = suggest(wanted[0], names) if len(wanted) == 1 else ""
        raise LoRAError(
            f"No linear layer named {sorted(wanted)} in the model.{hint} Its linear layers "
            f"are named {names}; set lora_targets to some of them."
        )
    config = peft.LoraConfig(
        r=rank,
        lora_alpha=alpha,
        target_modules=wanted,
        lora_dropout=0.0,  # the update must see the policy that generated
        bias="none",
        task_type="CAUSAL_LM",
    )
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        # peft asks transformers for a renamed attribute: a FutureWarning no user acts on.
        warnings.filterwarnings(
            "ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning
        )
        torch.manual_seed(seed)
        return peft.get_peft_model(model, config, adapter_name=ADAPTER_NAME)


@contextlib.contextmanager
def adapters_disabled(adapted: Any) -> Iterator[None]:
    """Run the model as its base model (adapters off) inside the block."""
    with adapted.disable_adapter():
        yield


def adapter_state(adapted: Any) -> dict[str, Any]:
    """The adapter weights in peft's naming, detached copies."""
    from peft import get_peft_model_state_dict

    state = get_peft_model_state_dict(adapted, adapter_name=ADAPTER_NAME)
    return {k: v.detach().clone() for k, v in state.items()}


def load_adapter_state(adapted: Any, state: dict[str, Any]) -> None:
    """Load what :func:`adapter_state` returned.

    Raises:
        LoRAError: The saved adapters are not this model's (other targets or rank).
    """
    from peft import set_peft_model_state_dict

    if any(k.endswith((".lora_a", ".lora_b")) for k in state):
        raise LoRAError(
            "These adapters were saved by spade-envs' own LoRA, before LoRA moved to peft; "
            "they cannot be loaded. Start the run again in a new --run-dir (or with "
            "--resume never after moving the old one away)."
        )
    wanted = set(adapter_state(adapted))
    if set(state) != wanted:
        raise LoRAError(
            f"The saved adapters do not match this model's LoRA layers ({len(state)} saved, "
            f"{len(wanted)} here); use the same lora_targets."
        )
    try:
        set_peft_model_state_dict(adapted, state, adapter_name=ADAPTER_NAME)
    except RuntimeError as exc:  # shapes: another rank
        raise LoRAError(f"The saved adapters do not fit this model: {exc}") from None


def write_adapter(
    model: Any,
    directory: Any,
    *,
    dtype: Any = None,
    gather: Callable[[Any], Any] | None = None,
    base_model: str | None = None,
) -> Path:
    """Write ``model``'s LoRA adapter in peft's format (``adapter_config.json`` and
    ``adapter_model.safetensors``) to ``directory``: what ``PeftModel.from_pretrained`` and
    vLLM's ``LoRARequest`` read.

    Unlike peft's ``save_pretrained`` it works on the model peft adapted in place (not its
    wrapper) and on a sharded model, each tensor gathered whole (collective then: every
    rank calls it).

    Args:
        model: The model with peft's LoRA layers.
        directory: Where to write (created).
        dtype: The tensors' dtype in the file (default: the dtype a sharded model
            computes in, else as they are).
        gather: Makes a sharded tensor whole (default: ``sharding.full_tensor``, which
            leaves a whole tensor as it is).
        base_model: Written as the config's ``base_model_name_or_path`` (vLLM's
            filesystem resolver loads an adapter only for the base model it names).

    Returns:
        ``directory`` as a Path.
    """
    from safetensors.torch import save_file

    from .sharding import full_tensor

    gather = gather or full_tensor
    dtype = dtype if dtype is not None else getattr(model, "_spade_compute_dtype", None)
    configs = getattr(model, "peft_config", None) or {}
    if ADAPTER_NAME not in configs:
        raise LoRAError(f"{type(model).__name__} carries no LoRA adapter to write.")
    tensors = {}
    for name, param in model.named_parameters():
        if ".lora_" not in name:
            continue
        value = gather(param.detach())
        if dtype is not None:
            value = value.to(dtype)
        # peft's file names: the wrapper's prefix, without the adapter's name.
        key = "base_model.model." + name.replace(f".{ADAPTER_NAME}.", ".")
        tensors[key] = value.contiguous().cpu()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = configs[ADAPTER_NAME]
    if base_model is not None:
        config = copy.copy(config)
        config.base_model_name_or_path = base_model
    config.save_pretrained(str(directory))
    save_file(tensors, str(directory / "adapter_model.safetensors"))
    return directory


def merged_weights(model: Any, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """The model's weights with any LoRA adapters folded in, under the base model's names.

    ``...q_proj.base_layer.weight`` becomes ``...q_proj.weight`` holding ``W + s B A``
    (peft's ``get_delta_weight``); adapter tensors are left out. The model is not
    changed (peft's merge/unmerge would round the base weights in bf16). Tensors that are
    not adapted are returned as they are (not copied).

    Args:
        model: The model with peft's LoRA layers (or none).
        state: Its whole weights, already gathered (a sharded model's), to merge instead
            of the model's own; the deltas are then ``scaling * B @ A`` of these tensors.
    """
    from peft.tuners.lora import LoraLayer

    layers = {name: m for name, m in model.named_modules() if isinstance(m, LoraLayer)}
    weights = model.state_dict() if state is None else state
    out: dict[str, Any] = {}
    for key, value in weights.items():
        if ".lora_" in key:
            continue
        name, sep, leaf = key.partition(".base_layer.")
        if sep and name in layers:
            key = f"{name}.{leaf}"
            if leaf == "weight":
                layer = layers[name]
                if state is None:
                    delta = layer.get_delta_weight(ADAPTER_NAME)
                else:
                    a = state[f"{name}.lora_A.{ADAPTER_NAME}.weight"].float()
                    b = state[f"{name}.lora_B.{ADAPTER_NAME}.weight"].float()
                    delta = (b @ a) * layer.scaling[ADAPTER_NAME]
                value = value + delta.to(value.dtype)
        out[key] = value.detach()
    return out
