"""Playing whole episodes with simple policies (scripts, repeats, random text).

Used by the CLI, the tests and the validator's feasibility checks: does the
reference solution win, and do trivial policies fail?
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .spaces import UnicodeText
from .wins import is_won

__all__ = ["Transition", "Episode", "play_episode", "scripted", "repeated", "random_text"]

#: A policy maps (observation, turn index) to an action.
Policy = Callable[[str, int], str]


@dataclass(frozen=True)
class Transition:
    """One step: the action taken and what the environment answered."""

    action: str
    observation: str
    reward: float
    terminated: bool
    truncated: bool


@dataclass
class Episode:
    """A played episode: the first observation and every transition."""

    seed: int | None
    first_observation: str
    transitions: list[Transition] = field(default_factory=list)
    reward_range: tuple[float, float] = (0.0, 1.0)
    win_rule: str = "return"

    @property
    def total_reward(self) -> float:
        return sum(t.reward for t in self.transitions)

    @property
    def ended(self) -> bool:
        return bool(self.transitions) and (
            self.transitions[-1].terminated or self.transitions[-1].truncated
        )

    @property
    def won(self) -> bool:
        """Whether the episode is won under its environment's rule (see :mod:`.wins`)."""
        last = self.transitions[-1] if self.transitions else None
        return is_won(
            self.win_rule,
            total=self.total_reward,
            top=self.reward_range[1],
            last_reward=None if last is None else last.reward,
            terminated=bool(last and last.terminated),
        )

    def trace(self) -> list[tuple[Any, ...]]:
        """A comparable summary, for determinism checks."""
        return [self.first_observation] + [
            (t.observation, t.reward, t.terminated, t.truncated) for t in self.transitions
        ]


def scripted(actions: Sequence[str], *, then: str = "") -> Policy:
    """Play ``actions`` in order, then ``then`` for every later turn."""
    actions = list(actions)
    return lambda _obs, turn: actions[turn] if turn < len(actions) else then


def repeated(action: str) -> Policy:
    """Play the same action every turn."""
    return lambda _obs, _turn: action


def random_text(seed: int, max_length: int = 64) -> Policy:
    """Play seeded random Unicode strings (see :class:`UnicodeText`)."""
    space = UnicodeText(4096, sample_max_length=max_length, seed=int(np.uint32(seed)))
    return lambda _obs, _turn: space.sample()


def play_episode(
    env: Any,
    policy: Policy | Sequence[str],
    *,
    seed: int | None = None,
    max_steps: int | None = None,
    options: dict[str, Any] | None = None,
) -> Episode:
    """Reset ``env`` with ``seed`` and play ``policy`` until the episode ends.

    Args:
        env: A ``TextEnv`` (any ``gymnasium.Env[str, str]`` works).
        policy: A callable ``(observation, turn) -> action`` or a list of actions
            (after the list runs out the policy sends empty actions).
        seed: Seed of the reset.
        max_steps: Safety bound on steps (default: the env's ``max_turns`` + 1, so an
            env that fails to end its episode shows up as an episode that did not end).
        options: Passed to ``reset``.
    """
    if not callable(policy):
        policy = scripted(policy)
    observation, _ = env.reset(seed=seed, options=options)
    limit = max_steps if max_steps is not None else int(getattr(env, "max_turns", 100)) + 1
    episode = Episode(
        seed=seed,
        first_observation=observation,
        reward_range=tuple(getattr(env, "reward_range", (0.0, 1.0))),
        win_rule=str(getattr(env, "win_rule", "return")),
    )
    for turn in range(limit):
        action = policy(observation, turn)
        observation, reward, terminated, truncated, _ = env.step(action)
        episode.transitions.append(
            Transition(action, observation, float(reward), bool(terminated), bool(truncated))
        )
        if terminated or truncated:
            break
    return episode
