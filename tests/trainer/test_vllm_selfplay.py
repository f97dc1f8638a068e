"""The ``cpu-vllm`` preset end to end (from .venv-vllm): the gpu-8x code path on the CPU.

Generation runs in a real vLLM engine, every weight trains, and the engine reloads them
after every update; two iterations of the real SmolLM2 self-play loop (smaller ones).
"""

from __future__ import annotations

from spade_envs.llm import SamplingParams, VLLMChatModel
from spade_envs.trainer.checkpoint import list_checkpoints
from spade_envs.trainer.config_io import load_config
from spade_envs.trainer.loop import SelfPlayTrainer
from spade_envs.trainer.metrics import METRIC_FIELDS, read_metrics

from ..model_support import model_cache
from ..vllm_support import VLLM_MARKS

pytestmark = VLLM_MARKS

# Fewer designer attempts and shorter evaluations; the plays stay as the preset has them
# (with one turn and one pool environment every group's rewards came out equal, the update
# had nothing to learn from, and the weights did not move).
SMALLER = ["designer.envs_per_document=2", "eval.max_turns=1"]


class _Recorder:
    """Wraps the generating model; remembers what it was (the test checks it is vLLM).

    Only ``generate``: the designer's per-conversation schemas reach it through
    ``TimedModel``'s fallback, as they would through any user's instrumentation.
    """

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    def generate(self, conversations, params=None):
        self.calls += 1
        return self.inner.generate(conversations, params)

    def close(self):
        self.inner.close()


def test_two_iterations_generate_in_vllm_and_sync_weights_after_each_update(tmp_path, monkeypatch):
    import torch

    monkeypatch.setenv("SPADE_MODEL_CACHE", str(model_cache()))
    monkeypatch.delenv("SPADE_REGISTRY_URL", raising=False)
    monkeypatch.delenv("SPADE_CHECKPOINT_DIR", raising=False)
    run = tmp_path / "run"
    # The preset with less of its designer's and evaluation's work (its iterations took
    # 109 s and 51 s): every part still runs, and twice.
    config = load_config("cpu-vllm", SMALLER)
    assert config.model.backend == "vllm" and config.grpo.lora_rank == 0
    wrapped: list[_Recorder] = []

    def wrap(model):
        wrapped.append(_Recorder(model))
        return wrapped[0]

    trainer = SelfPlayTrainer(config, run, wrap_generator=wrap)
    trainer.setup()
    try:
        engine = wrapped[0].inner
        assert isinstance(engine, VLLMChatModel)
        before = {k: v.clone() for k, v in trainer.parts.learner.model.state_dict().items()}
        records = [trainer.iteration(k) for k in (1, 2)]
        assert wrapped[0].calls > 0

        # The update moved the weights, and the engine generates with the moved ones.
        after = trainer.parts.learner.model.state_dict()
        assert any(not torch.equal(before[k], after[k]) for k in before)
        greedy = SamplingParams(temperature=0.0, max_tokens=12)
        prompts = [[{"role": "user", "content": q}] for q in ("What is 2+3?", "Say hi.")]
        served = [c.token_ids for c in engine.generate(prompts, greedy)]
        trained = [c.token_ids for c in trainer.parts.trainer_model.generate(prompts, greedy)]
        assert served == trained
    finally:
        trainer.close()

    assert [r["iteration"] for r in records] == [1, 2]
    for record in records:
        assert set(METRIC_FIELDS) <= set(record)
        assert record["tokens_agent"] > 0 and record["plays"] > 0
        assert record["weight_syncs"] == 1 and record["seconds_weight_sync"] > 0
        assert record["designer_requested"] == 2 and record.get("reject_model_error", 0) == 0
        assert record["failed_model_error"] == 0
    assert read_metrics(run) == records
    assert [i for i, _ in list_checkpoints(run / "checkpoints")] == [2]
