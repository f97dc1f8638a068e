"""What a run is built from (:class:`RunComponents`): built in one place, closed in one.

:func:`open_run` checks the run directory and the resume mode, opens the registry, the
memory, the corpus and the validator, loads the models and the learner, applies the
checkpoint it continues from (weights, run id, frozen pool, metrics history) and returns
the components together with that checkpoint; :meth:`RunComponents.close` releases them.
The self-play loop (:mod:`spade_envs.trainer.loop`) holds the result as
``SelfPlayTrainer.parts`` and restores its own state (iteration, delayed designer batches,
RNG states) from the checkpoint. Imports point one way: the loop imports this module,
never the reverse.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..error import SpadeError
from . import distributed
from .checkpoint import Checkpoint, checkpoint_root, latest_checkpoint, load_checkpoint
from .config import SelfPlayConfig, config_to_dict
from .config_io import read_config, save_config

if TYPE_CHECKING:
    from ..corpus import Corpus
    from ..llm import ChatModel, TransformersChatModel
    from ..memory import Memory
    from ..registry import Registry
    from ..validation import Validator
    from .learner import Learner
    from .metrics import MetricsWriter
    from .models import TimedModel
    from .view import RunView

__all__ = [
    "RESUME_MODES",
    "RunComponents",
    "TrainerError",
    "check_resumable",
    "envs_to_play",
    "new_run_id",
    "open_run",
    "registry_url",
]

#: ``--resume``: ``auto`` continues from the newest checkpoint when there is one;
#: ``never`` refuses a run directory that already holds a run; ``always`` needs one.
RESUME_MODES = ("auto", "never", "always")


class TrainerError(SpadeError):
    """The run cannot start or continue (a run directory in the way, a config mismatch)."""


@dataclass
class RunComponents:
    """Everything a run is built from (by :func:`open_run`), released by :meth:`close`.

    Attributes:
        run_id: The run's id (``<run dir name>-<8 hex>``), kept across resumes.
        checkpoints: Where the checkpoints go.
        registry_url: The registry's URL.
        registry: The shared registry (every rank opens its own connection).
        view: The registry as this run sees it at the current iteration (exact resume).
        trainer_model: The model being trained (``.model``, ``.tokenizer``, ``.encode``).
        raw_generator: The chat model that generates: the trained model itself with the
            transformers backend, a vLLM engine with the vllm backend.
        generator: ``raw_generator`` (wrapped by ``wrap_generator``, if given) timed.
        learner: The GRPO learner of ``trainer_model``.
        metrics: The metrics writer (rank 0; None on other ranks).
        memory: The designer's memory (self-play mode; None in fixed-pool mode).
        corpus: The grounding documents (self-play mode).
        validator: The sandboxed validator of designed environments (self-play mode).
        fixed_pool: Fixed-pool mode's frozen environment IDs (empty in self-play mode).
    """

    run_id: str
    checkpoints: Path
    registry_url: str
    registry: Registry
    view: RunView
    trainer_model: TransformersChatModel
    raw_generator: ChatModel
    generator: TimedModel
    learner: Learner
    metrics: MetricsWriter | None = None
    memory: Memory | None = None
    corpus: Corpus | None = None
    validator: Validator | None = None
    fixed_pool: list[str] = field(default_factory=list)
    _closed: bool = field(default=False, init=False, repr=False)

    def close(self) -> None:
        """Release the validator's sandbox pool, a separate generating engine, the metrics
        writer and the registry connection (the trained model stays, for inspection).
        Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        with contextlib.ExitStack() as stack:  # every close runs, even if one raises
            stack.callback(self.registry.close)
            if self.metrics is not None:
                stack.callback(self.metrics.close)
            if self.raw_generator is not self.trainer_model:
                stack.callback(self.raw_generator.close)  # a vLLM engine
            if self.validator is not None:
                stack.callback(self.validator.close)


def registry_url(config: SelfPlayConfig, run_dir: Path) -> str:
    """``SPADE_REGISTRY_URL``, else ``config.registry_url``, else ``RUN_DIR/registry.db``."""
    from ..registry.urls import resolve_url

    return resolve_url(
        os.environ.get("SPADE_REGISTRY_URL") or config.registry_url or run_dir / "registry.db"
    )


def new_run_id(run_dir: Path) -> str:
    """A fresh run id: the run directory's name and 8 random hex digits."""
    return f"{run_dir.resolve().name or 'run'}-{uuid.uuid4().hex[:8]}"


def check_resumable(config: SelfPlayConfig, path: Path) -> None:
    """Refuse a checkpoint written with other settings (only ``iterations`` may change):
    read before any model is loaded, so the mistake costs nothing.

    Raises:
        TrainerError: The settings differ (each difference is named).
    """
    saved = read_config(path / "config.toml")
    ours, theirs = config_to_dict(config), config_to_dict(saved)
    ours.pop("iterations"), theirs.pop("iterations")
    if ours != theirs:
        raise TrainerError(
            f"The checkpoint {path} was written with other settings "
            f"({_differences(theirs, ours)}). Resume with the same preset and --set "
            "options (only iterations may change), or use a new --run-dir."
        )


def _differences(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> str:
    changed = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            inner = _differences(a, b, f"{prefix}{key}.")
            if inner:
                changed.append(inner)
        elif a != b:
            changed.append(f"{prefix}{key}: {json.dumps(a)} -> {json.dumps(b)}")
    return ", ".join(changed)


def _run_id(dist: distributed.DistInfo, checkpoints: Path, run_dir: Path) -> str:
    """The run's id, kept in ``<checkpoints>/run.json`` from the start, so a run killed
    before its first checkpoint is still recognised in the registry when it restarts."""
    run_id = ""
    if dist.is_main:
        marker = checkpoints / "run.json"
        if marker.is_file():
            run_id = json.loads(marker.read_text(encoding="utf-8"))["run_id"]
        else:
            run_id = new_run_id(run_dir)
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(json.dumps({"run_id": run_id}) + "\n", encoding="utf-8")
    return distributed.all_gather_objects(run_id)[0]


def _resume_from(resume: str, run_dir: Path, checkpoints: Path) -> Path | None:
    """The checkpoint to continue from under ``resume`` (None: start from scratch)."""
    latest = latest_checkpoint(checkpoints)
    metrics = run_dir / "metrics.jsonl"
    if resume == "never" and (
        latest is not None or (metrics.exists() and metrics.stat().st_size > 0)
    ):
        raise TrainerError(
            f"{run_dir} already holds a run (checkpoints in {checkpoints}). "
            "Continue it with --resume auto, or pass a new --run-dir."
        )
    if resume == "always" and latest is None:
        raise TrainerError(
            f"--resume always: no checkpoint in {checkpoints}. Use --resume auto to "
            "start a new run when there is none."
        )
    return None if resume == "never" else latest


def _frozen_pool(config: SelfPlayConfig, view: RunView) -> list[str]:
    """Fixed-pool mode's environments: ``agent.fixed_pool`` (rung labels allowed), or every
    seed of the pool kinds that is not held out for evaluation, with its ladder's rungs."""
    from ..agent import resolve_envs
    from ..core.metadata import describe
    from ..generator.ladders import resolve_labels, rung_labels
    from ..seeds import seed_class, seed_names

    names: list[str] = []
    for entry in config.agent.fixed_pool:
        if entry.startswith("suite:"):
            # A whole imported suite (suite:rlve, suite:rlve:3, suite:reasoning-gym).
            from ..suites.evaluation import suite_pool

            names += suite_pool(entry[len("suite:") :], view)
        else:
            names.append(entry)
    held_out = config.eval.held_out_names
    names = names or [
        label
        for n in seed_names()
        if describe(seed_class(n)).kind in config.agent.pool_kinds and n not in held_out
        for label in [n, *rung_labels([n])]  # the easy rungs beside today's instances
    ]
    names = resolve_labels(view, names)
    if not names:
        raise SpadeError(
            "Fixed-pool mode has no environments: set agent.fixed_pool or widen agent.pool_kinds."
        )
    targets = [t.env_id for t in resolve_envs(names, view)]
    # A quarantined version (a replay of its plays diverged) is not trained on, even when
    # named: its rewards cannot be trusted.
    kept = [t for t in targets if view.get(t).status != "quarantined"]
    if targets and not kept:
        raise SpadeError(
            f"Every fixed-pool environment is quarantined ({', '.join(targets[:4])}): a replay "
            "audit diverged on each. `spade-envs show ID` gives the evidence and `spade-envs "
            "revalidate ID` clears it; or name other environments in agent.fixed_pool."
        )
    return kept


def envs_to_play(
    config: SelfPlayConfig,
    view: RunView,
    fixed_pool: Sequence[str],
    designed: Sequence[str],
    rng: random.Random,
) -> list[str]:
    """An iteration's training environments.

    Fixed-pool mode: ``agent.pool_envs`` drawn from the frozen pool (all when 0).
    Self-play: the environments the designer registered (``designed``, each once), then
    ``agent.pool_envs`` validated registry versions of ``agent.pool_kinds`` drawn with
    ``rng``; never a held-out seed, rung or scaffolded child of one (``eval.envs``) nor a
    version ``eval.suites`` evaluates on.
    """
    from ..generator.scaffold import base_name
    from .stages import suite_held_out

    cfg = config.agent
    if config.mode == "fixed-pool":
        count = cfg.pool_envs or len(fixed_pool)
        return rng.sample(list(fixed_pool), min(count, len(fixed_pool)))
    fresh = list(dict.fromkeys(designed))
    # IDs of evaluated suite versions, and bare names (eval.envs, the ``seeds`` set): a
    # name holds out every version and scaffolded child of that environment.
    held_out = config.eval.held_out_names | suite_held_out(config, view)
    candidates = [
        r.id
        for r in view.list(status="validated", sort="name", limit=20_000)
        if r.kind in cfg.pool_kinds
        and base_name(r.name) not in held_out  # nor their scaffolded children
        and r.id not in held_out
        and r.id not in fresh
    ]
    return fresh + rng.sample(candidates, min(cfg.pool_envs, len(candidates)))


def _open_registry(url: str, dist: distributed.DistInfo) -> Registry:
    """Rank 0 creates the schema and the seeds before the other ranks open it."""
    from ..registry import Registry

    registry = None
    if dist.is_main:
        from ..generator.ladders import resolve_labels, rung_labels

        registry = Registry(url)
        registry.register_seeds()
        # Every rung before the first iteration, so the pool a run draws from is the same
        # at every iteration and on resume.
        resolve_labels(registry, rung_labels())
    distributed.barrier()
    return registry if registry is not None else Registry(url)


def open_run(
    config: SelfPlayConfig,
    run_dir: Path,
    *,
    dist: distributed.DistInfo,
    resume: str = "auto",
    wrap_generator: Callable[[Any], Any] | None = None,
    log: Callable[[str], None] | None = None,
) -> tuple[RunComponents, Checkpoint | None]:
    """Build everything a run needs, continuing from a checkpoint when ``resume`` says so.

    Args:
        config: The run's settings.
        run_dir: The run directory (created if missing).
        dist: This process's place in a torchrun job.
        resume: One of :data:`RESUME_MODES`.
        wrap_generator: Wraps the generating chat model (instrumentation, tests).
        log: Called with the run's opening line (rank 0).

    Returns:
        The components and the checkpoint they continue from (None from scratch). The
        components already carry the checkpoint's weights, run id, frozen pool and metrics
        history; the caller restores its loop state (iteration, delayed designer
        batches, RNG states) from the checkpoint.

    Raises:
        TrainerError: The run directory or checkpoint does not fit ``resume`` or the
            settings. Whatever was opened before a failure is closed again.
    """
    from ..memory import Memory, MemoryConfig
    from .learner import Learner
    from .metrics import MetricsWriter
    from .models import TimedModel, load_models, push_weights
    from .view import RunView

    if config.model.threads:
        import torch

        torch.set_num_threads(config.model.threads)
    run_dir.mkdir(parents=True, exist_ok=True)
    checkpoints = checkpoint_root(run_dir, config.checkpoint.dir)
    resume_from = _resume_from(resume, run_dir, checkpoints)
    checkpoint = None
    if resume_from is not None:
        check_resumable(config, resume_from)
        checkpoint = load_checkpoint(resume_from)
    run_id = _run_id(dist, checkpoints, run_dir)  # every rank takes part (a collective)
    start = 0
    if checkpoint is not None:
        run_id, start = checkpoint.state["run_id"], checkpoint.iteration

    with contextlib.ExitStack() as opened:  # closes what was opened if a later step fails
        url = registry_url(config, run_dir)
        registry = _open_registry(url, dist)
        opened.callback(registry.close)
        view = RunView(registry, run_id, iteration=start + 1)
        memory = corpus = validator = None
        if config.mode == "selfplay":
            from ..corpus import open_corpus, sample_corpus
            from ..validation import Validator

            settings = MemoryConfig(
                embedder=config.memory.embedder, index=config.memory.index, seed=config.seed
            )
            memory = Memory(view, settings)
            words = config.designer.max_document_words
            corpus = (
                open_corpus(config.designer.corpus, max_words=words)
                if config.designer.corpus
                else sample_corpus(max_words=words)
            )
            validator = Validator(config.designer.budget, pool_size=2)
            opened.callback(validator.close)

        # What the run plays, checked before the models load: a suite that was never
        # imported stops here with the import command to run.
        fixed_pool: list[str] = []
        if checkpoint is not None:
            fixed_pool = list(checkpoint.state["fixed_pool"])
        elif config.mode == "fixed-pool":
            fixed_pool = _frozen_pool(config, view)
        if config.eval.suites and config.eval.every:
            from ..suites.evaluation import eval_set

            for name in config.eval.suites:
                eval_set(name, view)

        # The models and the learner (LoRA is applied here, seeded).
        trainer_model, raw_generator = load_models(
            config.model,
            seed=config.seed,
            local_rank=dist.local_rank,
            separate=config.grpo.sharding == "fsdp" and dist.world_size > 1,
            lora_rank=config.grpo.lora_rank,
        )
        if raw_generator is not trainer_model:
            opened.callback(raw_generator.close)
        tokenizer = trainer_model.tokenizer
        pad = tokenizer.pad_token_id
        learner = Learner(
            trainer_model.model,
            config.grpo,
            seed=config.seed,
            pad_token_id=pad if pad is not None else tokenizer.eos_token_id,
        )
        wrapped = wrap_generator(raw_generator) if wrap_generator else raw_generator
        if checkpoint is not None:
            learner.load_state_dict(checkpoint.learner, shards=checkpoint.shards)
            push_weights(raw_generator, learner.model)

        metrics = None
        if dist.is_main:
            save_config(config, run_dir / "config.toml")
            metrics = MetricsWriter(run_dir, start_iteration=start)
            opened.callback(metrics.close)
            # A fresh run starts an empty metrics file; a resumed one the checkpoint's.
            metrics.reset(checkpoint.metrics if checkpoint is not None else "")
            if log is not None:
                where = f"from {resume_from}" if resume_from is not None else "from scratch"
                log(
                    f"run {run_id}: {config.mode}, {config.model.spec} ({config.model.backend}), "
                    f"{dist.world_size} process(es), registry {url}, iterations "
                    f"{start + 1}..{config.iterations} {where}"
                )
        parts = RunComponents(
            run_id=run_id,
            checkpoints=checkpoints,
            registry_url=url,
            registry=registry,
            view=view,
            trainer_model=trainer_model,
            raw_generator=raw_generator,
            generator=TimedModel(wrapped),
            learner=learner,
            metrics=metrics,
            memory=memory,
            corpus=corpus,
            validator=validator,
            fixed_pool=fixed_pool,
        )
        opened.pop_all()  # from here on the components own what was opened
    return parts, checkpoint
