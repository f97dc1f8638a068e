"""The self-play loop on a tiny random Llama: exact resume after a SIGKILL, resume modes,
fixed-pool mode, delayed designer updates, two torchrun ranks, the run view, and the
designer's reward ladder.

The runs use the cpu-test preset with the tiny model and a designer that answers the first
prompt of each group with a valid environment (:class:`ScriptedDesigner`), so environments
are registered, played and rewarded as with a capable model; everything else is the real
loop, sandbox and registry.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from spade_envs.generator import Attempt, AttemptStage, DesignerFailure
from spade_envs.llm.base import ChatModel, Completion
from spade_envs.registry import Registry
from spade_envs.trainer.checkpoint import list_checkpoints, load_checkpoint
from spade_envs.trainer.config import RewardSettings
from spade_envs.trainer.config_io import load_config
from spade_envs.trainer.loop import (
    IterationFailedError,
    SelfPlayTrainer,
    TrainerError,
    designer_reward,
)
from spade_envs.trainer.metrics import TIMING_FIELDS, read_metrics
from spade_envs.trainer.setup import RunComponents
from spade_envs.trainer.view import RunView, iteration_tag

from ..model_support import torch_threads
from .trainer_support import RESUME_SETTINGS, ScriptedDesigner, save_tiny_llama, scripted_source

for _name in ("torch", "transformers"):
    if os.environ.get("CI"):  # in CI a missing dependency fails
        importlib.import_module(_name)
    else:
        pytest.importorskip(_name)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return save_tiny_llama(tmp_path_factory.mktemp("tiny") / "model")


def _env() -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for name in ("SPADE_REGISTRY_URL", "SPADE_CHECKPOINT_DIR"):
        env.pop(name, None)
    return env


def _worker(model: Path, run: Path, *overrides: str, kill_at: str | None = None):
    command = [sys.executable, "-m", "tests.trainer.trainer_support", str(model), str(run)]
    if kill_at:
        command.append(f"--kill-at={kill_at}")  # SIGKILL right after that stage
    return subprocess.run(
        [*command, *overrides],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _ok(done) -> str:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _config(model: Path, *overrides: str):
    return load_config("cpu-test", [f"model.spec={model}", *RESUME_SETTINGS, *overrides])


def _comparable(run: Path) -> list[dict]:
    return [
        {k: v for k, v in record.items() if k not in TIMING_FIELDS} for record in read_metrics(run)
    ]


def _designed(run: Path) -> list[tuple[str, str]]:
    """(environment, iteration that registered it) for every designer environment."""
    registry = Registry(f"sqlite:///{run / 'registry.db'}")
    try:
        records = registry.list(origin="designer", sort="name", limit=1000)
        return [(r.id, r.extra["designer_run"].rsplit("-iter", 1)[1]) for r in records]
    finally:
        registry.close()


@pytest.fixture(scope="module")
def finished_run(tiny_model, tmp_path_factory):
    """Two iterations, uninterrupted."""
    run = tmp_path_factory.mktemp("uninterrupted") / "run"
    _ok(_worker(tiny_model, run))
    return run


# ----------------------------------------------------------------------- exact resume


def test_a_run_killed_mid_iteration_resumes_to_the_same_state(tiny_model, finished_run, tmp_path):
    reference = read_metrics(finished_run)
    # The scenario needs an environment registered in iteration 2 (see RunView).
    assert [r["designer_registered"] for r in reference] == [1, 1]
    run = tmp_path / "run"
    killed = _worker(tiny_model, run, kill_at="2:metrics")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    # Killed after iteration 2 registered its environment, recorded play statistics and
    # wrote its metrics line, before the checkpoint.
    assert [i for i, _ in list_checkpoints(run / "checkpoints")] == [1]
    assert len(read_metrics(run)) == 2
    out = _ok(_worker(tiny_model, run))
    assert "iterations 2..2 from" in out and "iter-0001" in out
    assert _comparable(run) == _comparable(finished_run)
    assert _designed(run) == _designed(finished_run)
    import torch

    ours = load_checkpoint(run / "checkpoints" / "iter-0002").learner
    theirs = load_checkpoint(finished_run / "checkpoints" / "iter-0002").learner
    assert ours["steps"] == theirs["steps"] == 2
    assert ours["model"].keys() == theirs["model"].keys()
    for key, value in theirs["model"].items():
        assert torch.equal(ours["model"][key], value), key


def test_a_finished_run_continues_with_more_iterations(tiny_model, finished_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    out = _ok(_worker(tiny_model, run, "iterations=3"))
    assert "iterations 3..3 from" in out
    records = read_metrics(run)
    assert records[:2] == read_metrics(finished_run)
    assert [r["iteration"] for r in records] == [1, 2, 3]
    assert [i for i, _ in list_checkpoints(run / "checkpoints")] == [2, 3]


def test_resume_modes_and_changed_settings_are_refused(tiny_model, finished_run, tmp_path):
    with pytest.raises(TrainerError, match=r"already holds a run .*--resume auto"):
        SelfPlayTrainer(_config(tiny_model), finished_run, resume="never").run()
    with pytest.raises(TrainerError, match=r"--resume always: no checkpoint in"):
        SelfPlayTrainer(_config(tiny_model), tmp_path / "new", resume="always").run()
    changed = _config(tiny_model, "grpo.learning_rate=0.02", "iterations=5")
    with pytest.raises(TrainerError, match=r"other settings \(grpo.learning_rate: 0.01 -> 0.02\)"):
        SelfPlayTrainer(changed, finished_run).run()
    with pytest.raises(TrainerError, match=r"resume must be one of .*Did you mean 'always'"):
        SelfPlayTrainer(_config(tiny_model), tmp_path, resume="alway")


# ----------------------------------------------------------------------- modes


def test_fixed_pool_mode_trains_the_agent_on_a_frozen_list(tiny_model, finished_run, tmp_path):
    config = _config(
        tiny_model,
        "mode=fixed-pool",
        "agent.fixed_pool=SequenceRule,spade/Mastermind-v1",
        "agent.pool_envs=0",
        "iterations=1",
    )
    with torch_threads(1):
        trainer = SelfPlayTrainer(config, tmp_path / "run")
        [record] = trainer.run()
    assert sorted(trainer.parts.fixed_pool) == ["spade/Mastermind-v1", "spade/SequenceRule-v1"]
    assert record["designer_requested"] == 0 and record["tokens_designer"] == 0
    assert record["envs_played"] == 2 and record["plays"] == 2 * 2 * 2
    assert record["tokens_agent"] > 0 and record["samples_designer"] == 0
    failed = [record[f"failed_{o}"] for o in ("env_error", "timeout", "sandbox_crashed")]
    assert record["plays_failed"] == sum(failed) + record["failed_model_error"] == 0
    # The same metrics as a self-play run, so the two can be plotted side by side.
    assert set(record) == set(read_metrics(finished_run)[0])
    registry = Registry(f"sqlite:///{tmp_path / 'run' / 'registry.db'}")
    assert registry.list(origin="designer") == []
    tag = iteration_tag(trainer.parts.run_id, 1)
    assert [s.checkpoint for s in registry.play_stats("spade/Mastermind-v1")] == [tag]
    registry.close()
    state = load_checkpoint(tmp_path / "run" / "checkpoints" / "iter-0001").state
    assert sorted(state["fixed_pool"]) == sorted(trainer.parts.fixed_pool)
    # The run's components are one declared attribute; the trainer holds only loop state.
    assert isinstance(trainer.parts, RunComponents) and trainer.parts.memory is None
    assert set(vars(trainer)) == {
        *("config", "run_dir", "resume", "dist", "_log", "_wrap"),
        *("start_iteration", "records", "pending", "_parts", "_ceiling_value"),
    }


def test_a_set_up_that_fails_closes_what_it_had_opened(tmp_path, monkeypatch):
    from spade_envs.error import SpadeError
    from spade_envs.trainer import models
    from spade_envs.validation import Validator

    closed: list[str] = []
    for cls, name in ((Registry, "registry"), (Validator, "validator")):
        original = cls.close

        def close(self, _original=original, _name=name):
            closed.append(_name)
            _original(self)

        monkeypatch.setattr(cls, "close", close)

    def unloadable(*args, **kwargs):
        raise SpadeError("the model cannot be loaded")

    monkeypatch.setattr(models, "load_models", unloadable)
    trainer = SelfPlayTrainer(load_config("cpu-tiny"), tmp_path / "run")
    with pytest.raises(TrainerError, match=r"not set up yet: call run\(\) or setup\(\)"):
        _ = trainer.parts
    with pytest.raises(SpadeError, match="the model cannot be loaded"):
        trainer.run()
    assert sorted(closed) == ["registry", "validator"]  # opened before the models, closed
    with pytest.raises(TrainerError, match="not set up yet"):
        _ = trainer.parts


class _Down(ChatModel):
    """A generator whose every request fails (a server that went away)."""

    name = "down"

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner

    def generate(self, conversations, params=None):
        return [Completion.failed("server down") for _ in conversations]

    def close(self) -> None:
        self.inner.close()


def test_an_iteration_where_every_play_failed_stops_the_run(tiny_model, tmp_path):
    config = _config(
        tiny_model,
        "mode=fixed-pool",
        "agent.fixed_pool=SequenceRule",
        "agent.pool_envs=0",
        "iterations=2",
    )
    lines: list[str] = []
    with torch_threads(1):
        trainer = SelfPlayTrainer(config, tmp_path / "run", wrap_generator=_Down, log=lines.append)
        with pytest.raises(
            IterationFailedError,
            match=r"Every one of the 4 plays of iteration 1 failed \(4 model_error\).*"
            r"model_error in spade/SequenceRule-v1: server down.*resumes from the last checkpoint",
        ) as caught:
            trainer.run()
    assert caught.value.iteration == 1 and caught.value.counts.model_error == 4
    assert any("4 of 4 plays failed (4 model_error)" in line for line in lines), lines
    assert not any(line.startswith("[iter 1/2] update") for line in lines)
    # Nothing of the failed iteration was trained on or recorded.
    assert list_checkpoints(tmp_path / "run" / "checkpoints") == []
    metrics = tmp_path / "run" / "metrics.jsonl"
    assert not metrics.exists() or read_metrics(metrics) == []


def test_delayed_designer_updates_replay_and_train_later(tiny_model, tmp_path):
    config = _config(tiny_model, "designer.delay=1", "iterations=2")
    with torch_threads(1):
        trainer = SelfPlayTrainer(config, tmp_path / "run", wrap_generator=ScriptedDesigner)
        first, second = trainer.run()
    assert first["designer_trained"] == 0 and first["samples_designer"] == 0
    assert second["designer_trained"] == 2 and second["samples_designer"] == 2
    registry = Registry(f"sqlite:///{tmp_path / 'run' / 'registry.db'}")
    early = [r for r in _designed(tmp_path / "run") if r[1] == "1"]
    assert len(early) == 1
    # Replayed at iteration 2: its reward there came from the newer policy's plays.
    checkpoints = {s.checkpoint for s in registry.play_stats(early[0][0])}
    assert checkpoints == {
        iteration_tag(trainer.parts.run_id, 1),
        iteration_tag(trainer.parts.run_id, 2),
    }
    registry.close()
    pending = load_checkpoint(tmp_path / "run" / "checkpoints" / "iter-0002").state["pending"]
    assert [(j, len(batch)) for j, batch in pending] == [(2, 2)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_torchrun_ranks_share_documents_and_plays(tiny_model, tmp_path):
    run = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nnodes=1",
        "--nproc_per_node=2",
        f"--master_port={_free_port()}",
        "-m",
        "tests.trainer.trainer_support",
        str(tiny_model),
        str(run),
        "iterations=1",
        "designer.documents=2",
    ]
    done = subprocess.run(
        command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600
    )
    _ok(done)
    [record] = read_metrics(run)
    # Each rank designed on its own document (its first attempt is the scripted one).
    assert record["designer_requested"] == 4 and record["designer_registered"] == 2
    assert record["envs_played"] == 3 and record["plays"] == 3 * 2 * 2
    assert record["samples_designer"] == 4 and record["tokens_agent"] > 0
    assert done.stdout.count("[iter 1/1] play:") == 1  # rank 0 alone reports
    assert [i for i, _ in list_checkpoints(run / "checkpoints")] == [1]


def test_the_fsdp_preset_trains_sharded_on_two_ranks_and_resumes_on_one(tiny_model, tmp_path):
    # With LoRA: the sharded push merges the adapters into the gathered weights (full
    # fine-tuning takes the same path without adapters; tests/trainer/test_distributed.py
    # covers both learners).
    extra = ["grpo.lora_rank=4"]
    run = tmp_path / "run"
    worker = ["-m", "tests.trainer.trainer_support", str(tiny_model), str(run), "--preset=cpu-fsdp"]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
                "--nproc_per_node=2", f"--master_port={_free_port()}"]  # fmt: skip
    done = subprocess.run(
        [*torchrun, *worker, "iterations=1", *extra],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    _ok(done)
    [record] = read_metrics(run)
    assert record["tokens_agent"] > 0 and record["grad_norm"] > 0
    assert [i for i, _ in list_checkpoints(run / "checkpoints")] == [1]
    # The sharded run's checkpoint holds each rank's shard, written by that rank: one
    # process (another world size, unsharded) continues from it.
    shards = run / "checkpoints" / "iter-0001" / "learner-shards"
    assert sorted(p.name for p in shards.iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    again = subprocess.run(
        [sys.executable, *worker, "iterations=2", *extra],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    _ok(again)
    records = read_metrics(run)
    assert [r["iteration"] for r in records] == [1, 2] and records[1]["tokens_agent"] > 0


# ----------------------------------------------------------------------- pieces


def test_the_run_view_hides_this_runs_future_until_registered_again(tmp_path):
    from spade_envs.core.metadata import describe
    from spade_envs.seeds import seed_class, seed_source
    from spade_envs.validation.static import static_metadata

    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    seed = registry.register(
        seed_source("NumberGuess"), describe(seed_class("NumberGuess")), status="validated"
    )
    made = {}
    for k in (1, 2, 3):
        source = scripted_source(k)
        made[k] = registry.register(
            source,
            static_metadata(source, origin="designer"),
            status="validated",
            extra={"designer_run": iteration_tag("run-a", k)},
        )
    other = scripted_source(9)
    foreign = registry.register(
        other,
        static_metadata(other, origin="designer"),
        status="validated",
        extra={"designer_run": iteration_tag("run-b", 3)},
    )
    for k, tag in ((1, "run-a"), (2, "run-a"), (3, "run-a"), (3, "run-b")):
        registry.record_play_stats(
            made[1].id,
            iteration_tag(tag, k),
            plays_with_hint=2,
            plays_without_hint=2,
            mean_return_with_hint=0.5,
            mean_return_without_hint=0.5 - 0.1 * k,
            win_rate=0.5,
        )
    view = RunView(registry, "run-a", iteration=2)
    visible = {r.id for r in view.list(status="validated", limit=10)}
    assert visible == {seed.id, made[1].id, foreign.id}
    keys = [seed.key, made[1].key, made[2].key, made[3].key]
    assert sorted(view.by_keys(keys)) == sorted([seed.key, made[1].key])
    stats = [s.checkpoint for _, s in view.played(limit=10)]
    assert sorted(stats) == ["run-a-iter1", "run-b-iter3"]
    # Newest first, hidden versions skipped before the offset applies.
    assert [r.id for r in view.list(limit=2, offset=1)] == [made[1].id, seed.id]
    # Registering the same code again (a resumed iteration) makes it visible again.
    again = view.register(
        scripted_source(2), static_metadata(scripted_source(2), origin="designer")
    )
    assert again.id == made[2].id
    assert made[2].id in {r.id for r in view.list(limit=10)}
    view.begin(4)
    assert {r.id for r in view.list(limit=10)} >= {made[2].id, made[3].id}
    view.begin(1)
    assert {r.id for r in view.list(limit=10)} == {seed.id, foreign.id}
    assert view.count() == 5  # everything else goes to the registry unchanged
    registry.close()


def _attempt(
    stage: AttemptStage, failure: DesignerFailure | None = None, env_id: str = ""
) -> Attempt:
    return Attempt(0, "scaffold", "math", stage=stage, failure=failure, env_id=env_id)


def _row(regret=0.2, blend=0.6, learnability=0.25, n=4, failed=0) -> SimpleNamespace:
    return SimpleNamespace(
        regret=regret,
        blend=blend,
        learnability=learnability,
        n_with_hint=n,
        n_without_hint=n,
        failed=failed,
    )


def test_designer_rewards_climb_the_stage_ladder():
    settings = RewardSettings(kind="blend", timeout_penalty=0.5)
    stage, failure = AttemptStage, DesignerFailure
    ladder = [
        designer_reward(_attempt(stage.REQUESTED, failure.MODEL_ERROR), None, settings),
        designer_reward(_attempt(stage.GENERATED, failure.NO_CODE), None, settings),
        designer_reward(_attempt(stage.GENERATED, failure.TRUNCATED), None, settings),
        designer_reward(_attempt(stage.PARSED, failure.INVALID), None, settings),
        designer_reward(_attempt(stage.VALID, failure.NOT_NOVEL), None, settings),
        designer_reward(_attempt(stage.REGISTERED, env_id="e"), _row(blend=0.0), settings),
    ]
    assert ladder == sorted(ladder) and len(set(ladder)) == len(ladder)
    assert ladder == [-1.0, -0.75, -0.625, -0.5, -0.25, 0.0]
    # Registered but never finished a play: as valid.
    assert designer_reward(_attempt(AttemptStage.REGISTERED), _row(n=0), settings) == -0.25
    assert designer_reward(_attempt(AttemptStage.REGISTERED), None, settings) == -0.25
    # Failed plays are penalised (regret rows carry the penalty already).
    assert (
        designer_reward(_attempt(AttemptStage.REGISTERED), _row(n=3, failed=2), settings)
        == 0.6 - 0.5 * 2 / 8
    )
    regret = RewardSettings(kind="regret")
    assert (
        designer_reward(_attempt(AttemptStage.REGISTERED), _row(regret=-0.1, failed=2), regret)
        == -0.1
    )
    learn = RewardSettings(kind="learnability", timeout_penalty=0.0)
    assert designer_reward(_attempt(AttemptStage.REGISTERED), _row(), learn) == 0.25


def test_the_run_directory_layout(finished_run):
    names = {p.name for p in finished_run.iterdir()}
    assert {"config.toml", "metrics.jsonl", "tensorboard", "checkpoints", "registry.db"} <= names
    assert json.loads((finished_run / "checkpoints" / "run.json").read_text())["run_id"]
    assert list((finished_run / "tensorboard").glob("events.out.tfevents.*"))


def test_samples_carry_the_temperatures_their_replies_were_sampled_at(tmp_path):
    # Agent plays are sampled at agent.temperature, designer replies at
    # designer.temperature: the samples the update trains on carry those.
    from spade_envs.agent.episode import Episode
    from spade_envs.agent.policy import Turn

    config = load_config("cpu-tiny", ["agent.temperature=0.7", "designer.temperature=0.9"])
    trainer = SelfPlayTrainer(config, tmp_path / "run")
    tokenizer = SimpleNamespace(encode=lambda text, add_special_tokens: [5] * len(text))
    # Only the trained model's tokenizer is needed: a stand-in for the run's components.
    model = SimpleNamespace(tokenizer=tokenizer, encode=lambda messages: [1, 2])
    trainer._parts = SimpleNamespace(trainer_model=model)
    turn = Turn(0, "", "x", "ok", prompt_token_ids=[1, 2], token_ids=[3], logprobs=[-0.2])
    episode = Episode(
        "spade/A-v1", 0, 7, False, "", "", "text", "", "m", episode_return=1.0, turns=[turn]
    )
    attempt = Attempt(0, "new", "math", document_id=1, reply="class A: pass",
                      messages=[{"role": "user", "content": "Write an env."}])  # fmt: skip
    (agent,) = trainer._agent_samples([episode], 1)
    (designer,) = trainer._designer_samples([attempt], [0.5])
    assert (agent.role, agent.temperature) == ("agent", 0.7)
    assert (designer.role, designer.temperature) == ("designer", 0.9)
