"""What a sandboxed episode did, as the parent saw it: reset seeds and episode traces.

Two parent-side records that make a play reproducible whatever the environment's code:

- :class:`ResetSeeds`: every reset carries a seed. A seedless reset (and every autoreset
  of a vector env) draws one here, from a generator seeded by the last explicit seed, so
  ``reset(seed=123)`` then ``reset()`` is the same episode in every process (Gymnasium's
  seeding contract) and the environment never sees ``None``.
- :class:`EpisodeTrace`: the seed, the actions and what came back (rewards, flags and a
  digest of each observation), which a replay audit plays again in a fresh worker.
"""

from __future__ import annotations

import hashlib
import random
import secrets
from dataclasses import dataclass, field
from typing import Any

from ..error import SpadeError

__all__ = ["MAX_SEED", "EpisodeTrace", "ResetSeeds", "StepRecord", "digest"]

#: Seeds a seedless reset draws lie in ``[0, MAX_SEED)`` (what Gymnasium's own
#: ``seeding.np_random`` accepts, and what every seed's ``random.Random`` takes).
MAX_SEED = 2**31


def digest(text: str) -> str:
    """A short fingerprint of an observation (what a replay compares)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class ResetSeeds:
    """The seed of every reset of one environment (or one copy of a vector env).

    Args:
        entropy: Seeds the generator used before any explicit seed; default: fresh
            randomness (as Gymnasium's unseeded first reset).
    """

    def __init__(self, entropy: int | None = None) -> None:
        self._rng = random.Random(secrets.randbits(64) if entropy is None else entropy)

    def next(self, seed: Any) -> int:
        """The seed this reset uses: ``seed`` itself, or one drawn when it is None.

        Raises:
            SpadeError: ``seed`` is neither None nor a non-negative int.
        """
        if seed is None:
            return self._rng.randrange(MAX_SEED)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise SpadeError(f"reset(seed=...) takes a non-negative int or None, got {seed!r:.60}.")
        self._rng = random.Random(seed)
        return seed


@dataclass(frozen=True)
class StepRecord:
    """One step of a trace: the action sent and what the environment answered (for a
    game: the move, ``player_0``'s reward and flags, and a digest of the whole state)."""

    action: str | None  # None: a game's step of an agent that is done
    reward: float
    terminated: bool
    truncated: bool
    observation: str  # digest of the observation
    agent: str = ""  # a game's: the seat that moved


@dataclass
class EpisodeTrace:
    """One episode of a sandboxed environment, for a replay audit.

    Attributes:
        seed: The reset seed (always an int: seedless resets drew one).
        options: The reset options.
        observation: Digest of the first observation.
        steps: Every step, in order.
    """

    seed: int
    options: dict[str, Any] | None
    observation: str
    steps: list[StepRecord] = field(default_factory=list)

    @property
    def episode_return(self) -> float:
        return sum(step.reward for step in self.steps)

    @property
    def actions(self) -> list[str | None]:
        return [step.action for step in self.steps]
