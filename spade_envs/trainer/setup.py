"""Setting a run up (registry, memory, models, learner, resume) and tearing it down.

Kept apart from :mod:`spade_envs.trainer.loop` so the loop reads as the iteration it is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from . import distributed
from .checkpoint import checkpoint_root, latest_checkpoint
from .config_io import save_config

__all__ = ["prepare", "registry_url", "teardown"]


def registry_url(config: Any, run_dir: Path) -> str:
    """``SPADE_REGISTRY_URL``, else ``config.registry_url``, else ``RUN_DIR/registry.db``."""
    return (
        os.environ.get("SPADE_REGISTRY_URL")
        or config.registry_url
        or f"sqlite:///{(run_dir / 'registry.db').resolve()}"
    )


def _run_id(trainer: Any) -> str:
    """The run's id, kept in ``<checkpoints>/run.json`` from the start, so a run killed
    before its first checkpoint is still recognised in the registry when it restarts."""
    from .loop import new_run_id

    run_id = ""
    if trainer.dist.is_main:
        marker = trainer.checkpoints / "run.json"
        if marker.is_file():
            run_id = json.loads(marker.read_text(encoding="utf-8"))["run_id"]
        else:
            run_id = new_run_id(trainer.run_dir)
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(json.dumps({"run_id": run_id}) + "\n", encoding="utf-8")
    return distributed.all_gather_objects(run_id)[0]


def _check_resume(trainer: Any) -> Path | None:
    from .loop import TrainerError

    latest = latest_checkpoint(trainer.checkpoints)
    metrics = trainer.run_dir / "metrics.jsonl"
    if trainer.resume == "never" and (
        latest is not None or (metrics.exists() and metrics.stat().st_size > 0)
    ):
        raise TrainerError(
            f"{trainer.run_dir} already holds a run (checkpoints in {trainer.checkpoints}). "
            "Continue it with --resume auto, or pass a new --run-dir."
        )
    if trainer.resume == "always" and latest is None:
        raise TrainerError(
            f"--resume always: no checkpoint in {trainer.checkpoints}. Use --resume auto to "
            "start a new run when there is none."
        )
    return None if trainer.resume == "never" else latest


def _frozen_pool(trainer: Any) -> list[str]:
    """Fixed-pool mode's environments: ``agent.fixed_pool``, or every seed of the pool
    kinds that is not held out for evaluation."""
    from ..agent import resolve_envs
    from ..core.metadata import describe
    from ..error import SpadeError
    from ..seeds import seed_class, seed_names

    cfg = trainer.config
    names: list[str] = []
    for entry in cfg.agent.fixed_pool:
        if entry.startswith("suite:"):
            # A whole imported suite (suite:rlve, suite:rlve:3, suite:reasoning-gym).
            from ..suites.evaluation import suite_pool

            names += suite_pool(entry[len("suite:") :], trainer.view)
        else:
            names.append(entry)
    names = names or [
        n
        for n in seed_names()
        if describe(seed_class(n)).kind in cfg.agent.pool_kinds and n not in cfg.eval.envs
    ]
    if not names:
        raise SpadeError(
            "Fixed-pool mode has no environments: set agent.fixed_pool or widen agent.pool_kinds."
        )
    return [t.env_id for t in resolve_envs(names, trainer.view)]


def prepare(trainer: Any) -> None:
    """Everything :meth:`SelfPlayTrainer.setup` does, in order."""
    from ..memory import Memory, MemoryConfig
    from ..registry import Registry
    from .learner import Learner
    from .metrics import MetricsWriter
    from .models import TimedModel, load_models, push_weights
    from .view import RunView

    cfg = trainer.config
    if cfg.model.threads:
        import torch

        torch.set_num_threads(cfg.model.threads)
    trainer.run_dir.mkdir(parents=True, exist_ok=True)
    trainer.checkpoints = checkpoint_root(trainer.run_dir, cfg.checkpoint.dir)
    resume_from = _check_resume(trainer)
    if resume_from is not None:
        trainer.check_resumable(resume_from)
    trainer.run_id = _run_id(trainer)

    # The registry: rank 0 creates the schema and the seeds before the others open it.
    url = registry_url(cfg, trainer.run_dir)
    if trainer.dist.is_main:
        trainer.registry = Registry(url)
        trainer.registry.register_seeds()
    distributed.barrier()
    if not trainer.dist.is_main:
        trainer.registry = Registry(url)
    trainer.view = RunView(trainer.registry, trainer.run_id)
    trainer.memory = trainer.corpus = trainer.validator = None
    if cfg.mode == "selfplay":
        from ..corpus import open_corpus, sample_corpus
        from ..validation import Validator

        memory = MemoryConfig(embedder=cfg.memory.embedder, index=cfg.memory.index, seed=cfg.seed)
        trainer.memory = Memory(trainer.view, memory)
        words = cfg.designer.max_document_words
        trainer.corpus = (
            open_corpus(cfg.designer.corpus, max_words=words)
            if cfg.designer.corpus
            else sample_corpus(max_words=words)
        )
        trainer.validator = Validator(cfg.designer.budget, pool_size=2)

    # What the run plays, checked before the models load: a suite that was never
    # imported stops here with the import command to run.
    if cfg.mode == "fixed-pool":
        trainer.fixed_pool = _frozen_pool(trainer)
    if cfg.eval.suites and cfg.eval.every:
        from ..suites.evaluation import eval_set

        for name in cfg.eval.suites:
            eval_set(name, trainer.view)

    # The models and the learner (LoRA is applied here, seeded).
    trainer.trainer_model, generator = load_models(
        cfg.model, seed=cfg.seed, local_rank=trainer.dist.local_rank
    )
    tokenizer = trainer.trainer_model.tokenizer
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    trainer.learner = Learner(
        trainer.trainer_model.model, cfg.grpo, seed=cfg.seed, pad_token_id=pad
    )
    trainer.raw_generator = generator
    trainer.generator = TimedModel(trainer._wrap(generator) if trainer._wrap else generator)

    trainer._metrics_text = ""  # a fresh run starts an empty metrics file
    if resume_from is not None:
        trainer.restore(resume_from)
        push_weights(generator, trainer.learner.model)
    trainer.view.run_id = trainer.run_id
    trainer.view.begin(trainer.start_iteration + 1)
    if trainer.dist.is_main:
        save_config(cfg, trainer.run_dir / "config.toml")
        trainer.metrics = MetricsWriter(trainer.run_dir, start_iteration=trainer.start_iteration)
        trainer.metrics.reset(trainer._metrics_text)
        where = f"from {resume_from}" if resume_from is not None else "from scratch"
        if trainer._log is not None:
            trainer._log(
                f"run {trainer.run_id}: {cfg.mode}, {cfg.model.spec} ({cfg.model.backend}), "
                f"{trainer.dist.world_size} process(es), registry {url}, iterations "
                f"{trainer.start_iteration + 1}..{cfg.iterations} {where}"
            )


def teardown(trainer: Any) -> None:
    """Close what :func:`prepare` opened (the trained model stays, for inspection)."""
    if getattr(trainer, "validator", None) is not None:
        trainer.validator.close()
        trainer.validator = None
    generator = getattr(trainer, "raw_generator", None)
    if generator is not None and generator is not getattr(trainer, "trainer_model", None):
        generator.close()  # a vLLM engine; the trained model itself stays
    if getattr(trainer, "metrics", None) is not None:
        trainer.metrics.close()
    if getattr(trainer, "registry", None) is not None:
        trainer.registry.close()
