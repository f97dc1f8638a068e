"""The cold start on a tiny random Llama: transcripts of reference solutions played through
the rollout engine (sandboxed), likelihood steps, resumable checkpoints, clear refusals."""

from __future__ import annotations

import importlib
import os

import pytest

from spade_envs.llm.base import SamplingParams
from spade_envs.trainer import SelfPlayTrainer
from spade_envs.trainer.coldstart import (
    ColdStartError,
    ScriptedModel,
    cold_start_envs,
    end_of_turn,
    reference_plays,
    run_cold_start,
)
from spade_envs.trainer.config import ConfigError
from spade_envs.trainer.config_io import load_config
from spade_envs.trainer.learner import GRPOConfig, Learner
from spade_envs.trainer.metrics import read_metrics
from spade_envs.trainer.samples import Sample

from ..model_support import torch_threads
from .ddp_worker import tiny_llama
from .trainer_support import save_tiny_llama

for _name in ("torch", "transformers"):
    if os.environ.get("CI"):  # in CI a missing dependency fails
        importlib.import_module(_name)
    else:
        pytest.importorskip(_name)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return save_tiny_llama(tmp_path_factory.mktemp("tiny") / "model")


def _config(model, *overrides: str):
    return load_config(
        "cpu-test",
        [
            f"model.spec={model}",
            "iterations=1",
            "grpo.max_seq_len=512",
            "cold_start.steps=2",
            "cold_start.seeds=2",
            "cold_start.batch_size=4",
            "cold_start.every=1",
            "cold_start.envs=Mastermind@0,CounterfeitCoin@0,PatternOracle",
            "eval.envs=NumberGuess@0",
            *overrides,
        ],
    )


def test_a_scripted_model_answers_by_the_turns_sampling_seed():
    model = ScriptedModel({7: "\\boxed{4}"}, lambda c: [1, 2], lambda t: [ord(c) for c in t], [9])
    params = SamplingParams(seed=7)
    ok, missing = model.generate([[{"role": "user", "content": "x"}]] * 2, params)
    assert ok.text == "\\boxed{4}" and ok.prompt_token_ids == (1, 2)
    assert ok.token_ids == (*[ord(c) for c in "\\boxed{4}"], 9)
    assert not missing.ok and "no scripted action" in missing.error  # seed 8


def test_likelihood_steps_lower_the_loss_and_match_a_plain_forward():
    torch = importlib.import_module("torch")
    model = tiny_llama(seed=3)
    learner = Learner(model, GRPOConfig(learning_rate=1e-2, micro_batch=2, lora_rank=0))
    samples = [
        Sample("agent", [5, 6, 7], [8, 9, 10], 0.0, "sft"),
        Sample("agent", [5], [11], 0.0, "sft"),
    ]
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    with torch.no_grad():
        logp = model(ids).logits[0].log_softmax(-1)
        first = -sum(logp[t - 1, ids[0, t]].item() for t in (3, 4, 5))
        logp = model(torch.tensor([[5, 11]])).logits[0].log_softmax(-1)
        first -= logp[0, 11].item()
    losses = [learner.likelihood_step(samples, learning_rate=1e-2)["loss"] for _ in range(8)]
    assert losses[0] == pytest.approx(first / 4, rel=1e-4)  # the token mean, before the step
    assert losses[-1] < losses[0] * 0.8
    assert learner.steps == 8
    assert learner.optimizer.param_groups[0]["lr"] == pytest.approx(1e-2)


def test_the_cold_start_learns_winning_transcripts_and_resumes(tiny_model, tmp_path):
    run = tmp_path / "run"
    lines: list[str] = []
    with torch_threads(1):
        trainer = SelfPlayTrainer(_config(tiny_model, "cold_start.steps=1"), run)
        trainer.setup()
        try:
            report = run_cold_start(trainer.config, trainer.parts, log=lines.append)
            tokenizer = trainer.parts.trainer_model.tokenizer
            assert end_of_turn(trainer.parts.trainer_model) == tokenizer.eos_token_id
        finally:
            trainer.close()
    assert report.steps == 1 and report.transcripts == 6  # 3 envs x 2 seeds, all won
    assert report.samples > report.transcripts and not report.skipped
    assert report.first_loss is not None and report.first_loss > 0
    assert (run / "checkpoints" / "cold-start").is_dir()
    assert any("cold start: step 1/1" in line for line in lines)
    # The same run asked for 3 steps resumes after the first.
    with torch_threads(1):
        trainer = SelfPlayTrainer(_config(tiny_model, "cold_start.steps=3"), run)
        trainer.setup()
        try:
            resumed = run_cold_start(trainer.config, trainer.parts)
            assert trainer.parts.learner.steps == 3
        finally:
            trainer.close()
    assert resumed.steps == 2


def test_a_run_with_a_cold_start_evaluates_before_and_after_it(tiny_model, tmp_path):
    config = _config(tiny_model, "eval.before_training=true", "eval.max_turns=0")
    with torch_threads(1):
        SelfPlayTrainer(config, tmp_path / "run").run()
    records = read_metrics(tmp_path / "run" / "metrics.jsonl")
    assert [(r["iteration"], r.get("stage")) for r in records] == [
        (0, "untrained"),
        (0, "cold_start"),
        (1, None),
    ]
    cold = records[1]
    assert cold["cold_start_steps"] == 2 and cold["cold_start_transcripts"] == 6
    # Every evaluation says how the reference solution does on the same instances.
    assert all(r["eval_ceiling"] == 1.0 for r in records)
    [env_id] = [
        k[len("eval_env_") : -len("_plays")]
        for k in cold
        if k.startswith("eval_env_") and k.endswith("_plays")
    ]
    assert env_id.startswith("spade/NumberGuessX") and cold[f"eval_env_{env_id}_plays"] == 1
    assert "agent_groups_unequal" in records[2]


def test_the_ceiling_asks_for_solutions_only_at_the_seeds_it_plays(
    tiny_model, tmp_path, monkeypatch
):
    """The evaluation's seeds start at 100,000 (eval.env_seed): once, every seed below them
    was asked for a solution too (100,001 sandboxed resets, most of a short run's time)."""
    import spade_envs.runtime
    from spade_envs.agent import RolloutConfig, resolve_envs
    from spade_envs.llm import load_model
    from spade_envs.registry import Registry

    asked: list[int] = []
    open_record = spade_envs.runtime.open_record

    def counting_open(*args, **kwargs):
        env = open_record(*args, **kwargs)
        reset = env.reset

        def counting_reset(*reset_args, **reset_kwargs):
            asked.append(reset_kwargs.get("seed"))
            return reset(*reset_args, **reset_kwargs)

        env.reset = counting_reset
        return env

    monkeypatch.setattr(spade_envs.runtime, "open_record", counting_open)
    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    try:
        targets = resolve_envs(["NumberGuess"], registry)
        config = RolloutConfig(isolation="none", max_tokens=8)
        with load_model(str(tiny_model)) as model:
            played = reference_plays(model, targets, [100_000, 100_001], config)
    finally:
        registry.close()
    assert [e.env_seed for e in played] == [100_000, 100_001] and all(e.won for e in played)
    assert sorted(asked) == [100_000, 100_001]  # the solutions' resets, nothing else


def test_no_solvable_environment_stops_with_each_reason(tiny_model, tmp_path):
    config = _config(tiny_model, "cold_start.envs=Nim")
    with torch_threads(1):
        trainer = SelfPlayTrainer(config, tmp_path / "run")
        trainer.setup()
        try:
            with pytest.raises(ColdStartError, match=r"spade/Nim-v1: a game.*cold_start.envs"):
                run_cold_start(trainer.config, trainer.parts)
        finally:
            trainer.close()


def test_held_out_environments_never_enter_the_cold_start(tiny_model):
    config = _config(tiny_model, "cold_start.envs=", "eval.envs=NumberGuess@0,SequenceRule")
    envs = cold_start_envs(config)
    assert not any(e.partition("@")[0] in {"NumberGuess", "SequenceRule"} for e in envs)
    assert "CounterfeitCoin" in envs and "CounterfeitCoin@0" in envs  # rungs beside seeds
    with pytest.raises(ConfigError, match=r"cold_start.envs contains evaluation environments"):
        _config(tiny_model, "cold_start.envs=NumberGuess@1", "eval.envs=NumberGuess")


def test_the_format_bonus_anneals_to_zero():
    agent = load_config("cpu-tiny", ["agent.format_bonus_iterations=3"]).agent
    assert [agent.bonus_at(k) for k in (1, 2, 3, 4, 9)] == pytest.approx(
        [0.1, 0.1 * 2 / 3, 0.1 / 3, 0, 0]
    )
    assert load_config("cpu-test", ["agent.format_bonus=0.2"]).agent.bonus_at(50) == 0.2


def test_a_transcript_is_one_sample_with_the_loss_on_its_replies_only():
    from types import SimpleNamespace

    from spade_envs.trainer.coldstart import transcript_sample

    def turn(prompt, reply):
        return SimpleNamespace(prompt_token_ids=prompt, token_ids=reply)

    # Turn 2's prompt is turn 1's prompt + reply + the environment's answer (7, 8).
    episode = SimpleNamespace(turns=[turn([1, 2], [3, 4]), turn([1, 2, 3, 4, 7, 8], [5])])
    sample = transcript_sample(episode)
    assert sample.prompt_ids == [1, 2] and sample.completion_ids == [3, 4, 7, 8, 5]
    assert sample.loss_mask == [1, 1, 0, 0, 1]
    # A template that re-encodes turn 1 differently: only the last reply is learned.
    episode.turns[1] = turn([1, 2, 9, 4, 7, 8], [5])
    sample = transcript_sample(episode)
    assert sample.completion_ids == [5] and sample.loss_mask == [1]
    with pytest.raises(Exception, match="loss_mask needs one 0 or 1 per completion token"):
        Sample("agent", [1], [2, 3], 0.0, "g", loss_mask=[1])


def test_the_likelihood_is_taken_over_the_masked_tokens_only():
    torch = importlib.import_module("torch")
    model = tiny_llama(seed=4)
    learner = Learner(model, GRPOConfig(learning_rate=1e-2, lora_rank=0))
    masked = Sample("agent", [5, 6], [8, 9, 10], 0.0, "sft", loss_mask=[1, 0, 1])
    ids = torch.tensor([[5, 6, 8, 9, 10]])
    with torch.no_grad():
        logp = model(ids).logits[0].log_softmax(-1)
    expected = -(logp[1, 8].item() + logp[3, 10].item()) / 2
    stats = learner.likelihood_step([masked])
    assert stats["tokens"] == 2 and stats["loss"] == pytest.approx(expected, rel=1e-4)
