"""The GRPO learner on a real (tiny, random) Hugging Face Llama, and one step on SmolLM2."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import math
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_envs.trainer.learner import (
    STAT_KEYS,
    GRPOConfig,
    GRPOConfigError,
    Learner,
    fit_to_length,
)
from spade_envs.trainer.samples import Sample

from ..model_support import SMOLLM2_MARKS, model_cache, torch_threads
from .ddp_worker import mixed_samples, tiny_llama

if os.environ.get("CI"):  # in CI a missing dependency fails
    torch = importlib.import_module("torch")
    importlib.import_module("transformers")
else:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")


def _snapshot(model) -> dict:
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def _plain_logprobs(model, sample: Sample) -> list[float]:
    """Completion log-probs from one unpadded forward over all positions."""
    ids = torch.tensor([sample.prompt_ids + sample.completion_ids])
    with torch.no_grad():
        logp = model(ids).logits[0].log_softmax(-1)
    start = len(sample.prompt_ids)
    return [logp[t - 1, ids[0, t]].item() for t in range(start, ids.shape[1])]


# ---------------------------------------------------------------- config, lengths


def test_config_rejects_bad_values():
    with pytest.raises(GRPOConfigError, match="learning_rate must be > 0.0, got 0"):
        GRPOConfig(learning_rate=0)
    with pytest.raises(GRPOConfigError, match=r"clip_low must be >= 0.0 and < 1.0, got 1.5"):
        GRPOConfig(clip_low=1.5)
    with pytest.raises(GRPOConfigError, match="micro_batch must be an int >= 1, got 0"):
        GRPOConfig(micro_batch=0)
    with pytest.raises(GRPOConfigError, match="lora_targets must be a tuple of layer names"):
        GRPOConfig(lora_targets="q_proj")
    with pytest.raises(GRPOConfigError, match="lora_targets must be a tuple of layer names"):
        GRPOConfig(lora_targets=5)
    with pytest.raises(GRPOConfigError, match="normalize must be one of.*Did you mean .std."):
        GRPOConfig(normalize="sdt")
    assert GRPOConfig(lora_targets=["q_proj"]).lora_targets == ("q_proj",)


def test_fit_to_length_by_hand():
    assert fit_to_length([1, 2, 3], [4, 5], 10) == ([1, 2, 3], [4, 5], False)
    assert fit_to_length([1, 2, 3], [4, 5], 4) == ([2, 3], [4, 5], True)
    assert fit_to_length([1, 2, 3], [4, 5, 6, 7], 3) == ([3], [4, 5], True)


@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=20),
    st.lists(st.integers(0, 9), min_size=1, max_size=20),
    st.integers(2, 30),
)
def test_fit_to_length_keeps_the_completion_and_the_end_of_the_prompt(prompt, completion, limit):
    kept_prompt, kept_completion, cut = fit_to_length(prompt, completion, limit)
    assert len(kept_prompt) + len(kept_completion) <= limit
    assert cut == (len(prompt) + len(completion) > limit)
    assert kept_prompt and kept_prompt == prompt[-len(kept_prompt) :]
    assert kept_completion == completion[: len(kept_completion)]
    if len(completion) < limit:
        assert kept_completion == completion


# ---------------------------------------------------------------------- learner


def test_one_step_changes_weights_and_reports_both_roles():
    model = tiny_llama(seed=1)
    before = _snapshot(model)
    learner = Learner(model, GRPOConfig(learning_rate=1e-3, micro_batch=2))
    samples = mixed_samples(5)
    stats = learner.step(samples)
    assert set(stats) == set(STAT_KEYS) and all(isinstance(v, float) for v in stats.values())
    agent = [s for s in samples if s.role == "agent"]
    designer = [s for s in samples if s.role == "designer"]
    assert stats["samples_agent"] == len(agent) and stats["samples_designer"] == len(designer)
    assert stats["tokens_agent"] == sum(len(s.completion_ids) for s in agent)
    assert stats["tokens_designer"] == sum(len(s.completion_ids) for s in designer)
    assert stats["optimizer_steps"] == 1.0 and stats["truncated"] == 0.0
    assert stats["ratio_mean"] == pytest.approx(1.0) and stats["clip_frac"] == 0.0
    assert stats["grad_norm"] > 0
    changed = [k for k, v in model.named_parameters() if not torch.equal(v, before[k])]
    assert len(changed) == len(before)


def test_loss_is_the_token_mean_of_minus_the_advantage_at_the_first_epoch():
    # Old log-probs computed by the learner: ratio 1, so loss = -sum(A * tokens) / tokens.
    learner = Learner(tiny_llama(), GRPOConfig())
    samples = [
        Sample("agent", [1, 2], [3, 4, 5], 1.0, "g"),
        Sample("agent", [1, 2], [6], 0.0, "g"),
        Sample("designer", [7], [8, 9], 0.5, "d"),
        Sample("designer", [7], [8], 0.5, "d"),
    ]
    stats = learner.step(samples)
    # Agent advantages +1, -1 (eps aside); designer group is constant: 0.
    assert stats["loss_agent"] == pytest.approx(-(3 - 1) / 4, rel=1e-4)
    assert stats["loss_designer"] == 0.0
    assert stats["loss"] == pytest.approx(-(3 - 1) / 7, rel=1e-4)
    assert stats["tokens_designer"] == 3.0  # zero-advantage tokens still count


def test_completion_logprobs_match_a_plain_forward_despite_padding_and_packing():
    model = tiny_llama(seed=2)
    learner = Learner(model, GRPOConfig(micro_batch=3))
    samples = mixed_samples(7, seed=3)
    packed = learner.completion_logprobs(samples)
    for sample, values in zip(samples, packed):
        assert values == pytest.approx(_plain_logprobs(model, sample), abs=1e-5)


def test_zero_advantages_give_zero_gradient_and_leave_weights_alone():
    model = tiny_llama(seed=3)
    before = _snapshot(model)
    learner = Learner(model, GRPOConfig(learning_rate=1e-2, micro_batch=2))
    flat = [
        Sample("agent", [1, 2, 3], [4, 5], 0.5, "g"),
        Sample("agent", [1, 3], [6], 0.5, "g"),
        Sample("designer", [9, 9], [7, 7, 7], 1.0, "solo"),
    ]
    stats = learner.step(flat)
    assert stats["tokens_agent"] == 3.0 and stats["tokens_designer"] == 3.0
    grads = learner.gradients()
    assert grads and all(torch.count_nonzero(g) == 0 for g in grads.values())
    assert stats["grad_norm"] == 0.0
    assert all(torch.equal(v, before[k]) for k, v in model.named_parameters())


def test_rows_of_zero_advantage_are_not_run_and_the_step_is_unchanged(monkeypatch):
    # A group of equal rewards teaches nothing: without KL its rows are skipped, and the
    # step (weights, loss, token counts, ratio) is what running them would have given.
    flat = [Sample("agent", [3, 1, 4, 1], [5, 9, 2], 0.5, "flat") for _ in range(3)]
    samples = mixed_samples(6, seed=7) + flat
    config = GRPOConfig(learning_rate=1e-2, micro_batch=2, max_grad_norm=0.0)

    class RunsEverything(Learner):
        def _rows_to_run(self, rows):
            return rows

    packed = []
    skipping = Learner(tiny_llama(seed=7), config)
    original = Learner._pack

    def recording(self, rows):
        packed.extend(rows)
        return original(self, rows)

    monkeypatch.setattr(Learner, "_pack", recording)
    skipped_stats = skipping.step(samples)
    ran = len(packed)
    packed.clear()
    everything = RunsEverything(tiny_llama(seed=7), config)
    full_stats = everything.step(samples)
    assert ran == len(samples) - len(flat) and len(packed) == len(samples)
    for key in ("loss", "loss_agent", "tokens_agent", "samples_agent", "ratio_mean"):
        assert skipped_stats[key] == pytest.approx(full_stats[key], abs=1e-6), key
    # The gradients agree (Adam's first step is about lr * sign(g), so weights would
    # magnify float noise in near-zero components; compare what the step computed).
    full = everything.gradients()
    for name, grad in skipping.gradients().items():
        assert torch.allclose(grad, full[name], rtol=1e-4, atol=1e-7), name
    # With a KL term every row runs (the KL of a zero-advantage row has a gradient).
    packed.clear()
    Learner(tiny_llama(seed=7), GRPOConfig(kl_coef=0.1)).step(samples)
    assert len(packed) == len(samples)


def test_prompt_and_padding_positions_get_no_gradient():
    model = tiny_llama(seed=4)
    learner = Learner(model, GRPOConfig(micro_batch=2))
    captured = []

    def keep_logits(_module, _inputs, output):
        if output.requires_grad:
            output.retain_grad()
            captured.append(output)

    model.lm_head.register_forward_hook(keep_logits)
    # One micro-batch; rows are packed longest first: a (8 tokens) then b (7 tokens).
    a = Sample("agent", [1, 2, 3], [4, 5, 6, 7, 8], 1.0, "g")
    b = Sample("agent", [9, 10, 11, 12, 13, 14], [15], 0.0, "g")
    learner.step([a, b])
    (logits,) = captured
    width = 8
    window = width - logits.shape[1]  # the first position whose logits were computed
    assert window <= 2  # position 2 predicts a's first completion token
    for row, sample in enumerate([a, b]):
        start, end = len(sample.prompt_ids), sample.length  # completion token positions
        for column in range(logits.shape[1]):
            position = window + column  # predicts the token at position + 1
            grad = logits.grad[row, column].abs().sum().item()
            if start <= position + 1 < end:
                assert grad > 0, (row, position)
            else:
                assert grad == 0.0, (row, position)  # prompt, last token or padding


def test_micro_batches_give_the_same_gradient_as_one_batch():
    samples = mixed_samples(9, seed=5)
    config = dict(max_grad_norm=0.0, kl_coef=0.1)
    grads, losses = [], []
    # Row counts, and a token budget (micro-batches of 1 to 4 rows here).
    for micro, budget in ((1, 0), (4, 0), (9, 0), (9, 24)):
        learner = Learner(
            tiny_llama(seed=5),
            GRPOConfig(micro_batch=micro, micro_batch_tokens=budget, **config),
        )
        losses.append(learner.step(samples)["loss"])
        grads.append(learner.gradients())
    for other in grads[1:]:
        for name, grad in grads[0].items():
            assert torch.allclose(grad, other[name], rtol=1e-4, atol=1e-7), name
    for loss in losses[1:]:
        assert loss == pytest.approx(losses[0], abs=1e-6)


@given(
    lengths=st.lists(st.integers(2, 40), min_size=0, max_size=30),
    micro_batch=st.integers(1, 8),
    budget=st.sampled_from([0, 1, 16, 50, 200]),
)
def test_micro_batches_keep_to_the_row_count_and_the_token_budget(lengths, micro_batch, budget):
    from spade_envs.trainer.batches import Row, group_rows

    rows = [Row(i, True, 1, [1] * n, 1.0, None) for i, n in enumerate(lengths)]
    groups = group_rows(rows, micro_batch, budget)
    assert sorted(r.index for g in groups for r in g) == list(range(len(rows)))
    for group in groups:
        width = max(len(r.tokens) for r in group)
        assert len(group[0].tokens) == width  # longest first: padding stays small
        assert len(group) <= micro_batch
        # Over the budget only as a row alone (a row is never split).
        assert not budget or len(group) * width <= budget or len(group) == 1
    # The budget binds no tighter than needed: a group closed early could not take the next.
    if budget:
        for this in groups[:-1]:
            if len(this) < micro_batch:
                assert (len(this) + 1) * len(this[0].tokens) > budget


def test_recorded_old_logprobs_are_used_and_clipped():
    model = tiny_llama(seed=6)
    learner = Learner(model, GRPOConfig(max_grad_norm=0.0))
    base = [Sample("agent", [1, 2], [3, 4], 1.0, "g"), Sample("agent", [1, 5], [6], 0.0, "g")]
    current = learner.completion_logprobs(base)
    # The behaviour policy gave these tokens e times less probability: ratio e > 1.28,
    # so the positive-advantage tokens sit on the clipped branch (no gradient from them).
    stale = [
        Sample(s.role, s.prompt_ids, s.completion_ids, s.reward, s.group, [v - 1 for v in lp])
        for s, lp in zip(base, current)
    ]
    stats = learner.step(stale)
    assert stats["ratio_mean"] == pytest.approx(2.718, rel=1e-3)
    assert stats["clip_frac"] == pytest.approx(2 / 3)


def test_truncation_keeps_the_completion_and_is_counted():
    model = tiny_llama(seed=7)
    learner = Learner(model, GRPOConfig(max_seq_len=6))
    long = Sample("agent", list(range(1, 9)), [20, 21, 22], 1.0, "g", old_logprobs=[-9.0] * 3)
    short = Sample("agent", [1, 2], [23], 0.0, "g")
    cut = Sample("agent", [6, 7, 8], [20, 21, 22], 1.0, "g")
    assert learner.completion_logprobs([long])[0] == pytest.approx(
        _plain_logprobs(model, cut), abs=1e-5
    )
    stats = learner.step([long, short])
    assert stats["truncated"] == 1.0 and stats["tokens_agent"] == 4.0
    # The cut sample's recorded log-probs (for the full prompt) were recomputed.
    assert stats["ratio_mean"] == pytest.approx(1.0)


# ------------------------------------------------------------------ temperature


def _tempered_logprobs(model, sample: Sample, temperature: float) -> list[float]:
    """``log_softmax(logits / T)`` at the completion tokens: one unpadded forward, by hand."""
    ids = torch.tensor([sample.prompt_ids + sample.completion_ids])
    with torch.no_grad():
        logits = model(ids).logits[0].float()
    logp = torch.log_softmax(logits / temperature, dim=-1)
    start = len(sample.prompt_ids)
    return [logp[t - 1, ids[0, t]].item() for t in range(start, ids.shape[1])]


def _at(sample: Sample, temperature: float, old_logprobs=None) -> Sample:
    return Sample(
        sample.role,
        sample.prompt_ids,
        sample.completion_ids,
        sample.reward,
        sample.group,
        old_logprobs,
        temperature=temperature,
    )


def test_completion_logprobs_are_log_softmax_of_logits_over_each_samples_temperature():
    model = tiny_llama(seed=12)
    learner = Learner(model, GRPOConfig(micro_batch=6))  # one micro-batch, mixed temperatures
    temperatures = [0.5, 1.0, 2.0, 0.5, 0.9, 1.0]
    samples = [_at(s, t) for s, t in zip(mixed_samples(6, seed=13), temperatures)]
    packed = learner.completion_logprobs(samples)
    for sample, values in zip(samples, packed):
        expected = _tempered_logprobs(model, sample, sample.temperature)
        assert values == pytest.approx(expected, abs=1e-5)
        if sample.temperature != 1.0:  # the check has teeth: T = 1 would not pass it
            assert values != pytest.approx(_plain_logprobs(model, sample), abs=1e-3)


def test_first_step_ratio_is_exactly_one_at_the_sampling_temperature(monkeypatch):
    # Policy == behaviour before the first update. The T != 1 samples bring the log-probs a
    # backend records (temperature 1): those are not their behaviour log-probs, so the
    # learner computes the behaviour log-probs itself, under T, and the ratio is exactly 1.
    # The T = 1 sample's recorded values are used as given (1 nat stale here: ratio e).
    from spade_envs.trainer import learner as learner_module

    model = tiny_llama(seed=14)
    learner = Learner(model, GRPOConfig(micro_batch=5, max_grad_norm=0.0))
    # Rewards that leave no row at advantage 0 (such a row would be skipped, not run).
    temperatures = [0.5, 0.7, 1.0, 2.0, 1.5]
    rewards = [0.0, 1.0, 3.0, 0.5, 2.0]
    samples = [
        _at(
            dataclasses.replace(s, reward=r),
            t,
            [v - 1.0 if t == 1.0 else v for v in _plain_logprobs(model, s)],
        )
        for s, t, r in zip(mixed_samples(5, seed=15), temperatures, rewards)
    ]
    expected = [_tempered_logprobs(model, s, s.temperature) for s in samples]
    seen = []
    real = learner_module.token_policy_loss

    def spy(logprobs, old_logprobs, advantages, **kw):
        out = real(logprobs, old_logprobs, advantages, **kw)
        seen.append((logprobs.detach().clone(), old_logprobs.clone(), out[3].clone()))
        return out

    monkeypatch.setattr(learner_module, "token_policy_loss", spy)
    learner.step(samples)
    ((logp, old, ratio),) = seen  # one micro-batch, one epoch
    rows = learner._rows_to_run(learner._rows(learner._advantages(samples))[0])
    assert len(rows) == len(samples)
    (batch,) = learner._pack(rows)  # the step's packing
    for i, (row, (lo, hi)) in enumerate(zip(batch.rows, batch.spans)):
        sample, want = samples[row.index], expected[row.index]
        assert logp[i, lo:hi].tolist() == pytest.approx(want, abs=1e-5)
        if sample.temperature == 1.0:
            assert old[i, lo:hi].tolist() == pytest.approx(sample.old_logprobs, abs=1e-6)
            assert ratio[i, lo:hi].tolist() == pytest.approx([math.e] * (hi - lo), rel=1e-5)
        else:
            assert old[i, lo:hi].tolist() == pytest.approx(want, abs=1e-5)
            assert ratio[i, lo:hi].tolist() == [1.0] * (hi - lo)


def test_kl_reference_log_probs_are_taken_at_the_sampling_temperature():
    # The reference is the model as the learner was built; the policy then moves. The
    # step's k3 KL (first epoch, before the update) must be that of the two tempered
    # distributions at the completion tokens.
    model = tiny_llama(seed=18)
    reference = copy.deepcopy(model)
    learner = Learner(model, GRPOConfig(kl_coef=0.1, micro_batch=2))
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.05 * torch.randn_like(param))
    samples = [_at(s, t) for s, t in zip(mixed_samples(4, seed=19), [0.5, 2.0, 0.5, 0.8])]
    total, tokens = 0.0, 0
    for sample in samples:
        policy = torch.tensor(_tempered_logprobs(model, sample, sample.temperature))
        ref = torch.tensor(_tempered_logprobs(reference, sample, sample.temperature))
        total += float((torch.exp(ref - policy) - (ref - policy) - 1).sum())
        tokens += len(sample.completion_ids)
    stats = learner.step(samples)
    assert stats["kl"] > 0
    assert stats["kl"] == pytest.approx(total / tokens, rel=1e-4)


def test_kl_to_the_reference_grows_as_the_model_moves():
    model = tiny_llama(seed=8)
    reference = copy.deepcopy(model)
    learner = Learner(model, GRPOConfig(learning_rate=3e-2, kl_coef=0.5, epochs=2))
    samples = mixed_samples(5)
    first = learner.step(samples)
    assert first["optimizer_steps"] == 2.0
    assert first["kl"] > 0  # the second epoch already sees moved weights
    second = learner.step(samples)
    assert second["kl"] > first["kl"]
    # The reference is a frozen copy of the starting weights.
    for name, param in learner._reference.named_parameters():
        assert torch.equal(param, dict(reference.named_parameters())[name])


def test_empty_batch_changes_nothing():
    model = tiny_llama(seed=9)
    before = _snapshot(model)
    stats = Learner(model, GRPOConfig()).step([])
    assert stats["optimizer_steps"] == 0.0 and stats["loss"] == 0.0
    assert all(torch.equal(v, before[k]) for k, v in model.named_parameters())


def test_same_seed_same_model_same_samples_same_weights():
    results = []
    for _ in range(2):
        model = tiny_llama(seed=10)
        learner = Learner(model, GRPOConfig(learning_rate=1e-2, lora_rank=2), seed=3)
        learner.step(mixed_samples(5))
        results.append(_snapshot(model))
    assert all(torch.equal(results[0][k], results[1][k]) for k in results[0])


@pytest.mark.parametrize("lora_rank", [0, 2])
def test_state_dict_round_trip_gives_an_identical_next_step(lora_rank):
    config = GRPOConfig(learning_rate=1e-2, lora_rank=lora_rank, micro_batch=2)
    first, second = mixed_samples(5, seed=11), mixed_samples(5, seed=12)
    learner = Learner(tiny_llama(seed=11), config, seed=1)
    learner.step(first)
    state = learner.state_dict()
    learner.step(second)
    expected = _snapshot(learner.model)

    resumed = Learner(tiny_llama(seed=11), config, seed=99)  # another LoRA init: overwritten
    resumed.load_state_dict(state)
    assert resumed.steps == 1
    resumed.step(second)
    got = _snapshot(resumed.model)
    assert got.keys() == expected.keys()
    assert all(torch.equal(got[k], expected[k]) for k in expected)
    if lora_rank:
        assert all(".lora_A." in k or ".lora_B." in k for k in state["model"])


def test_load_state_dict_refuses_another_lora_setting():
    state = Learner(tiny_llama(), GRPOConfig(lora_rank=2)).state_dict()
    with pytest.raises(GRPOConfigError, match="saved with lora_rank=2, this learner has"):
        Learner(tiny_llama(), GRPOConfig()).load_state_dict(state)
    with pytest.raises(GRPOConfigError, match=r"lacks \['optimizer'"):
        Learner(tiny_llama(), GRPOConfig()).load_state_dict({"lora_rank": 0, "model": {}})


# --------------------------------------------------------------------- SmolLM2


def _smollm2(test):
    for mark in SMOLLM2_MARKS:
        test = mark(test)
    return test


@_smollm2
def test_smollm2_step_on_agent_and_designer_samples():
    from spade_envs.agent.episode import Episode
    from spade_envs.agent.policy import Turn
    from spade_envs.generator.pipeline import Attempt
    from spade_envs.llm import SamplingParams, load_model
    from spade_envs.trainer.samples import agent_samples, designer_samples

    with torch_threads(2):
        chat = load_model("smollm2", cache_dir=model_cache(), batch_size=2)
        try:
            tok = chat.tokenizer
            # Two real sampled replies (temperature 1): their recorded log-probs are the
            # behaviour log-probs the learner must reproduce.
            question = [{"role": "user", "content": "What is 2+2? Answer as \\boxed{n}."}]
            params = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=4, seed=3)
            replies = chat.generate([question, question], params)
            episodes = [
                Episode(
                    "spade/Add-v1", i, 1, False, "", "", "text", "", "smollm2",
                    episode_return=float(i), turns=[Turn(
                        0, "", r.text, "ok", prompt_token_ids=list(r.prompt_token_ids),
                        token_ids=list(r.token_ids), logprobs=list(r.logprobs),
                    )],
                )
                for i, r in enumerate(replies)
            ]  # fmt: skip
            attempts = [
                Attempt(i, "new", "math", document_id=1, reply=code,
                        messages=[{"role": "user", "content": "Write a tiny env."}])
                for i, code in enumerate(["class A: pass", "def f(): return 1"])
            ]  # fmt: skip
            samples = agent_samples(episodes) + designer_samples(
                attempts,
                [0.8, 0.1],
                chat.encode,
                lambda text: tok(text, add_special_tokens=False)["input_ids"],
            )
            assert [s.role for s in samples] == ["agent", "agent", "designer", "designer"]
            assert samples[0].old_logprobs is not None

            model = chat.model
            watched = {
                name: p.detach().clone()
                for name, p in model.named_parameters()
                if name.endswith(("layers.0.self_attn.q_proj.weight", "embed_tokens.weight"))
            }
            config = GRPOConfig(learning_rate=1e-5, micro_batch=2)
            learner = Learner(model, config, pad_token_id=tok.pad_token_id or 0)
            recomputed = learner.completion_logprobs(samples[:2])
            for sample, values in zip(samples, recomputed):
                assert values == pytest.approx(sample.old_logprobs, abs=1e-3)
            stats = learner.step(samples)
            assert stats["tokens_agent"] == sum(len(r.token_ids) for r in replies)
            assert stats["tokens_designer"] > 0 and stats["samples_designer"] == 2
            assert stats["loss_agent"] != 0.0 and stats["loss_designer"] != 0.0
            assert stats["ratio_mean"] == pytest.approx(1.0, abs=1e-3)
            assert stats["grad_norm"] > 0
            for name, before in watched.items():
                assert not torch.equal(dict(model.named_parameters())[name], before), name
            # Generation keeps working on the updated weights, in place.
            again = chat.generate([question], params)
            assert again[0].token_ids and again[0].finish_reason != "error"
        finally:
            chat.close()
