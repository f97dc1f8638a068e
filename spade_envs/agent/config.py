"""How rollouts are run (:class:`RolloutConfig`) and where their time went (:class:`RolloutStats`).

Both are re-exported by :mod:`spade_envs.agent.rollout` and :mod:`spade_envs.agent`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..error import SpadeError
from ..llm.base import SamplingParams
from .failures import FailureCounts

if TYPE_CHECKING:
    from ..sandbox.config import SandboxConfig

__all__ = ["RolloutConfig", "RolloutStats"]


@dataclass(frozen=True)
class RolloutConfig:
    """How plays are run.

    Attributes:
        isolation: ``"sandbox"`` (default: every environment in its own sandbox worker)
            or ``"none"`` (in this process, as this user). With ``"none"`` only the
            packaged seeds' exact code runs unless ``trust_code`` is set.
        trust_code: With ``isolation="none"``: also run code that is NOT a packaged seed
            (designer-written, imported, registered by anyone) in this process, with
            this user's rights and no sandbox. Off by default; set it only for code you
            wrote or reviewed. Without it such a run raises
            :class:`~spade_envs.error.UntrustedCodeError` before anything is played.
        step_timeout: Wall-clock seconds for one reset/step/hint call; past it the play
            ends with outcome ``"timeout"``. In the sandbox the worker is killed; in
            this process the call is interrupted by ``SIGALRM`` (main thread only, and
            only between Python bytecodes: see :mod:`spade_envs.agent.deadline`).
        load_timeout: Seconds for loading an environment module in the sandbox.
        max_concurrent: Most plays live at once (the batch size of the model call);
            1 plays one episode at a time.
        max_turns: Cap on model turns per play (``None``: the environment's own limit;
            the engine also stops at 200 turns, the validator's ceiling).
        temperature: Sampling temperature (0: greedy).
        top_p: Nucleus sampling mass.
        max_tokens: The most tokens of one reply.
        seed: Run seed of the sampling seeds (``None``: unseeded sampling).
        env_seed: Reset seed of play 0; play ``i`` resets with ``env_seed + i``.
        hint_source: ``"env"``: the environment's ``hint()`` after reset; ``"written"``:
            the model-written hint stored in the registry.
        opponent: For games: ``"best"`` or ``"random"`` (a fixed opponent; the model plays
            ``player_0``) or ``"self"`` (the model plays every seat).
        error_penalty: The ``penalty`` recorded on a play whose environment hung or crashed.
        max_action_chars: Replies longer than this are cut before they reach the
            environment (outcome ``"too_long"``).
        sandbox: Limits of the sandbox workers (default ``SandboxConfig()``); its timeouts
            are replaced by ``step_timeout``/``load_timeout``.
        audit_share: Replay audits (:mod:`spade_envs.runtime.audit`): every winning
            sandboxed play is replayed in a fresh worker, and this share of the others;
            a divergence quarantines the version and voids its plays of the run
            (outcome ``audit_divergence``). ``None`` turns audits off.
        episodes_per_worker: Most episodes one sandboxed instance plays: a play that
            ended normally hands its worker to the next queued play of the same version
            and hint (reset with that play's seed). A fresh worker all the same after a
            failure, between hinted and unhinted plays (``hint()`` ran in one), and for
            games. 1 (the default) opens a fresh worker for every play. Every play in a
            reused worker is replayed by the audits in a fresh one, whatever
            ``audit_share`` (an environment may behave differently once it is not its
            worker's first episode), so reuse saves no worker start-ups overall: it moves
            them off the model's path; with audits off (``audit_share=None``) every play
            gets a fresh worker.
    """

    isolation: Literal["sandbox", "none"] = "sandbox"
    trust_code: bool = False
    step_timeout: float = 10.0
    load_timeout: float = 20.0
    max_concurrent: int = 32
    max_turns: int | None = None
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 256
    seed: int | None = 0
    env_seed: int = 0
    hint_source: Literal["env", "written"] = "env"
    opponent: Literal["best", "random", "self"] = "best"
    error_penalty: float = 1.0
    max_action_chars: int = 8192
    sandbox: SandboxConfig | None = None
    audit_share: float | None = 0.1
    episodes_per_worker: int = 1

    def __post_init__(self) -> None:
        def bad(what: str) -> SpadeError:
            return SpadeError(f"RolloutConfig.{what}")

        if self.isolation not in ("sandbox", "none"):
            raise bad(f"isolation must be 'sandbox' or 'none', got {self.isolation!r}.")
        if not isinstance(self.trust_code, bool):
            raise bad(f"trust_code must be True or False, got {self.trust_code!r}.")
        for name in ("step_timeout", "load_timeout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise bad(f"{name} must be positive seconds, got {value!r}.")
        if not isinstance(self.max_concurrent, int) or self.max_concurrent < 1:
            raise bad(f"max_concurrent must be a positive int, got {self.max_concurrent!r}.")
        if self.max_turns is not None and (
            not isinstance(self.max_turns, int) or self.max_turns < 1
        ):
            raise bad(f"max_turns must be None or a positive int, got {self.max_turns!r}.")
        if self.hint_source not in ("env", "written"):
            raise bad(f"hint_source must be 'env' or 'written', got {self.hint_source!r}.")
        if self.opponent not in ("best", "random", "self"):
            raise bad(f"opponent must be 'best', 'random' or 'self', got {self.opponent!r}.")
        if not isinstance(self.max_action_chars, int) or self.max_action_chars < 1:
            raise bad(f"max_action_chars must be a positive int, got {self.max_action_chars!r}.")
        # Checks temperature/top_p/max_tokens now, with the llm package's messages.
        SamplingParams(temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens)
        if self.audit_share is not None and (
            isinstance(self.audit_share, bool)
            or not isinstance(self.audit_share, (int, float))
            or not 0.0 <= self.audit_share <= 1.0
        ):
            raise bad(f"audit_share must be None or within [0, 1], got {self.audit_share!r}.")
        if (
            isinstance(self.episodes_per_worker, bool)
            or not isinstance(self.episodes_per_worker, int)
            or self.episodes_per_worker < 1
        ):
            raise bad(
                f"episodes_per_worker must be a positive int, got {self.episodes_per_worker!r}."
            )
        if self.seed is not None and (
            isinstance(self.seed, bool) or not isinstance(self.seed, int)
        ):
            raise bad(f"seed must be an int or None, got {self.seed!r}.")

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["sandbox"] = None if self.sandbox is None else self.sandbox.to_dict()
        return data


@dataclass
class RolloutStats:
    """Where a run's time went (for benchmarks and progress displays).

    Attributes:
        episodes: Plays finished.
        turns: Model turns taken.
        model_calls: Batched model calls made.
        generated_tokens: Tokens the model generated.
        model_seconds: Wall time inside model calls.
        env_seconds: Wall time opening, resetting, stepping and closing environments.
        wall_seconds: Wall time of the whole run.
        failures: The failed plays, by outcome.
        audits: Plays replayed by the audit.
        audit_seconds: Wall time of the replays.
        audit_failures: Replays that could not be run (no evidence either way).
        reused_workers: Plays that took over the worker of an earlier play of the same
            version (see ``RolloutConfig.episodes_per_worker``).
        quarantined: Versions quarantined by this run's audits.
    """

    episodes: int = 0
    turns: int = 0
    model_calls: int = 0
    generated_tokens: int = 0
    model_seconds: float = 0.0
    env_seconds: float = 0.0
    wall_seconds: float = 0.0
    failures: FailureCounts = dataclasses.field(default_factory=FailureCounts)
    audits: int = 0
    audit_seconds: float = 0.0
    audit_failures: int = 0
    reused_workers: int = 0
    quarantined: list[str] = dataclasses.field(default_factory=list)
