"""The trainer's models: generation timing, devices, the weight check before a push to a
vLLM engine, and the advice when vLLM is missing."""

from __future__ import annotations

import importlib
import os

import pytest

from spade_envs.error import SpadeError
from spade_envs.llm import LLMConfigError, VLLMChatModel, WeightSyncError, load_model
from spade_envs.llm.base import ChatModel, Completion
from spade_envs.trainer.adapters import merged_weights
from spade_envs.trainer.config import ModelSettings
from spade_envs.trainer.models import TimedModel, load_models, push_weights, resolve_device

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


def _detached_vllm_model(path) -> VLLMChatModel:
    """A VLLMChatModel over the checkpoint at ``path`` whose engine must never be reached
    (its layout read as ``__init__`` reads it):
    the weight check runs before anything is written or sent (the real engine is tested
    in tests/llm/test_vllm.py, from .venv-vllm)."""
    from spade_envs.llm.vllm_backend import _checkpoint_layout, _ties_embeddings

    class _Untouchable:
        def __getattr__(self, name):
            raise AssertionError(f"the engine was touched ({name})")

    model = VLLMChatModel.__new__(VLLMChatModel)
    model.path, model.name, model.engine = str(path), "tiny", _Untouchable()
    model._weights_dir, model._weights_parent = None, None
    model._layout = _checkpoint_layout(path)
    model._tied = _ties_embeddings(path, model._layout)
    return model


def test_push_checks_names_and_shapes_before_the_engine(tmp_path):
    import torch

    from spade_envs.trainer.adapters import add_adapters

    tiny_llama(seed=1).save_pretrained(tmp_path)  # safetensors
    model = tiny_llama(seed=1)
    add_adapters(model, rank=2, alpha=4.0, targets=("q_proj",), seed=0)
    engine = _detached_vllm_model(tmp_path)
    checked = engine._checked(merged_weights(model))  # adapters folded in
    assert "model.layers.0.self_attn.q_proj.weight" in checked
    assert not any("lora" in k or "base_layer" in k for k in checked)
    with pytest.raises(WeightSyncError, match=r"unknown name\(s\).*base_layer"):
        engine.load_weights(model.state_dict())  # adapters not folded in
    wrong = {**merged_weights(model), "model.norm.weight": torch.ones(3)}
    with pytest.raises(WeightSyncError, match=r"model.norm.weight: \(3,\) vs \(32,\)"):
        engine.load_weights(wrong)
    with pytest.raises(WeightSyncError, match="holds no safetensors"):
        _detached_vllm_model(tmp_path / "empty").load_weights(merged_weights(model))


def test_a_tied_model_is_served_from_an_untied_copy_that_computes_the_same(tmp_path):
    import torch
    from transformers import LlamaForCausalLM

    from spade_envs.llm.vllm_backend import _write_untied_copy

    tied = tiny_llama(seed=4, tie=True)
    tied.save_pretrained(tmp_path / "tied")
    (tmp_path / "tied" / "tokenizer.json").write_text("{}")
    with pytest.raises(WeightSyncError, match="reloadable=True"):
        _detached_vllm_model(tmp_path / "tied").load_weights(merged_weights(tied))
    (tmp_path / "untied").mkdir()
    _write_untied_copy(tmp_path / "tied", tmp_path / "untied")
    assert (tmp_path / "untied" / "tokenizer.json").is_symlink()
    untied = LlamaForCausalLM.from_pretrained(tmp_path / "untied").eval()
    assert not untied.config.tie_word_embeddings
    ids = torch.tensor([[1, 5, 9, 13]])
    with torch.no_grad():
        assert torch.equal(untied(ids).logits, tied(ids).logits)
    # The trained tied model's weights fit the copy: lm_head.weight is pushed too.
    checked = _detached_vllm_model(tmp_path / "untied")._checked(merged_weights(tied))
    assert torch.equal(checked["lm_head.weight"], checked["model.embed_tokens.weight"])


def test_a_push_that_would_not_fit_on_the_disk_says_where_to_write(tmp_path):
    from spade_envs.llm.vllm_backend import _check_space

    _check_space(tmp_path, 1 << 20)
    with pytest.raises(WeightSyncError, match=r"writes .* GiB free; point model.vllm_weights_dir"):
        _check_space(tmp_path, 1 << 60)


def test_each_rank_s_engine_sees_only_its_own_gpu(monkeypatch):
    from spade_envs.trainer.models import _visible_gpu

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    with _visible_gpu("cuda:2"):
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "6"
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with _visible_gpu("cuda:1"):
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    assert "CUDA_VISIBLE_DEVICES" not in os.environ
    with _visible_gpu("cpu"):
        assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_push_is_a_no_op_for_the_transformers_backend():
    assert push_weights(_Echo(), tiny_llama()) is False
    assert push_weights(TimedModel(_Echo()), tiny_llama()) is False


def test_a_vllm_spec_without_vllm_names_the_command_that_builds_it(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a)
    )
    with pytest.raises(LLMConfigError, match=r"make \.venv-vllm.*\.venv-vllm/bin/spade-envs"):
        load_model("vllm:smollm2")
    settings = ModelSettings(backend="vllm", device="cpu")
    with pytest.raises(SpadeError, match=r"model.backend is vllm.*make \.venv-vllm"):
        load_models(settings)


def _safetensors_with_header(directory, header: bytes, declared: int | None = None):
    import struct

    directory.mkdir(parents=True, exist_ok=True)
    size = len(header) if declared is None else declared
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", size) + header)
    return directory


@pytest.mark.parametrize(
    "header, declared",
    [
        (b"{}", 1 << 40),
        (b"{}", (1 << 64) - 1),
        (b"hello", None),
        (b"[]", None),
        (b'{"a": {"dtype": "F32"}}', None),
    ],
)
def test_a_malformed_safetensors_header_is_refused_naming_the_file(tmp_path, header, declared):
    from spade_envs.llm.vllm_backend import _checkpoint_layout

    directory = _safetensors_with_header(tmp_path / "m", header, declared)
    with pytest.raises(LLMConfigError, match="model.safetensors"):
        _checkpoint_layout(directory)


def test_a_fifo_in_the_model_directory_does_not_hang(tmp_path):
    import threading

    from spade_envs.llm.vllm_backend import _checkpoint_layout

    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    outcome: list[BaseException | dict] = []

    def read() -> None:
        try:
            outcome.append(_checkpoint_layout(tmp_path))
        except BaseException as exc:  # kept for the assertion below, not swallowed
            outcome.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    # Refused before any open, the reader finishes at once; one that opened the FIFO
    # blocks until a writer comes, so give it one (a writer that closes at once is
    # end-of-file) and the outcome below says what it did instead.
    worker.join(10)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(10)
    [error] = outcome
    assert isinstance(error, WeightSyncError), error
    assert "model.safetensors" in str(error) and "not a regular file" in str(error)


def test_the_timed_model_passes_per_conversation_parameters_through_in_one_call():
    from spade_envs.llm.base import ChatModel, Completion, SamplingParams
    from spade_envs.trainer.models import TimedModel

    class Counting(ChatModel):
        def __init__(self):
            self.calls = []

        def generate(self, conversations, params=None):
            raise AssertionError("generate_each must reach the inner model's own batching")

        def generate_each(self, conversations, params):
            self.calls.append(list(params))
            return [Completion(text="{}", token_ids=(1, 2)) for _ in conversations]

    inner = Counting()
    timed = TimedModel(inner)
    params = [SamplingParams(seed=3), SamplingParams(seed=9, temperature=0.5)]
    replies = timed.generate_each([[{"role": "user", "content": "x"}]] * 2, params)
    assert len(replies) == 2 and inner.calls == [params] and timed.tokens == 4


def test_a_wrapper_with_only_generate_still_serves_per_conversation_parameters():
    # wrap_generator may hand back any object with generate/close (the vLLM self-play
    # test's recorder does); the designer's generate_each must not need more of it.
    from spade_envs.llm.base import Completion, SamplingParams
    from spade_envs.trainer.models import TimedModel

    class GenerateOnly:
        name = "recorder"

        def __init__(self):
            self.seen = []

        def generate(self, conversations, params=None):
            self.seen.append((len(conversations), params.seed))
            return [Completion(text="{}", token_ids=(7,)) for _ in conversations]

    inner = GenerateOnly()
    timed = TimedModel(inner)
    params = [SamplingParams(seed=3), SamplingParams(seed=4), SamplingParams(seed=9)]
    replies = timed.generate_each([[{"role": "user", "content": "x"}]] * 3, params)
    # Seeds 3, 4 count up by one (one batch); 9 starts another.
    assert len(replies) == 3 and inner.seen == [(2, 3), (1, 9)]
    assert timed.tokens == 3 and timed.seconds > 0
