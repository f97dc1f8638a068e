"""One play of a pinned registry version, as every integration drives it.

A framework hands us a dataset row (a pinned ID, its source hash, a seed) and model
replies; :class:`RegistryEnvironment` opens the version through the door
(:mod:`spade_envs.runtime.door`: sandboxed, trust decided there), resets it with the
seed, steps it with each reply, and scores the episode: its return, or None for a play
that failed, counted by kind in :class:`PlayCounts` (never a zero). A win is audited
before it counts. TRL (:mod:`spade_envs.integrations.trl`) calls it as its environment;
verifiers (:mod:`spade_envs.integrations.verifiers`) drives it from its ``Env.run``.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..agent.failures import failure_outcome, finite_reward
from ..agent.policy import with_hint
from ..core.wins import is_won
from ..error import SpadeError
from ..registry.pins import Pin, Query, pin, require_validated

__all__ = ["INTRO", "PlayCounts", "RegistryEnvironment", "check_row", "pin_envs"]

#: The first user message of a plain chat play: the task and the first observation.
INTRO = "Task: {description}\n\n{observation}"


@dataclass
class PlayCounts:
    """The plays of one factory: finished, won, and failed by kind (shared by every
    environment the factory made; safe across threads).

    Attributes:
        plays: Plays scored (``get_reward`` called).
        wins: Plays that reached the environment's win.
        failed: Failed plays by :data:`~spade_envs.agent.failures.FAILURE_OUTCOMES` kind.
        by_env: Plays by pinned ID (``spade/<Name>-v<N>``).
    """

    plays: int = 0
    wins: int = 0
    failed: Counter = field(default_factory=Counter)
    by_env: Counter = field(default_factory=Counter)
    #: Wall seconds spent in environment calls (resets, steps, hints, worker starts).
    env_seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, env_id: str, won: bool, failure: str | None) -> None:
        with self._lock:
            self.plays += 1
            self.wins += int(won)
            self.by_env[env_id] += 1
            if failure is not None:
                self.failed[failure] += 1

    def add_seconds(self, seconds: float) -> None:
        with self._lock:
            self.env_seconds += seconds

    def metrics(self) -> dict[str, float]:
        """Flat numbers for a trainer's log: ``spade/plays``, ``spade/wins``,
        ``spade/failed``, ``spade/failed_<kind>`` and ``spade/env_seconds``."""
        with self._lock:
            out = {
                "spade/plays": float(self.plays),
                "spade/wins": float(self.wins),
                "spade/failed": float(sum(self.failed.values())),
                "spade/env_seconds": round(self.env_seconds, 3),
            }
            out.update({f"spade/failed_{k}": float(v) for k, v in sorted(self.failed.items())})
            return out


class RegistryEnvironment:
    """Plays of the pinned versions, one at a time (TRL's environment object as it is;
    verifiers' ``Env.run`` drives one per rollout).

    Every public method but ``reset`` and ``get_reward`` is a tool to TRL: keep helpers
    private.

    Args:
        pins: The versions it may play, by pinned ID.
        hint: Append the environment's hint to the first observation (from a twin in a
            fresh worker, so it cannot change the episode).
        counts: Where finished and failed plays are counted.
        registry: Where the versions are stored.
        allow_unvalidated: Also play versions that are not validated.
        intro: The first message: ``{description}`` and ``{observation}`` are filled in.
    """

    def __init__(
        self,
        pins: dict[str, Pin],
        *,
        hint: bool,
        counts: PlayCounts,
        registry: Any,
        allow_unvalidated: bool = False,
        intro: str = INTRO,
    ) -> None:
        self._intro = intro
        self._allow_unvalidated = allow_unvalidated
        self._rng = random.Random()  # the audits' wrong answers: unpredictable on purpose
        self._pins = pins
        self._hint = hint
        self._counts = counts
        self._registry = registry
        self._env: Any = None
        self.env_id = ""
        self.seed: int | None = None
        self.episode_return = 0.0
        self.done = False
        self.won = False
        self.failure: str | None = None
        #: The rewards of the episode's steps, in order.
        self.rewards: list[float] = []
        self._last_reward: float | None = None

    def reset(self, env_id: str | None = None, seed: int | None = None, **row: Any) -> str:
        """Start an episode of ``env_id`` (the row's pinned ID) from ``seed``.

        TRL passes the whole dataset row; ``sha256``, when the row has it, must be the
        pinned version's (a row from another registry is refused, never played).
        """
        self._close()
        check_row(env_id, seed, row.get("sha256"))
        chosen = env_id or next(iter(self._pins))
        if chosen not in self._pins:
            raise SpadeError(
                f"{chosen!r} is not one of this factory's environments "
                f"({', '.join(self._pins)}); build the dataset from the same list."
            )
        pinned = self._pins[chosen]
        expected = row.get("sha256")
        if expected and expected != pinned.sha256:
            raise SpadeError(
                f"The row's sha256 {expected[:12]} is not {chosen}'s ({pinned.sha256[:12]}): "
                "the dataset was built against another registry."
            )
        self.env_id, self.seed = pinned.env_id, seed
        self.episode_return, self.done, self.won, self.failure = 0.0, False, False, None
        self.rewards = []
        from ..runtime import open_record

        record = self._registry.get(pinned.env_id)
        require_validated(record, allow_unvalidated=self._allow_unvalidated, again=True)
        started = time.perf_counter()
        try:
            self._env = open_record(record)
            observation, _info = self._env.reset(seed=seed)
            text = str(observation)
            if self._hint:
                hint = str(self._env.hint() or record.hint or "")
                text = with_hint(text, hint) if hint else text
        except SpadeError as exc:
            self._fail(exc)
            return f"The environment could not start ({self.failure}); there is nothing to play."
        finally:
            self._counts.add_seconds(time.perf_counter() - started)
        return self._intro.format(description=record.description, observation=text)

    def act(self, action: str) -> str:
        """Send one move or answer to the environment and read what it shows next.

        Args:
            action: The move or answer, in the form the task asks for (for example
                \\boxed{42}).

        Returns:
            What the environment shows after the move.
        """
        if self.done:
            raise ValueError("The episode is over; no more moves.")
        started = time.perf_counter()
        try:
            observation, reward, terminated, truncated, _ = self._env.step(str(action))
            self.rewards.append(finite_reward(reward, self.env_id))
            self.episode_return += self.rewards[-1]
        except SpadeError as exc:
            self._fail(exc)
            raise ValueError(f"The environment failed ({self.failure}).") from None
        finally:
            self._counts.add_seconds(time.perf_counter() - started)
        self._last_reward = self.rewards[-1]
        if terminated or truncated:
            self.done = True
            self.won = is_won(
                str(getattr(self._env, "win_rule", "return")),
                total=self.episode_return,
                top=float(self._env.reward_range[1]),
                last_reward=self._last_reward,
                terminated=bool(terminated),
            )
            return f"{observation}\n\nThe episode is over."
        return str(observation)

    def get_reward(self) -> float | None:
        """The episode's return; None for a failed play (counted, never a zero).

        A win is audited first (:func:`spade_envs.runtime.audit.audit_win`): a version
        that cheated once played is quarantined and the play scores None
        (``audit_divergence``); a win no replay could confirm scores None too
        (``audit_failed``)."""
        if self.won and self.failure is None and self._env is not None:
            from ..runtime.audit import audit_win

            result = audit_win(
                self._env,
                self._registry,
                self.env_id,
                self._rng,
                str(getattr(self._env, "win_rule", "return")),
            )
            if result.divergence is not None or result.failed:
                self.failure = "audit_divergence" if result.divergence else "audit_failed"
                self.won = False
        self._counts.add(self.env_id, self.won, self.failure)
        self._close()
        return None if self.failure is not None else self.episode_return

    def _close(self) -> None:
        # Private: TRL offers every public method to the model as a tool.
        """Stop the sandbox worker of the current episode, if any."""
        if self._env is not None:
            try:
                self._env.close()
            except Exception:  # a dead worker is already gone
                pass
            self._env = None

    def _fail(self, exc: BaseException) -> None:
        self.failure = failure_outcome(exc)
        self.done = True
        self._close()


def check_row(env_id: Any, seed: Any, sha256: Any) -> None:
    """A dataset row's fields, checked before anything is opened (a bad row is the
    dataset's fault, never counted against an environment)."""
    if env_id is not None and not isinstance(env_id, str):
        raise SpadeError(f"The row's env_id must be a string ID, not {type(env_id).__name__}.")
    if sha256 is not None and not isinstance(sha256, str):
        raise SpadeError(f"The row's sha256 must be a hex string, not {type(sha256).__name__}.")
    if seed is not None and (
        not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63
    ):
        raise SpadeError(f"The row's seed must be a whole number from 0 to 2**63-1, not {seed!r}.")


def pin_envs(
    registry: Any, envs: Iterable[str] | Query, allow_unvalidated: bool = False
) -> dict[str, Pin]:
    """Pin every ID in ``envs``, or every version a :class:`~spade_envs.registry.pins.Query`
    selects (a bare name resolves to its newest validated version, and says so on
    stdout); SpadeError for an empty selection or a version refused."""
    if isinstance(envs, Query):
        envs = envs.ids(registry)
    out = {}
    for ident in envs:
        pinned = pin(registry, ident, allow_unvalidated=allow_unvalidated)
        if pinned.resolved:
            print(pinned.note(), flush=True)
        out[pinned.env_id] = pinned
    if not out:
        raise SpadeError("No environments given: pass at least one spade/<Name>-v<N>.")
    return out
