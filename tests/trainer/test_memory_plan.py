"""The memory planner (spade_envs.trainer.memory_plan, sizing) and the memory-lean learner
(spade_envs.trainer.lean): hand-computed cases, parameter counts of real model families
built from tiny configs, measured peaks of real learner steps on the CPU, and the
``plan`` command; activation checkpointing and chunked log-probs change no gradient and
hold less memory.
"""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from spade_envs.cli import main
from spade_envs.error import SpadeError
from spade_envs.trainer.memory_plan import (
    GIB,
    ModelShape,
    TrainShape,
    check_on_cpu,
    gpu_memory_gib,
    largest_fitting,
    plan_memory,
)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = dict(
    hidden_size=64,
    num_hidden_layers=2,
    intermediate_size=128,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    vocab_size=512,
)


def tiny_model(family: str, **overrides):
    config = {**TINY, **overrides}
    torch.manual_seed(0)
    if family == "qwen3":
        return transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**config))
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**config))


# ------------------------------------------------------------------- arithmetic


@pytest.mark.parametrize("family", ["llama", "qwen3"])
@pytest.mark.parametrize("tied", [True, False])
def test_parameter_count_is_the_models_own(family, tied):
    model = tiny_model(family, tie_word_embeddings=tied)
    shape = ModelShape.from_config({**TINY, "tie_word_embeddings": tied, "model_type": family})
    assert shape.params == sum(p.numel() for p in model.parameters())


def test_bundled_shapes_are_the_real_models_sizes():
    # SmolLM2-135M-Instruct as loaded from its package: 134,515,008 parameters.
    assert ModelShape.from_config("smollm2").params == 134_515_008
    # Qwen3-4B: 4.0B parameters, 3.6B without the (tied) embeddings.
    qwen = ModelShape.from_config("qwen3-4b")
    assert round(qwen.params / 1e9, 2) == 4.02
    assert round((qwen.params - qwen.vocab * qwen.hidden) / 1e9, 1) == 3.6


def test_hand_computed_plan():
    shape = ModelShape(hidden=8, layers=2, intermediate=16, heads=2, kv_heads=1, head_dim=4,
                       vocab=32, tied=True)  # fmt: skip
    # blocks: attention 8*4*(2*2+2*1) = 192, mlp 3*8*16 = 384, norms 16 -> 592 each
    assert shape.block_params == 592
    assert shape.params == 32 * 8 + 2 * 592 + 8 == 1448
    plan = plan_memory(shape, TrainShape(micro_batch=2, seq_len=10, dtype="float32"))
    parts = plan.parts
    assert parts["weights"] == parts["gradients"] == 1448 * 4
    assert parts["optimizer"] == 3 * 1448 * 4  # two moments and the step's temporaries
    # per token per block: 4h + 2q + 2(q + 2kv) + 4I values = 32+16+32+64 = 144 floats
    assert parts["activations"] == 2 * 20 * 144 * 4
    assert parts["logits"] == 20 * 32 * 12  # float32 model: no separate copy
    backward = sum(parts[k] for k in ("weights", "gradients", "activations", "logits"))
    assert plan.peak == backward + 2 * 1448 * 4  # the moments
    assert parts["vllm"] == parts["overhead"] == 0 and plan.fits  # no GPU: nothing judged


def test_sharding_lora_checkpointing_and_chunks_each_shrink_their_part():
    shape = ModelShape.from_config("qwen3-4b")
    base = TrainShape(micro_batch=4, seq_len=4096, world=8)
    plain = plan_memory(shape, base, 80).parts
    fsdp = plan_memory(shape, TrainShape(4, 4096, world=8, sharding="fsdp"), 80).parts
    assert fsdp["weights"] < plain["weights"] / 2 and fsdp["optimizer"] < plain["optimizer"] / 2
    lora = plan_memory(shape, TrainShape(4, 4096, lora_rank=16), 80).parts
    assert lora["gradients"] < plain["gradients"] / 100
    ckpt = plan_memory(shape, TrainShape(4, 4096, activation_checkpointing=True), 80).parts
    assert ckpt["activations"] < plain["activations"] / 5
    chunked = plan_memory(shape, TrainShape(4, 4096, logprob_chunk=1024), 80).parts
    assert chunked["logits"] == plain["logits"] // 16
    assert plan_memory(shape, TrainShape(4, 4096, kl=True), 80).parts["reference"] > 0
    vllm = plan_memory(shape, TrainShape(4, 4096, vllm_memory=0.5), 80).parts["vllm"]
    assert vllm == 40 * GIB


def test_largest_fitting_is_the_boundary():
    shape = ModelShape.from_config("qwen3-4b")
    train = TrainShape(micro_batch=1, seq_len=4096, activation_checkpointing=True)
    best = largest_fitting(shape, train, 80, "micro_batch", 1024)
    assert best > 1
    assert plan_memory(shape, TrainShape(best, 4096, activation_checkpointing=True), 80).fits
    assert not plan_memory(
        shape, TrainShape(best + 1, 4096, activation_checkpointing=True), 80
    ).fits


def test_bad_inputs_say_what_is_wrong(tmp_path):
    with pytest.raises(SpadeError, match="Did you mean.*qwen3-4b"):
        ModelShape.from_config("qwen3-4")
    with pytest.raises(SpadeError, match="mixture-of-experts"):
        ModelShape.from_config({**TINY, "num_experts": 8})
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(SpadeError, match="not a readable config.json"):
        ModelShape.from_config(tmp_path)
    with pytest.raises(SpadeError, match="Did you mean.*H100"):
        gpu_memory_gib("H10")
    with pytest.raises(SpadeError, match="sharding must be ddp or fsdp"):
        TrainShape(1, 8, sharding="zero3")


# ------------------------------------------------------------- measured on the CPU


def _learner_peak(cfg, micro_batch, seq_len, **grpo):
    return check_on_cpu(cfg, micro_batch, seq_len, **grpo)[0]


@pytest.mark.parametrize(
    ("hidden", "layers", "vocab", "micro_batch", "seq_len", "grpo"),
    [
        (128, 2, 2048, 4, 128, {}),
        (256, 4, 4096, 4, 256, {}),
        (512, 4, 8192, 2, 256, {}),
        (256, 4, 4096, 4, 256, {"activation_checkpointing": True}),
        (256, 4, 4096, 4, 256, {"logprob_chunk": 128}),
    ],
)
def test_predicted_peak_is_near_a_measured_learner_step(
    hidden, layers, vocab, micro_batch, seq_len, grpo
):
    cfg = dict(hidden_size=hidden, num_hidden_layers=layers, intermediate_size=hidden * 8 // 3,
               num_attention_heads=8, num_key_value_heads=4, vocab_size=vocab,
               tie_word_embeddings=True)  # fmt: skip
    # check_on_cpu: what the step creates (not the weights and moments, there before it),
    # measured, and the plan for a CPU (attention without fused kernels, AdamW one
    # tensor at a time).
    measured, predicted = check_on_cpu(cfg, micro_batch, seq_len, **grpo)
    assert 0.85 <= predicted / measured <= 1.15, (predicted, measured)


# ------------------------------------------------------------------ the lean learner


def _step(model, **grpo):
    from spade_envs.trainer.learner import GRPOConfig, Learner
    from spade_envs.trainer.samples import Sample

    model = copy.deepcopy(model)
    learner = Learner(model, GRPOConfig(micro_batch=2, max_seq_len=64, learning_rate=1e-3, **grpo))
    samples = [
        Sample(role="agent", prompt_ids=[1, 2, 3, 4],
               completion_ids=[(i * 7 + j) % 500 for j in range(20 + i)],
               reward=float(i % 2), group="g", temperature=0.7)
        for i in range(4)
    ]  # fmt: skip
    loss = learner.step(samples)["loss"]
    return loss, learner.gradients(), dict(model.named_parameters())


@pytest.mark.parametrize("family", ["llama", "qwen3"])
@pytest.mark.parametrize(
    "grpo",
    [
        {"activation_checkpointing": True},
        {"logprob_chunk": 7},
        {"activation_checkpointing": True, "logprob_chunk": 16},
    ],
    ids=["checkpointing", "chunks", "both"],
)
def test_lean_options_change_no_gradient(family, grpo):
    model = tiny_model(family)
    loss, grads, weights = _step(model)
    lean_loss, lean_grads, lean_weights = _step(model, **grpo)
    assert lean_loss == pytest.approx(loss, abs=1e-6)
    for name, grad in grads.items():
        torch.testing.assert_close(lean_grads[name], grad, rtol=1e-4, atol=1e-6)
    for name, weight in weights.items():
        torch.testing.assert_close(lean_weights[name], weight, rtol=1e-4, atol=1e-5)


def test_lean_options_hold_less_memory():
    cfg = dict(hidden_size=256, num_hidden_layers=6, intermediate_size=688,
               num_attention_heads=8, num_key_value_heads=4, vocab_size=8192,
               tie_word_embeddings=True)  # fmt: skip
    plain = _learner_peak(cfg, 4, 256)
    assert _learner_peak(cfg, 4, 256, activation_checkpointing=True) < 0.7 * plain
    assert _learner_peak(cfg, 4, 256, logprob_chunk=128) < 0.95 * plain


def test_lean_options_work_with_lora():
    model = tiny_model("llama")
    loss, grads, _ = _step(model, lora_rank=4)
    lean_loss, lean_grads, _ = _step(model, lora_rank=4, activation_checkpointing=True,
                                     logprob_chunk=8)  # fmt: skip
    assert lean_loss == pytest.approx(loss, abs=1e-6) and grads.keys() == lean_grads.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(lean_grads[name], grad, rtol=1e-4, atol=1e-6)


# --------------------------------------------------------------------- the command


def test_plan_command_fits_the_shipped_gpu_preset_and_refuses_a_bigger_model():
    runner = CliRunner()
    fits = runner.invoke(main, ["plan", "--preset", "gpu-8x", "--model", "qwen3-4b"])
    assert fits.exit_code == 0, fits.output
    assert "8 H100 (80 GiB each)" in fits.output and ": fits" in fits.output
    too_big = runner.invoke(main, ["plan", "--preset", "gpu-8x", "--model", "qwen3-8b"])
    assert too_big.exit_code == 1
    assert "DOES NOT FIT" in too_big.output and "--gpus H200:8" in too_big.output
    as_json = runner.invoke(
        main, ["plan", "--preset", "gpu-8x", "--model", "qwen3-4b", "--json", "--gpus", "H200:8"]
    )
    data = json.loads(as_json.output)
    assert data["fits"] and data["capacity_gib"] == 141.0 and data["largest_micro_batch"] > 4


def test_plan_command_bad_input():
    runner = CliRunner()
    result = runner.invoke(main, ["plan", "--preset", "gpu-8x", "--model", "qwen-4b"])
    assert result.exit_code == 2 and "No model config" in result.output
    result = runner.invoke(main, ["plan", "--preset", "gpu-8x", "--set", "model.spec=/nowhere"])
    assert result.exit_code == 2 and "pass --model" in result.output
    result = runner.invoke(main, ["plan", "--preset", "gpu-8x", "--gpus", "H100x8"])
    assert result.exit_code == 2 and "NAME[:COUNT]" in result.output


def test_launch_refuses_a_plan_that_does_not_fit(monkeypatch):
    runner = CliRunner()
    refused = runner.invoke(
        main, ["launch", "--preset", "gpu-8x", "--plan-model", "qwen3-8b", "--dryrun"]
    )
    assert refused.exit_code == 1
    assert "Refusing to launch" in refused.output and "DOES NOT FIT" in refused.output
    forced = runner.invoke(
        main,
        ["launch", "--preset", "gpu-8x", "--plan-model", "qwen3-8b", "--dryrun",
         "--launch-even-if-it-does-not-fit"],
    )  # fmt: skip
    assert forced.exit_code == 0, forced.output
    assert "THE PLAN DOES NOT FIT; launching anyway" in forced.output


def test_vllm_asleep_and_the_gather_for_it_are_planned():
    shape = ModelShape.from_config("qwen3-8b")
    awake = plan_memory(shape, TrainShape(1, 2048, vllm_memory=0.35), 80).parts
    asleep = plan_memory(shape, TrainShape(1, 2048, vllm_memory=0.35, vllm_sleep=True), 80)
    assert awake["vllm"] == 28 * GIB and asleep.parts["vllm"] == 1 * GIB
    # Sharded, each rank gathers the whole weights for its engine after the update.
    sharded = plan_memory(
        shape, TrainShape(1, 2048, sharding="fsdp", world=8, vllm_memory=0.35), 80
    )
    assert sharded.parts["gathered"] == shape.params * 2
    assert "gathered" not in plan_memory(shape, TrainShape(1, 2048, vllm_memory=0.35), 80).parts


def test_an_engine_share_that_cannot_hold_the_weights_does_not_run_and_adapters_travel_light():
    shape = ModelShape.from_config("qwen3-32b")
    lora = dict(lora_rank=32, sharding="fsdp", world=16, vllm_memory=0.5, vllm_sleep=True)
    # With the adapter alone going to vLLM, each rank gathers LoRA's weights, not the
    # model's: on H200s that is what makes it fit.
    adapter = plan_memory(shape, TrainShape(1, 2048, vllm_lora=True, **lora), 141)
    merged = plan_memory(shape, TrainShape(1, 2048, **lora), 141)
    assert adapter.fits and not adapter.blockers and not merged.fits
    assert merged.parts["gathered"] == shape.params * 2
    assert adapter.parts["gathered"] == shape.lora_params(32, ("q_proj", "v_proj")) * 2
    # On an H100 the engine's half cannot hold 61 GiB of weights, whatever the peak says.
    small = plan_memory(shape, TrainShape(1, 2048, vllm_lora=True, **lora), 80)
    assert small.peak < 80 * GIB and not small.fits
    assert "cannot hold the model's weights (61.0 GiB)" in small.blockers[0]
    assert "DOES NOT RUN" in small.table()


def test_a_pool_without_an_address_is_refused_before_any_model_loads(monkeypatch):
    from spade_envs.trainer.config import ModelSettings
    from spade_envs.trainer.models import load_models

    monkeypatch.delenv("SPADE_GENERATION_URL", raising=False)
    settings = ModelSettings(spec="/nowhere", backend="vllm-server", exchange_dir="/x")
    with pytest.raises(SpadeError, match="needs the pool's address"):
        load_models(settings)


def test_the_pool_preset_plans_no_engine_on_the_training_gpus():
    result = CliRunner().invoke(
        main, ["plan", "--preset", "multinode-pool", "--model", "qwen3-32b", "--json"]
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    parts = plan["parts_gib"]
    assert parts["vllm"] == 0 and "gathered" not in parts and "generator" not in parts


def test_a_token_budget_caps_the_tokens_of_a_pass():
    shape = ModelShape.from_config("qwen3-4b")
    plain = plan_memory(shape, TrainShape(8, 4096), 80).parts
    budget = plan_memory(shape, TrainShape(8, 4096, micro_batch_tokens=8192), 80).parts
    assert budget["activations"] == plain["activations"] // 4
    # A budget below one sequence still runs that sequence alone.
    tiny = plan_memory(shape, TrainShape(8, 4096, micro_batch_tokens=100), 80).parts
    assert tiny["activations"] == plain["activations"] // 8


def test_the_multinode_preset_fits_8b_and_14b_and_says_what_32b_needs():
    runner = CliRunner()
    for model in ("qwen3-8b", "qwen3-14b"):
        result = runner.invoke(main, ["plan", "--preset", "multinode", "--model", model])
        assert result.exit_code == 0 and ": fits" in result.output, result.output
    refused = runner.invoke(main, ["plan", "--preset", "multinode", "--model", "qwen3-32b"])
    assert refused.exit_code == 1 and "DOES NOT RUN: vLLM's share" in refused.output
    assert "no vLLM share holds the weights and leaves the learner room" in refused.output
    h200 = runner.invoke(
        main, ["plan", "--preset", "multinode", "--model", "qwen3-32b", "--gpus", "H200:8"]
    )
    assert h200.exit_code == 0, h200.output
    # An engine share too small for the weights: the smallest share that runs is named.
    small = runner.invoke(
        main, ["plan", "--preset", "multinode", "--model", "qwen3-14b", "--set",
               "model.vllm_memory=0.3"],
    )  # fmt: skip
    assert small.exit_code == 1 and "--set model.vllm_memory=0.4" in small.output, small.output


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        (["model.vllm_sleep=true"], "needs model.backend = 'vllm'"),
        (["model.vllm_lora=true"], "model.vllm_lora hands LoRA adapters to a vLLM engine"),
        (["model.backend=vllm-server"], "set model.exchange_dir"),
        (["model.backend=vllm-server", "model.exchange_dir=/x", "grpo.lora_rank=0"],
         "a pool cannot take whole weights"),
        (["model.vllm_lora=true", "model.backend=vllm", "grpo.lora_rank=0"], "lora_rank is 0"),
        (["model.vllm_sleep=true", "model.backend=vllm", "model.device=cpu"], "CUDA device"),
        (["grpo.sharding=zero"], "sharding must be ddp or fsdp"),
    ],
)
def test_settings_the_trainer_cannot_run_are_refused(settings, words):
    from spade_envs.trainer.config_io import load_config

    with pytest.raises(SpadeError, match=words):
        load_config("cpu-test", settings)


def test_launch_plans_the_settings_the_run_will_train_with():
    # --set items inside SPADE_TRAIN_ARGS reach the plan: micro-batches of 64 do not fit.
    result = CliRunner().invoke(
        main,
        ["launch", "--preset", "gpu-8x", "--plan-model", "qwen3-4b", "--dryrun", "--env",
         "SPADE_TRAIN_ARGS=--iterations 5 --set grpo.micro_batch=64"],
    )  # fmt: skip
    assert result.exit_code == 1 and "micro-batch 64 x 6144" in result.output
    plain = CliRunner().invoke(main, ["launch", "--preset", "gpu-8x", "--dryrun"])
    assert plain.exit_code == 0 and "planned for SmolLM2, the preset's model" in plain.output
