"""Our LoRA: only adapters train, base weights stay, merged weights give the same model."""

from __future__ import annotations

import importlib
import os

import pytest

from spade_envs.trainer.learner import GRPOConfig, Learner
from spade_envs.trainer.lora import (
    LoRAError,
    apply_lora,
    lora_disabled,
    lora_modules,
    lora_state_dict,
    merge_lora,
    merged_state_dict,
)

from .ddp_worker import mixed_samples, tiny_llama

if os.environ.get("CI"):  # in CI a missing dependency fails
    torch = importlib.import_module("torch")
    importlib.import_module("transformers")
else:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")

IDS = [[1, 5, 9, 13, 2, 7], [3, 3, 8, 1, 60, 4]]


def _logits(model):
    with torch.no_grad():
        return model(input_ids=torch.tensor(IDS)).logits


def _trained(rank: int = 4, **config):
    model = tiny_llama(seed=20)
    learner = Learner(model, GRPOConfig(learning_rate=5e-2, lora_rank=rank, **config), seed=2)
    for _ in range(2):
        learner.step(mixed_samples(5))
    return model, learner


def test_adapters_start_at_zero_and_wrap_only_the_targets():
    model = tiny_llama(seed=21)
    before = _logits(model)
    names = apply_lora(model, rank=2, targets=("q_proj", "v_proj"), seed=0)
    assert names == [
        f"model.layers.{i}.self_attn.{p}" for i in range(2) for p in ("q_proj", "v_proj")
    ]
    assert sorted(lora_modules(model)) == sorted(names)
    assert torch.equal(_logits(model), before)  # B = 0: the same function
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(n.endswith((".lora_a", ".lora_b")) for n in trainable)
    assert len(trainable) == 2 * len(names)


def test_only_adapters_train_and_base_weights_do_not_move():
    model = tiny_llama(seed=20)
    base = {k: v.clone() for k, v in model.state_dict().items()}
    learner = Learner(model, GRPOConfig(learning_rate=5e-2, lora_rank=4), seed=2)
    assert {id(p) for p in learner.trainable_parameters()} == {
        id(p) for n, p in model.named_parameters() if n.endswith((".lora_a", ".lora_b"))
    }
    learner.step(mixed_samples(5))
    state = model.state_dict()
    for key, value in base.items():
        wrapped = key.replace("q_proj.", "q_proj.base.").replace("v_proj.", "v_proj.base.")
        assert torch.equal(state[wrapped], value), key
    assert all(torch.count_nonzero(v) > 0 for k, v in state.items() if k.endswith("lora_b"))
    with lora_disabled(model):
        assert torch.allclose(_logits(model), _logits(tiny_llama(seed=20)))
    assert not torch.allclose(_logits(model), _logits(tiny_llama(seed=20)))


def test_merged_weights_give_the_wrapped_output():
    model, _ = _trained()
    wrapped = _logits(model)
    plain = tiny_llama(seed=0)  # other weights: everything must come from the state
    plain.load_state_dict(merged_state_dict(model))  # strict: the base model's own names
    assert torch.allclose(_logits(plain), wrapped, atol=1e-5)
    merge_lora(model)
    assert not lora_modules(model)
    assert torch.allclose(_logits(model), wrapped, atol=1e-5)


def test_adapter_state_is_small_and_generation_still_works():
    model, learner = _trained(rank=2)
    adapters = lora_state_dict(model)
    assert adapters.keys() == learner.state_dict()["model"].keys()
    assert (
        sum(v.numel() for v in adapters.values()) < sum(p.numel() for p in model.parameters()) / 10
    )
    out = model.generate(torch.tensor([[1, 2, 3]]), max_new_tokens=3, do_sample=False)
    assert out.shape == (1, 6)


def test_lora_reference_for_kl_is_the_base_model():
    _, learner = _trained(kl_coef=0.5)
    stats = learner.step(mixed_samples(5))
    assert stats["kl"] > 0  # adapters moved the policy away from the base


def test_bad_lora_requests_say_what_to_do():
    model = tiny_llama()
    with pytest.raises(LoRAError, match=r"No linear layer named \['qproj'\].*'q_proj'"):
        apply_lora(model, rank=2, targets=("qproj",))
    with pytest.raises(LoRAError, match="rank must be a positive int, got 0"):
        apply_lora(model, rank=0, targets=("q_proj",))
    apply_lora(model, rank=2, targets=("q_proj",))
    with pytest.raises(LoRAError, match="already applied"):
        apply_lora(model, rank=2, targets=("q_proj",))
