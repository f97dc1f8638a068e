"""The cold start: supervised steps on the training environments' own reference solutions.

An untrained 135M model answers in the expected format a few percent of the time and wins
nothing, so every GRPO group has equal returns and the agent's gradient is zero. Before
self-play, :func:`run_cold_start` teaches it what a winning play looks like:

1. **transcripts.** Each training environment (never a held-out one, nor a rung or child
   of one) is opened through the door, sandboxed, at reset seeds ``0 .. seeds - 1``, and
   its ``solution()`` is asked for. A :class:`ScriptedModel` then *plays* those actions
   through the ordinary rollout engine, so the transcripts carry the agent's own system
   prompt, observations, tool lists and chat template, token for token; only plays that
   the environment scores as won are kept (a solution is environment code: a losing one
   teaches nothing, and our scorer, not the environment's say, decides). With
   ``hinted_plays``, the model itself also plays each environment with the hint, and its
   winning plays join (rejection sampling).
2. **steps.** ``steps`` likelihood steps (:meth:`~spade_envs.trainer.learner.Learner.
   likelihood_step`) over the transcripts, shuffled with the run seed, ``batch_size``
   transcripts a step (each one sequence, the loss on every reply:
   :func:`transcript_sample`), on the model and adapters GRPO then trains.
3. **checkpoints.** Every ``every`` steps the learner and the step count are saved under
   ``checkpoints/cold-start/``; a run killed midway resumes from the last one (the
   transcripts are rebuilt: they depend only on the seeds).

A cold start with no winning transcript stops with :class:`ColdStartError`, naming each
environment and why it gave none (no ``solution()``, unproven, every solution lost, its
play failed).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..error import SpadeError
from ..llm.base import ChatModel, Completion, Message, SamplingParams

__all__ = [
    "ColdStartError",
    "ColdStartReport",
    "ScriptedModel",
    "cold_start_envs",
    "reference_plays",
    "run_cold_start",
]

#: Where cold-start checkpoints go, under the run's checkpoint directory.
COLD_START_DIR = "cold-start"


class ColdStartError(SpadeError):
    """The cold start has nothing to learn from (every environment is named with why)."""


@dataclass
class ColdStartReport:
    """What a cold start did.

    Attributes:
        envs: The training environments asked for solutions.
        transcripts: Winning plays learned from (solution plays plus hinted wins).
        hinted_wins: Of those, the model's own winning hinted plays.
        samples: Turns learned from (one sample per play: its replies are all in its last
            prompt).
        steps: Steps taken by this call (a resumed cold start counts only its own).
        first_loss: Mean negative log-likelihood per token of the first step taken here.
        last_loss: The same, of the last step.
        skipped: Environment -> why it gave no transcript.
        seconds: Wall time.
    """

    envs: list[str] = field(default_factory=list)
    transcripts: int = 0
    hinted_wins: int = 0
    samples: int = 0
    steps: int = 0
    first_loss: float | None = None
    last_loss: float | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def line(self) -> str:
        """One progress line."""
        loss = (
            f"loss {self.first_loss:.3f} -> {self.last_loss:.3f}"
            if self.first_loss is not None and self.last_loss is not None
            else "no step taken"
        )
        skipped = f"; {len(self.skipped)} env(s) gave none" if self.skipped else ""
        return (
            f"cold start: {self.transcripts} winning transcript(s) ({self.hinted_wins} hinted) "
            f"from {len(self.envs)} env(s), {self.samples} turns, {self.steps} step(s), "
            f"{loss} in {self.seconds:.0f} s{skipped}"
        )


class ScriptedModel(ChatModel):
    """A chat model that answers with prepared actions: a reference solution, played.

    The rollout engine gives every turn of every play its own sampling seed (derived from
    the run seed, the environment, the play and the turn), so that seed names the play and
    the turn: the script maps it to the action. Token ids are the trained model's own (its
    chat template for the prompt, its tokenizer plus the end-of-turn token for the reply),
    so a transcript trains exactly the tokens the agent would generate.

    Args:
        scripts: Sampling seed of a turn -> the action of that turn.
        encode: The trained model's prompt encoder (chat template + generation prompt).
        tokenize: Text -> token ids, without special tokens.
        end_ids: Token ids that end a reply (the chat template's end of turn).
        max_context: The trained model's context (prompt plus reply), or None.

    A scripted turn whose prompt and reply the model's context cannot hold fails (and so
    its play) instead of being encoded and learned. The script and the observations are
    environment code's: unbounded, a 200-turn script of 8,192-character actions would make
    prompts of millions of tokens, re-encoded every turn.
    """

    name = "reference-solution"

    def __init__(
        self,
        scripts: dict[int, str],
        encode: Callable[[Sequence[Message]], list[int]],
        tokenize: Callable[[str], list[int]],
        end_ids: Sequence[int],
        max_context: int | None = None,
    ) -> None:
        self.scripts = scripts
        self.encode = encode
        self.tokenize = tokenize
        self.end_ids = list(end_ids)[:1]
        self.max_context = max_context

    def generate(
        self, conversations: Sequence[Sequence[Message]], params: SamplingParams | None = None
    ) -> list[Completion]:
        params = params or SamplingParams()
        out = []
        for index, conversation in enumerate(conversations):
            action = self.scripts.get(params.seed_for(index))  # type: ignore[arg-type]
            if action is None:
                out.append(Completion.failed("no scripted action for this turn"))
                continue
            out.append(self._reply(action, conversation))
        return out

    def _reply(self, action: str, conversation: Sequence[Message]) -> Completion:
        context = self.max_context
        # Checked on characters before any encoding: a byte-level token holds few.
        chars = len(action) + sum(len(str(m.get("content") or "")) for m in conversation)
        if context and chars > 16 * context:
            return Completion.failed("the scripted play outgrew the model's context")
        reply = self.tokenize(action) + self.end_ids
        prompt = self.encode(conversation)
        if context and len(prompt) + len(reply) > context:
            return Completion.failed(
                f"the scripted play ({len(prompt)} prompt and {len(reply)} reply tokens) "
                f"exceeds the model's context of {context}"
            )
        return Completion(text=action, token_ids=tuple(reply), prompt_token_ids=tuple(prompt))


def cold_start_envs(config: Any) -> list[str]:
    """The cold start's environments: ``cold_start.envs``, or the training seeds and rungs.

    Without ``cold_start.envs``: in fixed-pool mode the pool given in ``agent.fixed_pool``
    when there is one; otherwise every text and tool seed of ``agent.pool_kinds`` that is
    not held out by ``eval.envs``, each followed by its ladder's rungs.
    """
    from ..generator.ladders import rung_labels
    from ..seeds import seed_classes

    if config.cold_start.envs:
        return list(config.cold_start.envs)
    if config.mode == "fixed-pool" and config.agent.fixed_pool:
        return [e for e in config.agent.fixed_pool if not e.startswith("suite:")]
    from ..core.metadata import env_kind

    held_out = config.eval.held_out_names
    kinds = {k for k in config.agent.pool_kinds if k != "game"}
    seeds = [
        name
        for name, cls in sorted(seed_classes().items())
        if name not in held_out and env_kind(cls) in kinds
    ]
    return [label for name in seeds for label in [name, *rung_labels([name])]]


def _solutions(
    targets: Sequence[Any],
    seeds: Sequence[int],
    isolation: str,
    trust_code: bool,
    timeout: float,
) -> tuple[list[tuple[Any, int, list[str]]], dict[str, str]]:
    """``(target, seed, actions)`` per environment and reset seed in ``seeds``, and why an
    environment gave none."""
    from ..agent.deadline import deadline
    from ..runtime import open_record
    from ..sandbox import SandboxConfig, WorkerPool

    found: list[tuple[Any, int, list[str]]] = []
    skipped: dict[str, str] = {}
    config = SandboxConfig(call_timeout=timeout)
    with WorkerPool(config) as pool:
        for target in targets:
            if target.kind == "game":
                skipped[target.env_id] = "a game: its solution is one seat's moves"
                continue
            try:
                env = open_record(target, isolation=isolation, trust_code=trust_code, pool=pool)
            except Exception as exc:  # one environment's failure skips only it
                skipped[target.env_id] = f"could not be opened ({type(exc).__name__}: {exc})"
                continue
            try:
                for seed in seeds:
                    # Sandboxed calls carry their own deadline; in-process code gets an alarm.
                    guard = (
                        deadline(timeout, "a solution") if isolation == "none" else nullcontext()
                    )
                    with guard:
                        env.reset(seed=seed)
                        actions = env.solution()
                    found.append((target, seed, list(actions)))
            except NotImplementedError:
                skipped[target.env_id] = "it has no solution()"
            except Exception as exc:
                name = type(exc).__name__
                reason = "unproven (no checkable solution)" if "Unproven" in name else None
                skipped[target.env_id] = reason or f"solution() failed ({name}: {exc})"[:300]
            finally:
                env.close()
    return found, skipped


def end_of_turn(model: Any) -> int:
    """The token the chat template closes an assistant turn with (what generation stops
    on), read from the template itself: the first token after a probe reply."""
    tokenizer = model.tokenizer
    probe = [{"role": "user", "content": "ping"}]
    prompt = model.encode(probe)
    out = tokenizer.apply_chat_template(
        [*probe, {"role": "assistant", "content": "pong"}], tokenize=True
    )
    full = list(out["input_ids"] if hasattr(out, "keys") else out)
    reply = tokenizer.encode("pong", add_special_tokens=False)
    tail = full[len(prompt) + len(reply) :]
    if full[: len(prompt)] != prompt or not tail:
        return int(tokenizer.eos_token_id)
    return int(tail[0])


def _context(model: Any) -> int | None:
    """The trained model's context length (what its own generation refuses beyond)."""
    context = getattr(model, "_context", None)
    if not isinstance(context, int):
        config = getattr(getattr(model, "model", None), "config", None)
        context = getattr(config, "max_position_embeddings", None)
    return context if isinstance(context, int) and context > 0 else None


def reference_plays(
    model: Any,
    targets: Sequence[Any],
    seeds: Sequence[int],
    config: Any,
    solutions: dict[tuple[str, int], list[str]] | None = None,
) -> list[Any]:
    """The reference solutions played through the rollout engine, as the agent would play.

    Args:
        model: The trained chat model (``encode`` and ``tokenizer``), for token ids.
        targets: :class:`~spade_envs.agent.EnvTarget` of the environments.
        seeds: Reset seeds (one play per seed and environment).
        config: The :class:`~spade_envs.agent.RolloutConfig` to play under (its turn cap
            included: a cap shorter than a solution loses the play, as it would the
            agent's).
        solutions: ``(env_id, seed) -> actions`` already asked for; the rest are asked
            here.

    Returns:
        The episodes (``won`` says which solutions win under the cap).
    """
    import dataclasses

    from ..agent import PlaySpec, RolloutEngine

    asked = dict(solutions or {})
    missing = [t for t in targets if any((t.env_id, s) not in asked for s in seeds)]
    if missing:
        # Only the seeds played: the evaluation's start at 100,000 (eval.env_seed).
        found, _ = _solutions(
            missing, seeds, config.isolation, config.trust_code, config.step_timeout
        )
        asked.update({(t.env_id, s): a for t, s, a in found})
    from ..agent.rollout import turn_seed

    config = dataclasses.replace(config, temperature=1.0, audit_share=None)
    if config.seed is None:
        config = dataclasses.replace(config, seed=0)
    scripts: dict[int, str] = {}
    specs = []
    for target in targets:
        for seed in seeds:
            if (target.env_id, seed) not in asked:
                continue
            specs.append(PlaySpec(target.env_id, play_index=seed, env_seed=seed))
            for turn, action in enumerate(asked[(target.env_id, seed)]):
                scripts[turn_seed(config.seed, target.env_id, seed, turn)] = action
    tokenizer = model.tokenizer
    scripted = ScriptedModel(
        scripts,
        model.encode,
        lambda text: tokenizer.encode(text, add_special_tokens=False),
        end_ids=[end_of_turn(model)],
        max_context=_context(model),
    )
    engine = RolloutEngine(scripted, config)
    return engine.run(specs, list(targets)) if specs else []


def run_cold_start(
    config: Any,
    parts: Any,
    *,
    log: Callable[[str], None] | None = None,
) -> ColdStartReport:
    """Run (or resume) the cold start of a run (see the module docstring).

    Args:
        config: The :class:`~spade_envs.trainer.config.SelfPlayConfig`.
        parts: The run's :class:`~spade_envs.trainer.setup.RunComponents`.
        log: Called with progress lines.

    Raises:
        ColdStartError: No training environment gave a winning transcript.
    """
    started = time.perf_counter()
    say = log or _silent
    cfg = config.cold_start
    report = ColdStartReport()
    root = Path(parts.checkpoints) / COLD_START_DIR
    done = _resume(root, parts.learner)
    if done >= cfg.steps:
        say(f"cold start: done ({done} steps, from {root})")
        return report
    samples = _transcript_samples(config, parts, report, say)
    order = list(range(len(samples)))
    random.Random(config.seed).shuffle(order)
    at = (done * cfg.batch_size) % len(order)
    for step in range(done + 1, cfg.steps + 1):
        batch = [samples[order[(at + i) % len(order)]] for i in range(cfg.batch_size)]
        at = (at + cfg.batch_size) % len(order)
        stats = parts.learner.likelihood_step(batch, learning_rate=cfg.learning_rate)
        report.steps += 1
        report.first_loss = stats["loss"] if report.first_loss is None else report.first_loss
        report.last_loss = stats["loss"]
        if step == done + 1 or step % 5 == 0 or step == cfg.steps:
            say(f"cold start: step {step}/{cfg.steps}, loss {stats['loss']:.3f}")
        if (cfg.every and step % cfg.every == 0) or step == cfg.steps:
            _save(root, parts.learner, step)
    report.seconds = time.perf_counter() - started
    say(report.line())
    return report


def _silent(_line: str) -> None:
    """The log of a run that shows nothing."""


def _transcript_samples(
    config: Any, parts: Any, report: ColdStartReport, say: Callable[[str], None]
) -> list[Any]:
    from ..agent import resolve_envs
    from ..generator.ladders import resolve_labels

    cfg, agent = config.cold_start, config.agent
    labels = cold_start_envs(config)
    ids = resolve_labels(parts.registry, labels)
    targets = resolve_envs(ids, parts.view)
    report.envs = [t.env_id for t in targets]
    unvalidated = {t.env_id for t in targets if parts.registry.get(t.env_id).status != "validated"}
    for env_id in sorted(unvalidated):  # their solutions are unchecked code's say
        report.skipped[env_id] = "not validated"
    targets = [t for t in targets if t.env_id not in unvalidated]
    say(f"cold start: asking {len(targets)} env(s) for solutions at {cfg.seeds} seed(s)")
    found, skipped = _solutions(
        targets, range(cfg.seeds), agent.isolation, agent.trust_code, agent.step_timeout
    )
    report.skipped.update(skipped)
    rollout = _rollout_config(config)
    episodes = reference_plays(
        parts.trainer_model,
        [t for t in targets if t.env_id not in skipped],
        list(range(cfg.seeds)),
        rollout,
        solutions={(t.env_id, s): a for t, s, a in found},
    )
    winners = [e for e in episodes if e.won and not e.failed]
    for target in targets:
        if target.env_id not in report.skipped and not any(
            e.env_id == target.env_id for e in winners
        ):
            report.skipped[target.env_id] = "no reference solution won"
    if cfg.hinted_plays:
        hinted = _hinted_wins(config, parts, targets, rollout, shown=say is not _silent)
        report.hinted_wins = len(hinted)
        winners += hinted
    if not winners:
        reasons = "; ".join(f"{env}: {why}" for env, why in sorted(report.skipped.items()))
        raise ColdStartError(
            f"The cold start found no winning transcript in {len(report.envs)} training "
            f"environment(s) ({reasons or 'none given'}). Name environments with a reference "
            "solution in cold_start.envs (seeds and rungs have one), or set "
            "cold_start.steps = 0."
        )
    samples = [transcript_sample(e) for e in winners]
    report.transcripts = len(winners)
    report.samples = sum(len(e.turns) for e in winners)
    return samples


def transcript_sample(episode: Any) -> Any:
    """One sample for a whole play: the last turn's prompt and reply, with the loss on every
    reply of the play and none on the environment's tokens between them.

    A multi-turn transcript holds its earlier replies inside its last prompt; learning them
    there costs one sequence instead of one per turn. When the chat template does not
    re-encode an earlier turn exactly as it was generated (the prompt of turn ``i + 1`` does
    not start with turn ``i``'s prompt and reply), the replies cannot be located and the
    play is learned from its last turn with its earlier replies as context only.
    """
    from .samples import Sample

    turns = [t for t in episode.turns if t.token_ids and t.prompt_token_ids]
    last = turns[-1]
    full = list(last.prompt_token_ids) + list(last.token_ids)
    first = len(turns[0].prompt_token_ids)
    mask = [0] * (len(full) - first)
    consistent = True
    for turn, following in zip(turns, [*turns[1:], None]):
        start, stop = len(turn.prompt_token_ids), len(turn.prompt_token_ids) + len(turn.token_ids)
        generated = list(turn.prompt_token_ids) + list(turn.token_ids)
        if following is not None and list(following.prompt_token_ids[:stop]) != generated:
            consistent = False
            break
        mask[start - first : stop - first] = [1] * (stop - start)
    if not consistent:
        first = len(last.prompt_token_ids)
        mask = [1] * len(last.token_ids)
    return Sample(
        role="agent",
        prompt_ids=full[:first],
        completion_ids=full[first:],
        reward=0.0,
        group="cold-start",
        loss_mask=mask,
    )


def _rollout_config(config: Any) -> Any:
    from ..agent import RolloutConfig

    # The environment's own turn limit: a transcript teaches the whole way to the win, even
    # where training plays are capped for time.
    values = {**config.agent.rollout_values(), "max_turns": None}
    return RolloutConfig(**values, seed=config.seed, env_seed=0, audit_share=None)


def _hinted_wins(
    config: Any, parts: Any, targets: list[Any], rollout: Any, shown: bool
) -> list[Any]:
    """The model's own hinted plays that won (rejection sampling); ``shown``: their
    progress is shown as they finish."""
    from ..agent import RolloutEngine, matched_specs
    from ..progress import Progress

    specs = matched_specs(
        [t for t in targets if t.has_hint],
        config.cold_start.hinted_plays,
        hint=True,
        env_seed=rollout.env_seed,
    )
    engine = RolloutEngine(parts.generator, rollout, registry=parts.view)
    label = "cold start: hinted plays"
    with Progress(
        label, len(specs), unit="episodes", interval=60 if shown else 0, heartbeat=True
    ) as bar:
        played = engine.run(specs, targets, progress=bar.tick)
    return [e for e in played if e.won and not e.failed]


def _resume(root: Path, learner: Any) -> int:
    """Load the newest cold-start checkpoint into ``learner``; the steps it had taken."""
    from .checkpoint import latest_checkpoint, load_checkpoint

    path = latest_checkpoint(root) if root.is_dir() else None
    if path is None:
        return 0
    checkpoint = load_checkpoint(path)
    learner.load_state_dict(checkpoint.learner, shards=checkpoint.shards)
    return int(checkpoint.iteration)


def _save(root: Path, learner: Any, step: int) -> None:
    from . import distributed
    from .checkpoint import save_checkpoint, write_shards

    main = learner.dist is None or learner.dist.is_main
    # A sharded learner: every rank writes its shard; then rank 0 alone writes the rest
    # (several writers would prune each other's unfinished directories).
    shards = None
    if learner.sharded:
        shards = write_shards(root, step, learner.save_shards, is_main=main)
    if main:
        save_checkpoint(
            root,
            step,
            learner_state=learner.state_dict(),
            shards=shards,
            state={"cold_start_step": step},
            config_toml="",
            metrics="",
            keep=1,
        )
    distributed.barrier()
