"""Replay audits: a play is played again in a fresh worker, and must come out the same.

An environment can behave for the validator and cheat once played (a latency fuse, a
seed band, a first-episode trick, a date). Every play through the door records its seed,
actions and what came back (:class:`~spade_envs.sandbox.trace.EpisodeTrace`); an audit
replays a sample of them (every winning play, a share of the rest) in a fresh worker
under the virtual clock, where the same episode must give the same observations,
rewards and flags. A divergence is evidence that the version decides its rewards by
something other than its seed and actions: the caller quarantines it
(``Registry.quarantine``) and voids the plays it gave.

A replay that could not be run (the worker timed out or died, the machine is loaded) is
not evidence: it is counted as an audit that failed, never as a divergence.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..error import EnvCodeError, SandboxError
from ..sandbox.trace import EpisodeTrace, digest

__all__ = ["AuditPlan", "AuditResult", "Divergence", "choose_audits", "replay"]

_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Divergence:
    """Where a replay came out differently from the play.

    Attributes:
        step: 0 for the reset, k for the k-th step.
        field: ``reward``, ``terminated``, ``truncated``, ``observation`` or ``error``.
        played: What the play saw.
        replayed: What the replay saw.
    """

    step: int
    field: str
    played: str
    replayed: str

    def evidence(self, env_id: str, seed: int) -> Any:
        """As the registry stores it (:class:`~spade_envs.registry.QuarantineEvidence`)."""
        from ..registry.records import QuarantineEvidence

        return QuarantineEvidence(
            env_id=env_id,
            seed=seed,
            step=self.step,
            field=self.field,
            played=self.played[:500],
            replayed=self.replayed[:500],
            detail="a replay in a fresh worker diverged at "
            + ("reset" if self.step == 0 else f"step {self.step}"),
            at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )


@dataclass(frozen=True)
class AuditResult:
    """One replay's outcome.

    Attributes:
        divergence: Where it diverged; None when it matched (or could not be run).
        failed: Why the replay could not be run ("" when it ran).
        seconds: Wall time of the replay.
    """

    divergence: Divergence | None = None
    failed: str = ""
    seconds: float = 0.0


def _reward_text(value: float) -> str:
    return f"{value:.12g}"


def replay(trace: EpisodeTrace, opener: Callable[[], Any]) -> AuditResult:
    """Play ``trace`` again in the environment ``opener`` opens (a fresh worker).

    Args:
        trace: The play's record.
        opener: Opens a fresh instance of the same version, knobs and seat.

    Returns:
        The audit's result: a divergence, a failure to replay, or a match.
    """
    started = time.perf_counter()

    def done(**kwargs: Any) -> AuditResult:
        return AuditResult(seconds=time.perf_counter() - started, **kwargs)

    try:
        env = opener()
    except SandboxError as exc:
        return done(failed=f"the replay's worker did not open: {type(exc).__name__}")
    step = 0
    try:
        observation, _info = env.reset(seed=trace.seed, options=trace.options)
        if digest(observation) != trace.observation:
            return done(
                divergence=Divergence(0, "observation", trace.observation, digest(observation))
            )
        for step, played in enumerate(trace.steps, 1):
            observation, reward, terminated, truncated, _info = env.step(played.action)
            checks = (
                ("reward", played.reward, reward),
                ("terminated", played.terminated, terminated),
                ("truncated", played.truncated, truncated),
            )
            for name, was, now in checks:
                same = (
                    math.isclose(was, now, rel_tol=0.0, abs_tol=_TOLERANCE)
                    if name == "reward"
                    else was == now
                )
                if not same:
                    text = _reward_text if name == "reward" else str
                    return done(divergence=Divergence(step, name, text(was), text(now)))
            if digest(observation) != played.observation:
                return done(
                    divergence=Divergence(
                        step, "observation", played.observation, digest(observation)
                    )
                )
    except EnvCodeError as exc:  # the play answered here; the replay's code raised
        return done(divergence=Divergence(step, "error", "an answer", str(exc)[:300]))
    except SandboxError as exc:  # a timeout or a dead worker is no evidence
        return done(failed=f"the replay did not finish: {type(exc).__name__}")
    finally:
        try:
            env.close()
        except Exception:
            pass
    return done()


@dataclass(frozen=True)
class AuditPlan:
    """Which plays are replayed.

    Attributes:
        share: Share of the plays that did not win that are replayed (every winning
            play is): 0 replays winning plays only, 1 replays everything.
        seed: Seeds the choice of that share (None: fresh randomness, so an environment
            cannot know which of its plays are replayed).
    """

    share: float = 0.1
    seed: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.share, (int, float)) or not 0.0 <= self.share <= 1.0:
            from ..error import SpadeError

            raise SpadeError(f"AuditPlan.share must be within [0, 1], got {self.share!r}.")


def choose_audits(won: list[bool], plan: AuditPlan) -> list[int]:
    """Indices of the plays to replay: every winning play and ``plan.share`` of the rest."""
    rng = random.Random(plan.seed) if plan.seed is not None else random.SystemRandom()
    return [i for i, w in enumerate(won) if w or rng.random() < plan.share]


def replace_outcome(episode: Any, divergence: Divergence) -> Any:
    """``episode`` voided by an audit (a dataclass copy with outcome ``audit_divergence``)."""
    where = "reset" if divergence.step == 0 else f"step {divergence.step}"
    return dataclasses.replace(
        episode,
        outcome="audit_divergence",
        won=False,
        error=(
            f"a replay of this version diverged at {where} ({divergence.field}: played "
            f"{divergence.played[:60]}, replayed {divergence.replayed[:60]}); it is quarantined"
        ),
    )
