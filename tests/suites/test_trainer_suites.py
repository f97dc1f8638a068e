"""The fixed-pool baseline over an imported suite and eval.suites during training, with
the tiny random Llama of the trainer tests and a copy of the shared suite import."""

from __future__ import annotations

import shutil

import pytest

from spade_envs.trainer.config_io import load_config
from spade_envs.trainer.loop import SelfPlayTrainer
from spade_envs.trainer.report import draw_report

from ..model_support import torch_threads
from ..trainer.trainer_support import RESUME_SETTINGS, save_tiny_llama


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return save_tiny_llama(tmp_path_factory.mktemp("tiny-llama") / "model")


def test_fixed_pool_over_rlve_with_rg_hard_evaluated_each_iteration(imported, tiny_model, tmp_path):
    url, _ = imported
    registry_file = tmp_path / "registry.db"
    shutil.copy(url[len("sqlite:///") :], registry_file)
    config = load_config(
        "cpu-test",
        [
            f"model.spec={tiny_model}",
            *RESUME_SETTINGS,
            "iterations=1",
            "mode=fixed-pool",
            "agent.fixed_pool=suite:rlve",
            "agent.pool_envs=0",
            "eval.every=1",
            "eval.plays=1",
            "eval.suites=rg-hard",
            f"registry_url=sqlite:///{registry_file}",
        ],
    )
    with torch_threads(1):
        trainer = SelfPlayTrainer(config, tmp_path / "run")
        [record] = trainer.run()
    # Only the validated RLVE task: Knapsack is unproven and stays out of training.
    assert trainer.parts.fixed_pool == ["spade/RlveCRTL0-v1"]
    # Suite tasks have no hint: only the unhinted plays are played, none fails.
    assert record["plays"] == 2 and record["plays_failed"] == 0
    assert record["tokens_agent"] > 0
    categories = ("math", "algorithmic", "cognition", "overall")
    fields = {k: v for k, v in record.items() if k.startswith("suite_rg-hard_")}
    assert set(fields) == {
        f"suite_rg-hard_{c}_{what}" for c in categories for what in ("win_rate", "wins", "plays")
    }
    for c in categories:  # the counts behind each rate (for its interval)
        wins, plays = fields[f"suite_rg-hard_{c}_wins"], fields[f"suite_rg-hard_{c}_plays"]
        rate = fields[f"suite_rg-hard_{c}_win_rate"]
        assert 0 <= wins <= plays and (rate == wins / plays if plays else rate is None)
    assert fields["suite_rg-hard_overall_plays"] == sum(
        fields[f"suite_rg-hard_{c}_plays"] for c in categories[:-1]
    )
    plots = {p.name for p in draw_report(tmp_path / "run")}
    assert "suites.png" in plots


def test_a_suite_pool_that_was_never_imported_stops_before_the_models_load(tmp_path):
    config = load_config(
        "cpu-test",
        [
            "model.spec=/nonexistent/model",
            "mode=fixed-pool",
            "agent.fixed_pool=suite:rlve:3",
            f"registry_url=sqlite:///{tmp_path / 'empty.db'}",
        ],
    )
    from spade_envs.error import SpadeError

    with pytest.raises(SpadeError, match=r"spade-envs import --suite rlve --levels 3"):
        SelfPlayTrainer(config, tmp_path / "run").run()


def test_a_self_play_pool_never_draws_what_eval_suites_evaluates(imported, tmp_path):
    import random

    from spade_envs.registry import Registry
    from spade_envs.suites.evaluation import eval_set
    from spade_envs.trainer.setup import envs_to_play

    url, _ = imported
    registry_file = tmp_path / "registry.db"
    shutil.copy(url[len("sqlite:///") :], registry_file)
    registry = Registry(f"sqlite:///{registry_file}")
    registry.register_seeds()
    try:
        held = {t.env_id for t in eval_set("rg-hard", registry).tasks}
        seeds = {t.env_id for t in eval_set("seeds", registry).tasks}  # bare names
        suite_ids = {r.id for r in registry.list(suite="reasoning-gym", limit=1000)}
        assert held and held < suite_ids  # level-0 tasks stay trainable
        settings = ["agent.pool_envs=1000", "agent.pool_kinds=text,tool"]
        drawn = {
            name: set(
                envs_to_play(
                    load_config("cpu-test", [*settings, *extra]), registry, [], [], random.Random(0)
                )
            )
            for name, extra in (
                ("plain", []),
                ("held", ["eval.suites=rg-hard"]),
                ("seeds", ["eval.suites=seeds"]),
            )
        }
        names = {i: registry.get(i).name for i in drawn["plain"]}
    finally:
        registry.close()
    assert held & drawn["plain"]  # without eval.suites the validated ones are pool versions
    assert not held & drawn["held"]
    assert drawn["held"] == drawn["plain"] - held
    # The seeds set holds out every seed by name (and so its versions and children).
    assert any(n in seeds for n in names.values())
    assert drawn["seeds"] == {i for i in drawn["plain"] if names[i] not in seeds}
