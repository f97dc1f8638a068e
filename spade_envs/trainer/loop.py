"""The self-play loop: one model designs environments, plays them, and learns from both.

One iteration ``k``, top to bottom (:meth:`SelfPlayTrainer.iteration`):

1. **generate, validate, register** (self-play mode): ``designer.documents`` grounding
   documents are drawn with the iteration's seed; the designer attempts
   ``envs_per_document`` environments on each (a GRPO group), and what validates and is
   novel is registered.
2. **play**: the agent plays the new environments, those of designer batches waiting for a
   delayed update, and ``agent.pool_envs`` registry environments drawn with the iteration's
   seed (a 135M model rarely writes a valid environment; the agent always has something
   to play), each ``agent.plays`` times with the hint and as many times without, matched.
   In fixed-pool mode there is no designer: the agent plays environments from a frozen
   list (the SPADE paper's baseline), with the same metrics.
3. **regret**: regret, blend and learnability per environment. Failed plays are counted
   by outcome (``env_error``, ``timeout``, ``sandbox_crashed``, ``model_error``) and left
   out of every mean; an iteration where every play failed stops the run with
   :class:`~spade_envs.trainer.stages.IterationFailedError` (the first failure's message).
4. **designer rewards**: an attempt whose environment was registered gets the configured
   reward of its plays; one that failed earlier gets a reward graded by how far it got
   (:func:`designer_reward`). With ``designer.delay = d`` the attempts of iteration ``k``
   wait: their environments are replayed at every iteration and they are trained at
   iteration ``k + d`` with rewards from that iteration's plays (the SPADE code's delayed
   designer update).
5. **update**: one GRPO step on the agent's turns (environment tokens masked) and the
   designer's replies (:class:`~spade_envs.trainer.learner.Learner`), each sample carrying
   the temperature that sampled it (``agent.temperature``, ``designer.temperature``), under
   which its log-probs are computed; a vLLM generator gets the new weights.
6. **registry and memory**: play statistics under checkpoint ``<run>-iter<k>``; the
   memory embeds what is new.
7. **evaluation** every ``eval.every`` iterations: held-out seed environments, unhinted,
   fixed reset and sampling seeds (greedy by default).
8. **metrics** line (rank 0), then 9. **checkpoint** (rank 0).

Data-parallel (``torchrun``): ranks split the documents and the environments (all plays of
one environment stay on one rank, so its GRPO groups are whole), exchange regret rows and
attempts, and the learner averages gradients; rank 0 writes metrics and checkpoints. All
ranks share one registry (``SPADE_REGISTRY_URL``; PostgreSQL across machines).

Exact resume: every random choice of iteration ``k`` derives from ``(seed, k)``; the
registry is seen through :class:`~spade_envs.trainer.view.RunView`, which hides what a
killed run had already written at iteration ``k`` or later.

What a run is built from (registry, view, memory, corpus, validator, models, learner,
metrics writer, frozen pool) is built by :func:`~spade_envs.trainer.setup.open_run` and
held as one typed attribute, :attr:`SelfPlayTrainer.parts`
(:class:`~spade_envs.trainer.setup.RunComponents`), which :meth:`SelfPlayTrainer.close`
releases. The trainer itself owns only the loop's state: the iteration to start from and
the designer batches waiting for a delayed update.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..error import SpadeError, suggest
from ..generator.outcomes import AttemptStage
from ..progress import Progress
from . import distributed
from .checkpoint import (
    Checkpoint,
    CheckpointError,
    capture_rng,
    restore_rng,
    save_checkpoint,
    write_shards,
)
from .config import SelfPlayConfig
from .config_io import config_to_toml
from .setup import RESUME_MODES, RunComponents, TrainerError, envs_to_play, new_run_id, open_run
from .stages import (
    IterationFailedError,
    design_line,
    design_summary,
    designer_reward,
    eval_line,
    eval_summary,
    evaluate_suites,
    merge_eval,
    merge_play,
    metrics_record,
    play_line,
    play_summary,
)
from .view import iteration_tag

__all__ = [
    "RESUME_MODES",
    "IterationFailedError",
    "SelfPlayTrainer",
    "TrainerError",
    "designer_reward",
    "new_run_id",
]


def _derive(seed: int, iteration: int, purpose: str) -> int:
    digest = hashlib.sha256(f"{seed}|{iteration}|{purpose}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class _DocumentFeed:
    """A corpus stand-in that hands the designer its documents in order, each one
    ``repeat`` times: the attempts on one document form one GRPO group."""

    def __init__(self, documents: Sequence[Any], repeat: int) -> None:
        self._queue = [d for d in documents for _ in range(repeat)]

    def sample(self, n: int, seed: Any = None) -> list[Any]:
        taken, self._queue = self._queue[:n], self._queue[n:]
        if len(taken) < n:
            raise SpadeError("The designer asked for more documents than were prepared.")
        return taken


class SelfPlayTrainer:
    """Runs :class:`SelfPlayConfig` in ``run_dir`` (see the module docstring).

    Args:
        config: The run's settings.
        run_dir: Where config.toml, metrics.jsonl, tensorboard/, checkpoints/ and (unless a
            registry URL is given) registry.db go.
        resume: One of :data:`RESUME_MODES`.
        dist: This process's place in a torchrun job (default: alone).
        log: Called with one line per stage (rank 0 only; default: silent).
        wrap_generator: Wraps the generating chat model (instrumentation, tests).
    """

    def __init__(
        self,
        config: SelfPlayConfig,
        run_dir: str | Path,
        *,
        resume: str = "auto",
        dist: distributed.DistInfo | None = None,
        log: Callable[[str], None] | None = None,
        wrap_generator: Callable[[Any], Any] | None = None,
    ) -> None:
        if not isinstance(config, SelfPlayConfig):
            raise TrainerError(f"config must be a SelfPlayConfig, got {type(config).__name__}.")
        if resume not in RESUME_MODES:
            raise TrainerError(
                f"resume must be one of {RESUME_MODES}, got {resume!r}."
                + suggest(resume, RESUME_MODES)
            )
        self.config = config
        self.run_dir = Path(run_dir)
        self.resume = resume
        self.dist = dist or distributed.DistInfo()
        self._log = log if self.dist.is_main else None
        self._wrap = wrap_generator
        self.start_iteration = 0
        self.records: list[dict[str, Any]] = []
        self.pending: list[tuple[int, list[Any]]] = []  # (iteration, attempts) to train later
        self._parts: RunComponents | None = None
        #: The reference solutions' win rate on the evaluation's instances (computed once).
        self._ceiling_value: float | None = None

    @property
    def parts(self) -> RunComponents:
        """What the run is built from (set by :meth:`setup`; kept after :meth:`close`, closed,
        for inspection: the run id, the checkpoint directory, the trained model).

        Raises:
            TrainerError: :meth:`setup` (or :meth:`run`) has not been called.
        """
        if self._parts is None:
            raise TrainerError("The trainer is not set up yet: call run() or setup() first.")
        return self._parts

    # ================================================================= the run
    def run(self) -> list[dict[str, Any]]:
        """Set up (or resume), run the remaining iterations, clean up.

        Returns:
            The metrics records of the iterations run by this call.
        """
        self.setup()
        try:
            if self.start_iteration == 0 and self.config.eval.before_training:
                self._baseline()
            if self.start_iteration == 0 and self.config.cold_start.steps:
                self._cold_start()
            for k in range(self.start_iteration + 1, self.config.iterations + 1):
                self.records.append(self.iteration(k))
        finally:
            self.close()
        return self.records

    def iteration(self, k: int) -> dict[str, Any]:
        """Do iteration ``k`` (see the module docstring); returns its metrics record."""
        cfg, parts = self.config, self.parts
        started = time.perf_counter()
        parts.view.begin(k)
        gen_seconds, gen_tokens = parts.generator.seconds, parts.generator.tokens
        # 1. generate -> validate -> register
        attempts, design = self._design(k) if cfg.mode == "selfplay" else ([], {})
        if attempts:
            self.pending.append((k, attempts))
        # 2-3. play with and without the hint; regret per environment
        env_ids = self._envs_to_play(k)
        episodes, rows, play = self._play(k, env_ids)
        if play["failures"].all_failed:  # every rank sees the same totals: all stop
            raise IterationFailedError(play["failures"], k)
        # 4. designer rewards of the batch due now (attempts of iteration k - delay)
        due = self._take_due(k)
        by_env = {row.env_id: row for row in rows}
        rewards = [designer_reward(a, by_env.get(a.env_id), cfg.reward) for a in due]
        # 5. one GRPO update on both roles
        update_started = time.perf_counter()
        samples = self._agent_samples(episodes, k) + self._designer_samples(due, rewards)
        from .models import release_generator

        release_generator(parts.raw_generator)  # model.vllm_sleep: the GPU is the learner's
        stats = parts.learner.step(samples)
        sync_started = time.perf_counter()
        synced = self._push()
        seconds_sync = time.perf_counter() - sync_started if synced else 0.0
        seconds_update = time.perf_counter() - update_started
        self._say(
            k,
            f"update: {int(stats['samples_agent'])} agent + {int(stats['samples_designer'])} "
            f"designer samples, {int(stats['tokens_agent'])} + {int(stats['tokens_designer'])} "
            f"tokens, loss {stats['loss']:.4f} in {seconds_update:.1f} s"
            + (f" (weights to vLLM in {seconds_sync:.1f} s)" if synced else ""),
        )
        # 6. registry play statistics and memory
        self._record_stats(k, rows)
        if parts.memory is not None:
            parts.memory.sync()
        # 7. evaluation on held-out seeds
        evaluation = self._evaluate(k) if self._eval_due(k) else {}
        # 8. metrics (generation throughput: every rank's tokens over the slowest rank's time)
        counts = distributed.all_gather_objects(
            (parts.generator.tokens - gen_tokens, parts.generator.seconds - gen_seconds)
        )
        generated, gen_time = sum(c[0] for c in counts), max(c[1] for c in counts)
        record = metrics_record(k, design, play, rows, due, rewards, stats, evaluation)
        record.update(
            generated_tokens=generated,
            tokens_per_s=generated / gen_time if gen_time > 0 else 0.0,
            train_tokens_per_s=(stats["tokens_agent"] + stats["tokens_designer"]) / seconds_update,
            seconds_update=seconds_update,
            weight_syncs=int(synced),
            seconds_weight_sync=seconds_sync,
            seconds_iteration=time.perf_counter() - started,
        )
        if parts.metrics is not None:  # rank 0
            parts.metrics.write(record)
        # 9. checkpoint
        every = cfg.checkpoint.every
        if k % every == 0 or k == cfg.iterations:
            self._save(k)
        return record

    # ============================================================ 1. the designer
    def _design(self, k: int) -> tuple[list[Any], dict[str, Any]]:
        from ..core.metadata import SKILLS
        from ..generator import Designer, DesignerConfig
        from ..generator.pipeline import resolve_mode

        cfg, parts = self.config.designer, self.parts
        # ``auto`` by the size of the model being trained (a vLLM generator does not say).
        mode = resolve_mode(cfg.mode, parts.trainer_model)
        started = time.perf_counter()
        seconds_before = parts.generator.seconds
        documents = parts.corpus.sample(cfg.documents, seed=_derive(self.config.seed, k, "docs"))
        rng = random.Random(_derive(self.config.seed, k, "skills"))
        skills = [cfg.skill or rng.choice(SKILLS) for _ in documents]
        mine = self.dist.shard(list(range(len(documents))))
        attempts: list[Any] = []
        shown = Progress(
            self._tag(k, "design"),
            len(mine) * cfg.envs_per_document,
            unit="attempts",
            interval=60 if self._log is not None and self.dist.is_main else 0,
        )
        # One designer run per skill: its documents in order, each envs_per_document times.
        for skill in sorted({skills[i] for i in mine}, key=SKILLS.index):
            chosen = [documents[i] for i in mine if skills[i] == skill]
            n = len(chosen) * cfg.envs_per_document
            config = DesignerConfig(
                n=n,
                skill=skill,
                mode=mode,
                repair_rounds=cfg.repair_rounds,
                novelty_threshold=cfg.novelty_threshold,
                filling_threshold=cfg.filling_threshold,
                held_out=tuple(sorted(self.config.eval.held_out_names)),
                budget=cfg.budget,
                difficulty=cfg.difficulty,
                references=cfg.references,
                batch_size=n,  # one batch: every prompt of a group is built before any reply
                temperature=cfg.temperature,
                max_tokens=cfg.max_tokens,
                constrained=cfg.constrained,
                seed=_derive(self.config.seed, k, f"designer:{skill}:{self.dist.rank}"),
                run_id=iteration_tag(parts.run_id, k),
            )
            feed = _DocumentFeed(chosen, cfg.envs_per_document)
            designer = Designer(
                parts.generator, parts.view, parts.memory, feed, config, validator=parts.validator
            )
            attempts.extend(designer.run(progress=shown.tick).attempts)
        shown.close()
        everyone = distributed.all_gather_objects(attempts)
        attempts = [a for part in everyone for a in part]
        seconds = time.perf_counter() - started
        local_generate = parts.generator.seconds - seconds_before
        timing = distributed.all_gather_objects((local_generate, seconds - local_generate))
        design = {
            "seconds_generate": max(t[0] for t in timing),
            "seconds_validate": max(t[1] for t in timing),
        }
        registered = [a for a in attempts if a.stage == AttemptStage.REGISTERED]
        design.update(design_summary(attempts))
        listed = design_line(design["failures"])
        self._say(
            k,
            f"design: {len(attempts)} attempts on {len(documents)} document(s), "
            f"{len(registered)} registered"
            + (f" (rejected: {listed})" if listed else "")
            + f" in {seconds:.1f} s (generate {design['seconds_generate']:.1f} s)",
        )
        for a in registered:
            self._say(k, f"design: registered {a.env_id}")
        return attempts, design

    # ============================================================ 2-3. plays
    def _envs_to_play(self, k: int) -> list[str]:
        designed = [
            a.env_id
            for _, batch in self.pending
            for a in batch
            if a.stage == AttemptStage.REGISTERED
        ]
        rng = random.Random(_derive(self.config.seed, k, "pool"))
        return envs_to_play(self.config, self.parts.view, self.parts.fixed_pool, designed, rng)

    def _rollout_config(self, k: int, **changes: Any) -> Any:
        from ..agent import RolloutConfig

        values = dict(
            self.config.agent.rollout_values(),
            seed=_derive(self.config.seed, k, "play"),
            env_seed=_derive(self.config.seed, k, "reset") % 1_000_000,
        )
        values.update(changes)
        return RolloutConfig(**values)

    def _run_plays(
        self, env_ids: Sequence[str], plays: int, hint: bool | None, config: Any, label: str
    ) -> tuple[list[Any], Any]:
        """This rank's plays of ``env_ids`` and the rollout's stats (None: no plays here);
        rank 0 shows its plays' progress as they finish."""
        from ..agent import RolloutEngine, matched_specs, resolve_envs

        mine = self.dist.shard(list(env_ids))
        if not mine:
            return [], None
        view = self.parts.view
        targets = resolve_envs(mine, view)
        specs = matched_specs(targets, plays, hint=hint, env_seed=config.env_seed)
        engine = RolloutEngine(self.parts.generator, config, registry=view)
        if self._log is None or not self.dist.is_main:
            return engine.run(specs, targets), engine.stats
        share = " (this rank's share)" if self.dist.world_size > 1 else ""
        with Progress(label + share, len(specs), unit="episodes", heartbeat=True) as shown:
            return engine.run(specs, targets, progress=shown.tick), engine.stats

    def _play(self, k: int, env_ids: list[str]) -> tuple[list[Any], list[Any], dict[str, Any]]:
        from ..agent import regret_rows

        started = time.perf_counter()
        episodes, stats = self._run_plays(
            env_ids, self.config.agent.plays, None, self._rollout_config(k), self._tag(k, "play")
        )
        rows = regret_rows(
            episodes,
            iteration_tag(self.parts.run_id, k),
            timeout_penalty=self.config.reward.timeout_penalty,
        )
        local = play_summary(episodes, rows, time.perf_counter() - started, stats)
        rows, play = merge_play(distributed.all_gather_objects(local), len(env_ids))
        self._say(k, play_line(play, rows, self.config.agent.plays))
        if play["failures"].failed:
            self._say(k, f"play: first failure: {play['failures'].first_error}")
        return episodes, rows, play

    # ============================================================ 4-5. samples
    def _take_due(self, k: int) -> list[Any]:
        delay = self.config.designer.delay
        due = [a for j, batch in self.pending if j + delay == k for a in batch]
        self.pending = [(j, batch) for j, batch in self.pending if j + delay > k]
        return due

    def _agent_samples(self, episodes: list[Any], k: int) -> list[Any]:
        from .samples import agent_samples

        cfg = self.config.agent
        chosen = [e for e in episodes if cfg.train_hinted or not e.hint]
        # The plays were sampled at agent.temperature (_rollout_config): their behaviour
        # policy, under which the learner computes every log-prob.
        return agent_samples(
            chosen,
            group_by=cfg.group_by,
            format_bonus=cfg.bonus_at(k),
            temperature=cfg.temperature,
        )

    def _designer_samples(self, attempts: list[Any], rewards: list[float]) -> list[Any]:
        from .samples import designer_samples

        documents = list(dict.fromkeys(a.document_id for a in attempts))
        mine = set(self.dist.shard(documents))
        chosen = [(a, r) for a, r in zip(attempts, rewards) if a.document_id in mine]
        model = self.parts.trainer_model
        tokenizer = model.tokenizer
        # Every round of an attempt was sampled at designer.temperature (_design); the
        # config cannot change on resume, so delayed attempts were sampled at it too.
        return designer_samples(
            [a for a, _ in chosen],
            [r for _, r in chosen],
            model.encode,
            lambda text: tokenizer.encode(text, add_special_tokens=False),
            temperature=self.config.designer.temperature,
        )

    def _push(self) -> bool:
        """A vLLM generator gets the updated weights; returns whether any were pushed."""
        from .models import push_weights

        return push_weights(self.parts.raw_generator, self.parts.learner.model)

    # ============================================================ 6-7. stats, eval
    def _record_stats(self, k: int, rows: list[Any]) -> None:
        if not self.dist.is_main:
            return
        parts = self.parts
        for row in rows:
            if row.n_with_hint == 0 and row.n_without_hint == 0:
                continue  # nothing finished: no statistics to store
            parts.registry.record_play_stats(
                row.env_id,
                iteration_tag(parts.run_id, k),
                plays_with_hint=row.n_with_hint,
                plays_without_hint=row.n_without_hint,
                mean_return_with_hint=row.mean_with_hint,
                mean_return_without_hint=row.mean_without_hint,
                win_rate=row.win_rate,
            )

    def _eval_due(self, k: int) -> bool:
        every = self.config.eval.every
        return every > 0 and (k % every == 0 or k == self.config.iterations)

    def _evaluate(self, k: int) -> dict[str, Any]:
        cfg = self.config.eval
        started = time.perf_counter()
        config = self._rollout_config(
            k,
            temperature=cfg.temperature,
            top_p=1.0,
            seed=cfg.seed,
            env_seed=cfg.env_seed,
            max_turns=cfg.max_turns or None,
            max_tokens=cfg.max_tokens,
        )
        envs = self._eval_ids()
        episodes, _stats = self._run_plays(
            envs, cfg.plays, False, config, self._tag(k, "evaluation")
        )
        parts = distributed.all_gather_objects(eval_summary(episodes))
        out = merge_eval(parts, time.perf_counter() - started)
        out["eval_ceiling"] = self._ceiling(envs, config)
        self._say(k, eval_line(out, len(cfg.envs)))
        if cfg.suites and self.dist.is_main:  # only the main rank writes metrics
            out.update(
                evaluate_suites(
                    self.config, self.parts.generator, self.parts.view, lambda t: self._say(k, t)
                )
            )
            out["seconds_eval"] = time.perf_counter() - started
        return out

    def _baseline(self) -> None:
        """``eval.before_training``: the untrained model's evaluation, as iteration 0. Only
        on a start from scratch (which empties ``metrics.jsonl``), so every rank decides
        alike and a resumed run never evaluates it twice."""
        self._write_zero("untrained", self._evaluate(0))

    def _write_zero(self, stage: str, evaluation: dict[str, Any], **extra: Any) -> None:
        """A metrics line of iteration 0 (before self-play): ``stage`` says which."""
        from .metrics import METRIC_FIELDS
        from .stages import eval_fields

        record: dict[str, Any] = {"iteration": 0, "stage": stage, **extra}
        record.update({k: v for k, v in evaluation.items() if k in METRIC_FIELDS})
        record.update(eval_fields(evaluation))
        if evaluation:
            failed = evaluation["eval_failed"] + evaluation.get("eval_failed_suites", 0)
            record["eval_failed"] = failed
        if self.parts.metrics is not None:  # rank 0
            self.parts.metrics.write(record)

    def _cold_start(self) -> None:
        """Supervised steps on the training environments' solutions
        (:mod:`~spade_envs.trainer.coldstart`), then, by default, an evaluation."""
        from .coldstart import run_cold_start

        report = run_cold_start(self.config, self.parts, log=lambda s: self._say(0, s))
        self._push()
        evaluation = self._evaluate(0) if self.config.cold_start.evaluate else {}
        if report.steps:  # a resumed cold start that was already done wrote its line
            self._write_zero(
                "cold_start",
                evaluation,
                cold_start_steps=report.steps,
                cold_start_samples=report.samples,
                cold_start_transcripts=report.transcripts,
                cold_start_first_loss=report.first_loss,
                cold_start_last_loss=report.last_loss,
                seconds_cold_start=report.seconds,
            )

    def _eval_ids(self) -> list[str]:
        """The held-out environments' IDs (rung labels resolved)."""
        from ..generator.ladders import resolve_labels

        return resolve_labels(self.parts.view, self.config.eval.envs)

    def _ceiling(self, envs: list[str], config: Any) -> float | None:
        """The reference solutions' win rate on the evaluation's instances, under its cap:
        the most an agent could show (computed once; rank 0 writes the metrics)."""
        if self._ceiling_value is None and self.dist.is_main:
            from ..agent import resolve_envs
            from .coldstart import reference_plays

            seeds = [config.env_seed + i for i in range(self.config.eval.plays)]
            played = reference_plays(
                self.parts.trainer_model, resolve_envs(envs, self.parts.view), seeds, config
            )
            self._ceiling_value = sum(e.won for e in played) / len(played) if played else None
        return self._ceiling_value

    # ============================================================ set-up, resume
    def setup(self) -> None:
        """Build the run's components (:func:`~spade_envs.trainer.setup.open_run`: registry,
        models, learner, ...) and, when resuming, restore the loop's state from the
        checkpoint they continue from."""
        if self._parts is not None:
            raise TrainerError("The trainer is already set up; use a new SelfPlayTrainer.")
        self._parts, checkpoint = open_run(
            self.config,
            self.run_dir,
            dist=self.dist,
            resume=self.resume,
            wrap_generator=self._wrap,
            log=self._log,
        )
        if checkpoint is not None:
            self._restore(checkpoint)

    def _restore(self, checkpoint: Checkpoint) -> None:
        """The loop's own state from ``checkpoint`` (its components took theirs in
        :func:`~spade_envs.trainer.setup.open_run`); the RNG states last, so nothing of
        the set-up draws from them."""
        from ..generator import Attempt

        self.start_iteration = checkpoint.iteration
        try:
            self.pending = [(j, [Attempt(**a) for a in b]) for j, b in checkpoint.state["pending"]]
        except (TypeError, ValueError) as exc:
            raise CheckpointError(
                f"The checkpoint {checkpoint.path} holds a designer attempt that cannot be "
                f"read back ({type(exc).__name__}: {str(exc)[:200]}); resume from an earlier "
                "checkpoint or start a new --run-dir."
            ) from None
        restore_rng(checkpoint.state["rng"])

    def _save(self, k: int) -> None:
        started = time.perf_counter()
        parts = self.parts
        learner = parts.learner
        # A sharded learner's weights: every rank writes its own shard, nothing gathered.
        shards = (
            write_shards(parts.checkpoints, k, learner.save_shards, is_main=self.dist.is_main)
            if learner.sharded
            else None
        )
        if parts.metrics is not None:  # rank 0
            state = {
                "run_id": parts.run_id,
                "rng": capture_rng(),
                "pending": [[j, [dataclasses.asdict(a) for a in b]] for j, b in self.pending],
                "fixed_pool": parts.fixed_pool,
                "world_size": self.dist.world_size,
            }
            path = save_checkpoint(
                parts.checkpoints,
                k,
                learner_state=learner.state_dict(),
                state=state,
                config_toml=config_to_toml(self.config),
                metrics=parts.metrics.text(),
                keep=self.config.checkpoint.keep,
                # peft's adapter folder of a sharded model would need every rank: its
                # checkpoint holds the adapters among the shards instead.
                adapter=learner.save_adapter
                if learner.adapters is not None and not learner.sharded
                else None,
                shards=shards,
            )
            self._say(k, f"checkpoint: {path} in {time.perf_counter() - started:.1f} s")
        distributed.barrier()

    def close(self) -> None:
        """Release what :meth:`setup` opened (see
        :meth:`~spade_envs.trainer.setup.RunComponents.close`); safe to call twice."""
        if self._parts is not None:
            self._parts.close()

    # ============================================================ small helpers
    def _tag(self, k: int, text: str) -> str:
        return f"[iter {k}/{self.config.iterations}] {text}"

    def _say(self, k: int, text: str) -> None:
        if self._log is not None:
            self._log(self._tag(k, text))
