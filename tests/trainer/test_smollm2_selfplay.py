"""Two self-play iterations of the real SmolLM2-135M on the CPU (slow).

The designer's first reply in each group is a scripted valid environment
(:class:`ScriptedDesigner`), so each designer group has one registered environment and one
failed attempt: their rewards differ and the update must move the weights. Everything
else (generation, sandboxed plays, regret, the GRPO step on both roles, checkpoints,
metrics, registry) is the real thing.
"""

from __future__ import annotations

from spade_envs.registry import Registry
from spade_envs.trainer.checkpoint import list_checkpoints
from spade_envs.trainer.config_io import load_config
from spade_envs.trainer.loop import SelfPlayTrainer
from spade_envs.trainer.metrics import METRIC_FIELDS, read_metrics

from ..model_support import SMOLLM2_MARKS, model_cache, torch_threads
from .trainer_support import ScriptedDesigner

pytestmark = SMOLLM2_MARKS


def test_two_iterations_train_both_roles_and_leave_a_complete_run(tmp_path, monkeypatch):
    import torch

    from spade_envs.trainer.adapters import adapters_disabled

    monkeypatch.setenv("SPADE_MODEL_CACHE", str(model_cache()))
    monkeypatch.delenv("SPADE_REGISTRY_URL", raising=False)
    monkeypatch.delenv("SPADE_CHECKPOINT_DIR", raising=False)
    run = tmp_path / "run"
    config = load_config("cpu-test", ["iterations=2"])
    with torch_threads(1):
        trainer = SelfPlayTrainer(config, run, wrap_generator=ScriptedDesigner)
        records = trainer.run()

    assert [r["iteration"] for r in records] == [1, 2]
    for record in records:
        assert set(METRIC_FIELDS) <= set(record)
        assert record["tokens_agent"] > 0 and record["tokens_designer"] > 0
        assert record["designer_registered"] >= 1 and record["plays"] > 0
    assert read_metrics(run) == records
    assert list((run / "tensorboard").glob("events.out.tfevents.*"))
    assert [i for i, _ in list_checkpoints(run / "checkpoints")] == [1, 2]

    # The weights changed: the adapters left zero, and the model's outputs moved.
    learner = trainer.parts.learner
    model = learner.model
    trained_b = [p for n, p in model.named_parameters() if ".lora_B." in n]
    assert learner.lora_layers and any(bool(p.abs().sum() > 0) for p in trained_b)
    ids = torch.tensor([trainer.parts.trainer_model.encode([{"role": "user", "content": "2+3?"}])])
    with torch.no_grad():
        trained = model(ids).logits
        with adapters_disabled(learner.adapters):
            base = model(ids).logits
    assert not torch.allclose(trained, base)

    # The last checkpoint's adapter, in peft's format, rebuilds the trained model.
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    fresh = AutoModelForCausalLM.from_pretrained(trainer.parts.trainer_model.model_dir)
    adapted = PeftModel.from_pretrained(fresh, str(run / "checkpoints" / "iter-0002" / "adapter"))
    with torch.no_grad():
        assert torch.allclose(adapted(ids).logits, trained, atol=1e-4)

    # The registry opens, with the designer's environments and the run's play statistics.
    registry = Registry(f"sqlite:///{run / 'registry.db'}")
    designed = registry.list(origin="designer")
    assert len(designed) >= 2
    assert registry.play_stats(designed[0].id)
    registry.close()
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{run / 'registry.db'}")
    import gymnasium as gym

    env = gym.make(designed[0].id)  # designer code: in the sandbox, never in-process
    observation, _ = env.reset(seed=0)
    assert "sum of two whole numbers" in observation
    env.close()
