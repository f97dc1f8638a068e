"""Failed plays, counted by what failed, so that no failure hides as a zero return.

A play that did not reach an honest end is one of :data:`FAILURE_OUTCOMES`:

- ``env_error``: the environment's own code raised, or answered something the protocol
  forbids (a reward that is not a finite number, a malformed step result);
- ``timeout``: a reset or step ran past its wall-clock limit
  (:class:`~spade_envs.error.SandboxTimeout`, :class:`~spade_envs.error.StepTimeout`);
- ``sandbox_crashed``: the sandbox worker died, sent garbage, was already broken or
  could not be started (:class:`~spade_envs.error.SandboxCrashed`,
  :class:`~spade_envs.error.SandboxProtocolError`, :class:`~spade_envs.error.SandboxBroken`,
  :class:`~spade_envs.error.SandboxUnavailable`);
- ``model_error``: the model request failed (says nothing about the environment);
- ``audit_divergence``: a replay of the environment in a fresh worker came out
  differently from a play (:mod:`spade_envs.runtime.audit`): the version is quarantined
  and every play it gave in that run is voided;
- ``audit_failed``: a winning play whose replay could not be run (a timeout or a dead
  worker): a win nobody could confirm does not count.

:class:`FailureCounts` is what rollouts, regret, the CLI and the trainer pass around and
print; :class:`AllPlaysFailedError` is what stops a run in which nothing was played.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from ..core.terminal import terminal_safe
from ..error import (
    EnvContractError,
    SandboxBroken,
    SandboxCrashed,
    SandboxProtocolError,
    SandboxTimeout,
    SandboxUnavailable,
    SpadeError,
    StepTimeout,
)

__all__ = [
    "FAILURE_OUTCOMES",
    "AllPlaysFailedError",
    "FailureCounts",
    "failure_outcome",
    "finite_reward",
    "play_failure",
    "reward_range_top",
]

#: The ways a play can fail, in the order they are printed.
FAILURE_OUTCOMES = (
    "env_error",
    "timeout",
    "sandbox_crashed",
    "model_error",
    "audit_divergence",
    "audit_failed",
)

#: What to do when every play failed, by the most common failure.
_ADVICE = {
    "env_error": "The environments' own code failed: fix them, or play other environments.",
    "timeout": (
        "Every failing play ran past its step timeout: raise the timeout (--step-timeout, "
        "agent.step_timeout) or play on a less loaded machine."
    ),
    "sandbox_crashed": (
        "The sandbox workers died or did not start: check the sandbox on this machine with "
        "`spade-envs play NumberGuess --auto solution` (it prints the worker's own error)."
    ),
    "model_error": (
        "The model could not be asked: check that it loads, or that its server answers."
    ),
    "audit_divergence": (
        "Replays of the environments came out differently from their plays, so they were "
        "quarantined (`spade-envs show <id>` gives the evidence): play other environments."
    ),
    "audit_failed": (
        "The replays that confirm wins could not be run (timeouts or dead workers): raise "
        "the step timeout, or play on a less loaded machine."
    ),
}


def failure_outcome(exc: BaseException) -> str:
    """The failure outcome of an exception that ended a play (never ``model_error``)."""
    if isinstance(exc, (SandboxTimeout, StepTimeout)):
        return "timeout"
    if isinstance(exc, (SandboxCrashed, SandboxProtocolError, SandboxBroken, SandboxUnavailable)):
        return "sandbox_crashed"
    return "env_error"


def play_failure(episode: Any) -> str | None:
    """How ``episode`` failed (one of :data:`FAILURE_OUTCOMES`), or None when it did not.

    A return that is not a finite number counts as ``env_error`` whatever the outcome
    says (an episode built by hand or read from a file): it must never be averaged.
    """
    outcome = str(getattr(episode, "outcome", ""))
    if outcome in FAILURE_OUTCOMES:
        return outcome
    value = getattr(episode, "episode_return", None)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "env_error"
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too large for a float
        finite = False
    return None if finite else "env_error"


def _printable(text: str, limit: int = 400) -> str:
    """One line, control characters escaped (environment text goes to a terminal), cut."""
    return terminal_safe(text, one_line=True, limit=limit)


@dataclass(frozen=True)
class FailureCounts:
    """How many of a run's plays failed, by outcome.

    Attributes:
        plays: Plays counted (failed or not).
        env_error: Plays ended by the environment's own code.
        timeout: Plays whose reset or step ran past its limit.
        sandbox_crashed: Plays whose sandbox worker died or did not start.
        model_error: Plays ended by a failed model request.
        audit_divergence: Plays voided because a replay audit of their version diverged.
        audit_failed: Wins voided because their replay could not be run.
        first_error: ``"<outcome> in <env>: <error>"`` of the first failed play ("" when
            none failed).
    """

    plays: int = 0
    env_error: int = 0
    timeout: int = 0
    sandbox_crashed: int = 0
    model_error: int = 0
    audit_divergence: int = 0
    audit_failed: int = 0
    first_error: str = ""

    @classmethod
    def of(cls, episodes: Iterable[Any]) -> FailureCounts:
        """Count the failures of ``episodes`` (in order: the first failure is kept)."""
        counts = dict.fromkeys(FAILURE_OUTCOMES, 0)
        plays, first = 0, ""
        for episode in episodes:
            plays += 1
            kind = play_failure(episode)
            if kind is None:
                continue
            counts[kind] += 1
            if not first:
                error = str(getattr(episode, "error", "")) or "a return that is not finite"
                first = _printable(f"{kind} in {getattr(episode, 'env_id', '?')}: {error}")
        return cls(plays=plays, first_error=first, **counts)

    @property
    def failed(self) -> int:
        """Failed plays of every kind."""
        return sum(getattr(self, kind) for kind in FAILURE_OUTCOMES)

    @property
    def all_failed(self) -> bool:
        """Whether there were plays and every one of them failed."""
        return self.plays > 0 and self.failed == self.plays

    def by_outcome(self) -> dict[str, int]:
        """``{outcome: count}`` for every outcome of :data:`FAILURE_OUTCOMES`."""
        return {kind: getattr(self, kind) for kind in FAILURE_OUTCOMES}

    def summary(self) -> str:
        """``"2 env_error, 1 timeout"``: the outcomes that occurred ("" when none)."""
        return ", ".join(f"{n} {kind}" for kind, n in self.by_outcome().items() if n)

    def __add__(self, other: FailureCounts) -> FailureCounts:
        if not isinstance(other, FailureCounts):
            return NotImplemented
        summed = {
            f.name: getattr(self, f.name) + getattr(other, f.name)
            for f in fields(self)
            if f.name != "first_error"
        }
        return replace(self, first_error=self.first_error or other.first_error, **summed)

    @classmethod
    def total(cls, parts: Sequence[FailureCounts]) -> FailureCounts:
        """The sum of ``parts`` (the first failure is the first part's that has one)."""
        out = cls()
        for part in parts:
            out = out + part
        return out


def finite_reward(value: Any, env_id: str) -> float:
    """``value`` as a finite float, or :class:`EnvContractError` (ends only that play)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EnvContractError(f"{env_id} gave a reward that is not a number: {value!r:.80}.")
    try:
        number = float(value)
    except OverflowError:  # an int past the float range
        number = math.inf
    if not math.isfinite(number):
        raise EnvContractError(
            f"{env_id} gave a reward (or a return) that is not a finite number: {number!r}. "
            "Rewards must be finite floats, typically in the reward range."
        )
    return number


def reward_range_top(env: Any) -> float:
    """The top of ``env``'s reward range (a win is a return reaching it).

    Raises:
        EnvContractError: The range is not two finite numbers, lowest first and apart: a
            range like ``(0, 0)`` would make every play a win.
    """
    try:
        values = tuple(env.reward_range)
        if len(values) != 2 or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values
        ):
            raise TypeError(f"got {values!r:.80}")
        low, top = (float(v) for v in values)
    except (TypeError, ValueError, OverflowError) as exc:
        raise EnvContractError(f"reward_range must be two numbers: {exc}") from None
    if not (math.isfinite(low) and math.isfinite(top) and low < top):
        raise EnvContractError(
            f"reward_range must be two finite numbers, the lowest first, got ({low!r}, "
            f"{top!r}): a win is a return reaching the top, so the range cannot be empty."
        )
    return top


class AllPlaysFailedError(SpadeError):
    """Every play of a run failed: there is no return, regret or win rate to report.

    Args:
        counts: The failures.
        where: What the plays were, e.g. ``"of iteration 3"``.
        then: A last sentence for the message: what happens because of it.

    Attributes:
        counts: The failures, by outcome.
    """

    def __init__(self, counts: FailureCounts, where: str = "", *, then: str = "") -> None:
        self.counts = counts
        worst = max(FAILURE_OUTCOMES, key=lambda kind: getattr(counts, kind))
        place = f" {where}" if where else ""
        super().__init__(
            f"Every one of the {counts.plays} plays{place} failed ({counts.summary()}), so "
            f"nothing was measured. The first failure: {counts.first_error}. {_ADVICE[worst]}"
            + (f" {then}" if then else "")
        )
