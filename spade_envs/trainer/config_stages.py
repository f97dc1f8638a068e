"""Settings of the stages around the self-play iterations: the cold start before them, the
held-out evaluation between them, and the checkpoints after each (the ``[cold_start]``,
``[eval]`` and ``[checkpoint]`` tables of a preset; :mod:`~.config` gathers them)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..error import suggest
from .config_checks import ConfigError, _check, _non_negative, _positive, bare_env_name

__all__ = ["CheckpointSettings", "ColdStartSettings", "EvalSettings"]


@dataclass(frozen=True)
class ColdStartSettings:
    """Supervised fine-tuning before self-play, on the training environments' own solutions.

    The reference ``solution()`` of each training environment is played through the door
    (sandboxed) from ``seeds`` reset seeds; every winning transcript, written with the
    agent's own prompts, becomes one sample per turn, and the model (the same adapters GRPO
    trains) learns them by next-token likelihood for ``steps`` steps. Held-out evaluation
    environments (and their rungs) never enter. See :mod:`spade_envs.trainer.coldstart`.

    Attributes:
        steps: Optimizer steps (0: no cold start).
        batch_size: Transcripts per step (each a whole play, the loss on every reply).
        learning_rate: The steps' learning rate (GRPO keeps ``grpo.learning_rate``).
        seeds: Reset seeds per environment (``0 .. seeds - 1``; evaluation uses
            ``eval.env_seed`` and up, far from these).
        envs: The environments (seed names, rung labels ``Name@k``, gym IDs); empty: the
            text and tool seeds of ``agent.pool_kinds`` (or the fixed pool) that are not
            held out, with their ladders' rungs.
        hinted_plays: Rejection sampling: each environment is also played this many times
            with the hint, and the turns of the plays that won join the transcripts.
        every: Save a resumable cold-start checkpoint every this many steps (0: at the end
            only).
        evaluate: Evaluate right after the cold start (a metrics line, ``stage =
            "cold_start"``, iteration 0): the "cold start only" point of a curve.
    """

    steps: int = 0
    batch_size: int = 16
    learning_rate: float = 5e-4
    seeds: int = 8
    envs: tuple[str, ...] = ()
    hinted_plays: int = 0
    every: int = 10
    evaluate: bool = True

    def __post_init__(self) -> None:
        _non_negative("cold_start", steps=self.steps, hinted_plays=self.hinted_plays)
        _non_negative("cold_start", every=self.every)
        _positive("cold_start", batch_size=self.batch_size, seeds=self.seeds)
        _check(
            math.isfinite(self.learning_rate) and self.learning_rate > 0,
            f"cold_start.learning_rate must be a positive number, got {self.learning_rate!r}.",
        )
        for env in self.envs:
            _check_env_name("cold_start.envs", env)


def _check_env_name(where: str, env: str) -> None:
    """A seed name, a rung label or a gym ID (registered names are checked when opened)."""
    from ..generator.ladders import LadderError, is_rung_label, parse_rung

    if is_rung_label(env):
        try:
            parse_rung(env)
        except LadderError as exc:
            raise ConfigError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class EvalSettings:
    """Periodic evaluation on held-out seed environments (never trained on, unhinted).

    Attributes:
        every: Evaluate after every ``every``-th iteration and after the last (0: never).
        envs: Held out of training: seed names and rungs of their ladders
            (``NumberGuess@0``, :mod:`spade_envs.generator.ladders`); a seed's rungs and
            scaffolded children are held out with it.
        plays: Plays per environment (reset seeds ``env_seed``, ``env_seed + 1``, ...).
        env_seed: Reset seed of the first play (fixed: every evaluation sees the same
            instances).
        temperature: 0 is greedy; above 0 sampling uses the fixed ``seed``.
        seed: Sampling seed of the evaluation.
        max_turns: Cap on turns per play (0: the environment's own limit, which its
            reference solution fits in; then a reasoning-gym or RLVE task of
            ``eval.suites`` allows 2 answers, and a TextArena game plays to its own cap).
            Every evaluation records the reference solution's win rate under the same
            cap (``eval_ceiling``).
        max_tokens: Longest reply per turn.
        before_training: Also evaluate the untrained model once, before iteration 1,
            recorded as iteration 0 (the "no training" baseline of a curve).
        suites: Suite evaluation sets also played at every evaluation, as
            ``spade-envs evaluate`` plays them (``rg-hard``, ``rlve:3``, ...), with
            ``plays`` episodes per task; win rates per category go to the metrics
            (``suite_<set>_<category>_win_rate``) and the report's ``suites.png``.
    """

    every: int = 5
    envs: tuple[str, ...] = ("NumberGuess", "CounterfeitCoin", "SupplierLookup", "Nim")
    plays: int = 4
    env_seed: int = 100_000
    temperature: float = 0.0
    seed: int = 0
    max_turns: int = 0
    max_tokens: int = 512
    before_training: bool = False
    suites: tuple[str, ...] = ()

    @property
    def held_out_names(self) -> frozenset[str]:
        """The bare names of ``envs`` (``NumberGuess@0`` -> ``NumberGuess``): no version,
        rung or scaffolded child of these is ever a parent, a pool draw or a cold-start env."""
        return frozenset(bare_env_name(e) for e in self.envs)

    def __post_init__(self) -> None:
        from ..seeds import seed_names
        from ..suites.evaluation import EVAL_SETS

        for name in self.suites:
            base = name.partition(":")[0]
            _check(
                base in EVAL_SETS,
                f"eval.suites: {name!r} is not an evaluation set.{suggest(base, EVAL_SETS)} "
                "Use rg-hard, rlve[:level], reasoning-gym[:level] or seeds.",
            )
        _non_negative("eval", every=self.every, max_turns=self.max_turns)
        _non_negative("eval", temperature=self.temperature)
        _positive("eval", plays=self.plays, max_tokens=self.max_tokens)
        _check(
            bool(self.envs) or self.every == 0,
            "eval.envs needs at least one seed environment (or set eval.every = 0).",
        )
        known = seed_names()
        for name in self.envs:
            if "@" in name:
                _check_env_name("eval.envs", name)
                continue
            _check(
                name in known,
                f"eval.envs: {name!r} is not a seed environment.{suggest(name, known)} "
                "Held-out evaluation uses seeds and their rungs (`Name@0`; see "
                "`spade-envs list-seeds`).",
            )


@dataclass(frozen=True)
class CheckpointSettings:
    """Checkpoints (model or adapters, optimizer, RNG states, iteration, memory, config).

    Attributes:
        every: Save after every ``every``-th iteration and after the last.
        keep: How many of the newest checkpoints are kept.
        dir: Where (``""``: ``RUN_DIR/checkpoints``); ``SPADE_CHECKPOINT_DIR`` overrides
            both (a bucket mount on the cloud).
    """

    every: int = 1
    keep: int = 2
    dir: str = ""

    def __post_init__(self) -> None:
        _positive("checkpoint", every=self.every, keep=self.keep)
