"""LoRA through peft: only adapters train, base weights stay, merged weights give the same
model, and the adapter is saved in the format peft and vLLM read."""

from __future__ import annotations

import importlib
import os

import pytest

from spade_envs.trainer.adapters import (
    LoRAError,
    adapter_state,
    adapters_disabled,
    add_adapters,
    merged_weights,
    write_adapter,
)
from spade_envs.trainer.learner import GRPOConfig, GRPOConfigError, Learner

from .ddp_worker import mixed_samples, tiny_llama

if os.environ.get("CI"):  # in CI a missing dependency fails
    torch = importlib.import_module("torch")
    importlib.import_module("transformers")
    peft = importlib.import_module("peft")
else:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")

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
    adapted = add_adapters(model, rank=2, alpha=16.0, targets=("q_proj", "v_proj"), seed=0)
    assert isinstance(adapted, peft.PeftModel)
    layers = sorted(
        n for n, m in model.named_modules() if isinstance(m, peft.tuners.lora.LoraLayer)
    )
    assert layers == sorted(
        f"model.layers.{i}.self_attn.{p}" for i in range(2) for p in ("q_proj", "v_proj")
    )
    assert torch.equal(_logits(model), before)  # B = 0: the same function
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    assert len(trainable) == 2 * len(layers)


def test_the_seed_decides_the_initialisation():
    def a_weights(seed):
        model = tiny_llama(seed=21)
        add_adapters(model, rank=2, alpha=4.0, targets=("q_proj",), seed=seed)
        return [p.detach().clone() for n, p in model.named_parameters() if "lora_A" in n]

    assert all(torch.equal(x, y) for x, y in zip(a_weights(1), a_weights(1)))
    assert not all(torch.equal(x, y) for x, y in zip(a_weights(1), a_weights(2)))


def test_only_adapters_train_and_base_weights_do_not_move():
    model = tiny_llama(seed=20)
    base = {k: v.clone() for k, v in model.state_dict().items()}
    learner = Learner(model, GRPOConfig(learning_rate=5e-2, lora_rank=4), seed=2)
    assert learner.lora_layers and {id(p) for p in learner.trainable_parameters()} == {
        id(p) for n, p in model.named_parameters() if ".lora_" in n
    }
    learner.step(mixed_samples(5))
    state = model.state_dict()
    for key, value in base.items():
        wrapped = key.replace("q_proj.", "q_proj.base_layer.").replace(
            "v_proj.", "v_proj.base_layer."
        )
        assert torch.equal(state[wrapped], value), key
    assert all(torch.count_nonzero(v) > 0 for k, v in state.items() if ".lora_B." in k)
    with adapters_disabled(learner.adapters):
        assert torch.allclose(_logits(model), _logits(tiny_llama(seed=20)))
    assert not torch.allclose(_logits(model), _logits(tiny_llama(seed=20)))


def test_merged_weights_give_the_adapted_output_without_changing_the_model():
    model, learner = _trained()
    adapted = _logits(model)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    plain = tiny_llama(seed=0)  # other weights: everything must come from the merged state
    plain.load_state_dict(merged_weights(model))  # strict: the base model's own names
    assert torch.allclose(_logits(plain), adapted, atol=1e-5)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    assert merged_weights(tiny_llama(seed=3)).keys() == plain.state_dict().keys()


def test_saved_adapter_is_peft_format_and_reloads_to_the_same_model(tmp_path):
    model, learner = _trained(rank=2)
    learner.save_adapter(tmp_path / "adapter")
    assert {p.name for p in (tmp_path / "adapter").iterdir()} >= {
        "adapter_config.json",
        "adapter_model.safetensors",
    }
    reloaded = peft.PeftModel.from_pretrained(tiny_llama(seed=20), str(tmp_path / "adapter"))
    assert torch.allclose(_logits(reloaded), _logits(model), atol=1e-6)
    state = adapter_state(learner.adapters)
    assert state.keys() == learner.state_dict()["model"].keys()
    assert sum(v.numel() for v in state.values()) < sum(p.numel() for p in model.parameters()) / 10
    out = model.generate(torch.tensor([[1, 2, 3]]), max_new_tokens=3, do_sample=False)
    assert out.shape == (1, 6)


def test_the_adapter_written_from_the_adapted_model_is_peft_s_own(tmp_path):
    # write_adapter (what vLLM gets with model.vllm_lora) works on the model peft adapted
    # in place, sharded or not; its files are what peft's save_pretrained writes.
    model, learner = _trained(rank=2)
    learner.save_adapter(tmp_path / "peft")
    write_adapter(model, tmp_path / "ours", dtype=torch.bfloat16, gather=lambda t: t * 1)
    from safetensors.torch import load_file

    peft_tensors = load_file(str(tmp_path / "peft" / "adapter_model.safetensors"))
    ours = load_file(str(tmp_path / "ours" / "adapter_model.safetensors"))
    assert ours.keys() == peft_tensors.keys() and ours
    for key, value in ours.items():
        assert value.dtype == torch.bfloat16
        assert torch.equal(value, peft_tensors[key].to(torch.bfloat16)), key
    reloaded = peft.PeftModel.from_pretrained(tiny_llama(seed=20), str(tmp_path / "ours"))
    assert torch.allclose(_logits(reloaded), _logits(model), atol=0.05)
    with pytest.raises(LoRAError, match="carries no LoRA adapter"):
        write_adapter(tiny_llama(), tmp_path / "none")


def test_full_fine_tuning_has_no_adapter_to_save(tmp_path):
    learner = Learner(tiny_llama(), GRPOConfig(learning_rate=1e-2), seed=0)
    assert learner.lora_layers == []
    with pytest.raises(GRPOConfigError, match="no LoRA adapter"):
        learner.save_adapter(tmp_path)


def test_lora_reference_for_kl_is_the_base_model():
    _, learner = _trained(kl_coef=0.5)
    stats = learner.step(mixed_samples(5))
    assert stats["kl"] > 0  # adapters moved the policy away from the base


def test_bad_lora_requests_say_what_to_do():
    model = tiny_llama()
    with pytest.raises(LoRAError, match=r"No linear layer named \['qproj'\].*'q_proj'"):
        add_adapters(model, rank=2, alpha=4.0, targets=("qproj",))
    with pytest.raises(LoRAError, match="rank must be a positive int, got 0"):
        add_adapters(model, rank=0, alpha=4.0, targets=("q_proj",))
    add_adapters(model, rank=2, alpha=4.0, targets=("q_proj",))
    with pytest.raises(LoRAError, match="already on this model"):
        add_adapters(model, rank=2, alpha=4.0, targets=("q_proj",))


def test_adapters_of_another_rank_are_refused_on_resume():
    _, learner = _trained(rank=2)
    other = Learner(
        tiny_llama(seed=20),
        GRPOConfig(learning_rate=5e-2, lora_rank=2, lora_targets=("q_proj",)),
        seed=2,
    )
    with pytest.raises(LoRAError, match="do not match this model's LoRA layers"):
        other.load_state_dict(learner.state_dict())
