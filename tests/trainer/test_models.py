"""The trainer's models: generation timing, devices, and the weight push to a vLLM engine
(checked against a stand-in engine: vLLM itself needs a GPU)."""

from __future__ import annotations

import importlib
import os
from types import SimpleNamespace

import pytest

from spade_envs.error import SpadeError
from spade_envs.llm.base import ChatModel, Completion
from spade_envs.trainer.models import TimedModel, push_weights, resolve_device

from .ddp_worker import tiny_llama

for _name in ("torch", "transformers"):
    if os.environ.get("CI"):  # in CI a missing dependency fails
        importlib.import_module(_name)
    else:
        pytest.importorskip(_name)


class _Echo(ChatModel):
    name = "echo"

    def __init__(self) -> None:
        self.closed = False

    def generate(self, conversations, params=None):
        return [Completion(text="ok", token_ids=(1, 2, 3)) for _ in conversations]

    def close(self) -> None:
        self.closed = True


def test_timed_model_counts_seconds_and_tokens():
    inner = _Echo()
    timed = TimedModel(inner)
    timed.generate([[{"role": "user", "content": "a"}]] * 2)
    timed.generate([[{"role": "user", "content": "b"}]])
    assert timed.tokens == 9 and timed.seconds > 0 and timed.name == "echo"
    timed.close()
    assert inner.closed


def test_devices_resolve_to_the_local_gpu_or_the_cpu():
    import torch

    assert resolve_device("cpu", 3) == "cpu"
    assert resolve_device("cuda:1", 3) == "cuda:1"
    if torch.cuda.is_available():
        assert resolve_device("auto", 1) == "cuda:1"
    else:
        assert resolve_device("auto", 1) == "cpu"
        with pytest.raises(SpadeError, match="no CUDA GPU is visible"):
            resolve_device("cuda", 0)


class _VLLMModel:
    """What a vLLM worker's model offers the push: load_weights over (name, tensor)."""

    def __init__(self) -> None:
        self.loaded: dict = {}

    def load_weights(self, weights):
        self.loaded.update(dict(weights))


class _Engine:
    def __init__(self, modern: bool = True) -> None:
        self.model = _VLLMModel()
        self.resets = 0
        runner = SimpleNamespace(model=self.model)
        self.llm_engine = SimpleNamespace(
            model_executor=SimpleNamespace(driver_worker=SimpleNamespace(model_runner=runner))
        )
        if modern:
            self.apply_model = lambda fn: [fn(self.model)]

    def reset_prefix_cache(self) -> None:
        self.resets += 1


@pytest.mark.parametrize("modern", [True, False])
def test_push_sends_merged_weights_under_the_base_names(modern):
    import torch

    from spade_envs.trainer.lora import apply_lora

    model = tiny_llama(seed=1)
    apply_lora(model, rank=2, alpha=4.0, targets=("q_proj", "v_proj"), seed=0)
    layer = model.model.layers[0].self_attn.q_proj
    with torch.no_grad():
        layer.lora_b.fill_(0.5)  # a trained adapter
    engine = _Engine(modern)
    assert push_weights(SimpleNamespace(engine=engine), model)
    loaded = engine.model.loaded
    assert not any("lora" in name or ".base." in name for name in loaded)
    assert "model.layers.0.self_attn.q_proj.weight" in loaded
    assert torch.allclose(loaded["model.layers.0.self_attn.q_proj.weight"], layer.merged_weight())
    assert not torch.equal(loaded["model.layers.0.self_attn.q_proj.weight"], layer.base.weight)
    assert engine.resets == 1  # cached keys/values of the old weights are dropped


def test_push_is_a_no_op_for_the_transformers_backend_and_explains_old_vllm():
    model = tiny_llama()
    assert push_weights(_Echo(), model) is False
    broken = SimpleNamespace(engine=SimpleNamespace(llm_engine=SimpleNamespace()))
    with pytest.raises(SpadeError, match="neither LLM.apply_model nor the V0 driver worker"):
        push_weights(broken, model)
