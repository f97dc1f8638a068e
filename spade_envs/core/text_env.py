"""The single-agent text environment protocol.

A :class:`TextEnv` is a ``gymnasium.Env[str, str]``: the observation is text for a
language model and the action is the model's reply. Subclasses write two small
hooks and the base class does the bookkeeping every environment needs (seeding,
turn counting, truncation at ``max_turns``, checking what the hooks return,
staying well-behaved after the episode ends)::

    class Guess(TextEnv):
        skill = "math"
        description = "Guess a hidden number from 1 to 100; feedback says higher or lower."
        max_turns = 8

        def _reset(self) -> str:
            self.secret = self.rng.randint(1, 100)
            return "I picked a number from 1 to 100. Guess it: answer with \\\\boxed{n}."

        def _step(self, action: str):
            guess = parse_number(extract_answer(action))
            if guess == self.secret:
                return "Correct!", 1.0, True
            higher = guess is not None and guess < self.secret
            return ("Higher." if higher else "Lower."), 0.0, False

        def hint(self) -> str:
            return "The number is even." if self.secret % 2 == 0 else "The number is odd."

        def solution(self) -> list[str]:
            return [boxed(self.secret)]

The return of an episode (the sum of its rewards) lies in ``reward_range``; an
episode is *won* when its return reaches ``reward_range[1]``.

Every step's ``info`` says whether the environment understood the action:
``info["action_parsed"]`` is ``True`` unless ``_step`` answered with
:meth:`TextEnv.not_understood` (no command recognised, an unknown command or name, an
answer not in the asked-for form). A wrong answer that was understood is parsed. A
trainer counts parsed actions as well-formed, whether or not they were ``\\boxed``.
"""

from __future__ import annotations

import math
import random
from typing import Any, ClassVar, SupportsFloat

import gymnasium as gym
import numpy as np

from ..error import EnvContractError
from .metadata import apply_knobs
from .spaces import DEFAULT_ACTION_LENGTH, UnicodeText
from .wins import is_won

__all__ = ["ACTION_PARSED", "TextEnv", "StepResult", "clip_text", "TRUNCATION_MARK"]

#: What :meth:`TextEnv._step` returns: ``(observation, reward, terminated)`` or with an info dict.
StepResult = tuple  # (str, float, bool) | (str, float, bool, dict)

TRUNCATION_MARK = "\n[... observation truncated ...]"

#: The step ``info`` key that says whether the environment understood the action (a bool).
ACTION_PARSED = "action_parsed"


def clip_text(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, marking the cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(TRUNCATION_MARK))] + TRUNCATION_MARK


class TextEnv(gym.Env[str, str]):
    """Base class of text environments (see the module docstring for an example).

    Class attributes (the metadata a designer must fill in):
        skill: Skill family, e.g. ``"math"`` or ``"planning"``.
        description: What the agent must do, in one paragraph.
        max_turns: The episode is truncated after this many steps.
        reward_range: Lowest and highest episode return; a win reaches the highest.
        knobs: Difficulty knobs and defaults; ``MyEnv(size=5)`` overrides one and the
            value is available as ``self.size``.

    Attributes available to subclasses:
        rng: A ``random.Random`` reseeded from ``np_random`` at every reset, so
            standard-library-only code is deterministic under ``reset(seed=...)``.
        turn: Steps taken in the current episode.
        options: The ``options`` dict passed to the last reset.
    """

    skill: ClassVar[str] = "general"
    description: ClassVar[str] = ""
    max_turns: ClassVar[int] = 1
    reward_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    knobs: ClassVar[dict[str, Any]] = {}
    #: When an episode is won (:data:`~spade_envs.core.wins.WIN_RULES`): our protocol's
    #: ``return``; SPADE-dialect games use SPADE's ``final_reward``.
    win_rule: ClassVar[str] = "return"
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 1}

    #: Longest observation the environment may return; longer ones are clipped (and the
    #: validator rejects an environment whose observations get clipped).
    max_observation_length: ClassVar[int] = 8192

    def __init__(self, render_mode: str | None = None, **knobs: Any):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise EnvContractError(
                f"render_mode={render_mode!r} is not supported by {type(self).__name__}; "
                f"use one of {self.metadata['render_modes']} or None."
            )
        apply_knobs(self, knobs)
        self.render_mode = render_mode
        self.observation_space = UnicodeText(self.max_observation_length)
        self.action_space = UnicodeText(DEFAULT_ACTION_LENGTH)
        self.rng = random.Random(0)
        self.turn = 0
        self.options: dict[str, Any] = {}
        self.episode_return = 0.0
        self._ended: tuple[bool, bool] | None = None
        self._last_observation = ""
        self._last_reward = 0.0

    # ----- hooks for subclasses -------------------------------------------------------------
    def _reset(self) -> str:
        """Set up a new episode from ``self.rng`` and return the first observation."""
        raise NotImplementedError(f"{type(self).__name__} must implement _reset() -> str")

    def _step(self, action: str) -> StepResult:
        """Apply one action: return ``(observation, reward, terminated)`` (optionally + info)."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement _step(action) -> (obs, reward, terminated)"
        )

    def not_understood(
        self, message: str, *, reward: float = 0.0, terminated: bool = False
    ) -> StepResult:
        """The step result for an action this environment could not read.

        ``return self.not_understood("Write 'weigh 1,2 vs 3,4' or name the coin.")``
        answers ``message`` and reports ``info["action_parsed"] = False``, so the
        trainer does not count the action as well-formed. Use it where the action names
        no known command, an unknown item, or an answer not in the asked-for form; an
        understood action that the rules refuse (out of range, no uses left) or a wrong
        answer is parsed: return it as usual.

        Args:
            message: The observation, usually how to write the action.
            reward: The step's reward (0 unless the environment penalises such actions).
            terminated: Whether the episode ends (e.g. the last attempt was wasted).

        Returns:
            ``(message, reward, terminated, {"action_parsed": False})``.
        """
        return message, reward, terminated, {ACTION_PARSED: False}

    def hint(self) -> str:
        """Privileged help derived from the hidden state (valid after reset)."""
        raise NotImplementedError(f"{type(self).__name__} must implement hint() -> str")

    def solution(self) -> list[str]:
        """Actions that win from the state right after the last reset."""
        raise NotImplementedError(f"{type(self).__name__} must implement solution() -> list[str]")

    # ----- the Gymnasium API ----------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode; the same ``seed`` always gives the same episode."""
        super().reset(seed=seed)
        self.rng = random.Random(int(self.np_random.integers(0, 2**62)))
        self.turn = 0
        self.episode_return = 0.0
        self._ended = None
        self.options = dict(options or {})
        if type(self)._reset is TextEnv._reset and type(self).reset is not TextEnv.reset:
            # A subclass that overrides reset() itself calls super().reset(seed=seed) for
            # the seeding and bookkeeping above, as with gymnasium.Env; it makes its own
            # first observation.
            return "", self._reset_info()
        observation = self._reset()
        if not isinstance(observation, str):
            raise EnvContractError(
                f"{type(self).__name__}._reset() must return the first observation as str, "
                f"got {type(observation).__name__}."
            )
        self._last_observation = clip_text(observation, self.max_observation_length)
        return self._last_observation, self._reset_info()

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Take one action. After the episode has ended this returns the final
        observation again with reward 0 (the action ignored, so not parsed) instead of
        raising, so a sloppy caller cannot crash a batch of rollouts."""
        if not isinstance(action, str):
            action = "" if action is None else str(action)
        if self._ended is not None:
            terminated, truncated = self._ended
            info = {"turn": self.turn, "episode_over": True, ACTION_PARSED: False}
            return self._last_observation, 0.0, terminated, truncated, info
        self.turn += 1
        observation, reward, terminated, extra = self._check_step(self._step(action))
        truncated = not terminated and (self.turn >= self.max_turns or self._out_of_time())
        self.episode_return += reward
        self._last_observation = clip_text(observation, self.max_observation_length)
        self._last_reward = reward
        info: dict[str, Any] = {"turn": self.turn, **extra}
        if terminated or truncated:
            self._ended = (terminated, truncated)
            info["success"] = self.won
        return self._last_observation, reward, terminated, truncated, info

    def render(self) -> str | None:
        """The last observation, for ``render_mode="ansi"``."""
        if self.render_mode == "ansi":
            return self._last_observation
        return None

    # ----- helpers --------------------------------------------------------------------------
    @property
    def won(self) -> bool:
        """Whether the current episode is won under :attr:`win_rule`."""
        terminated = self._ended is not None and self._ended[0]
        return is_won(
            self.win_rule,
            total=self.episode_return,
            top=self.reward_range[1],
            last_reward=self._last_reward if self.turn else None,
            terminated=terminated,
        )

    def _out_of_time(self) -> bool:
        """Whether the episode must be truncated now although turns remain (default: no)."""
        return False

    def _reset_info(self) -> dict[str, Any]:
        return {"turn": 0}

    def _check_step(self, result: Any) -> tuple[str, float, bool, dict[str, Any]]:
        name = type(self).__name__
        if not isinstance(result, tuple) or len(result) not in (3, 4):
            raise EnvContractError(
                f"{name}._step() must return (observation, reward, terminated) or "
                f"(observation, reward, terminated, info); got {type(result).__name__} "
                f"{result!r:.80}."
            )
        observation, reward, terminated = result[:3]
        extra = result[3] if len(result) == 4 else {}
        if not isinstance(observation, str):
            raise EnvContractError(
                f"{name}._step() returned a {type(observation).__name__} observation; "
                "it must be str."
            )
        if isinstance(reward, bool) or not isinstance(reward, (int, float)):
            try:
                reward = float(reward)  # numpy scalars
            except (TypeError, ValueError):
                raise EnvContractError(
                    f"{name}._step() returned reward {reward!r}; it must be a number."
                ) from None
        reward = float(reward)
        low, high = self.reward_range
        if not math.isfinite(reward) or not low - 1e-9 <= reward <= high + 1e-9:
            raise EnvContractError(
                f"{name}._step() returned reward {reward!r}, "
                f"outside reward_range {self.reward_range}."
            )
        if not isinstance(extra, dict):
            raise EnvContractError(
                f"{name}._step() returned info of type {type(extra).__name__}; use a dict."
            )
        extra = dict(extra)
        # A step that does not say otherwise understood its action.
        parsed = extra.get(ACTION_PARSED, True)
        if isinstance(parsed, np.bool_):
            parsed = bool(parsed)
        if not isinstance(parsed, bool):
            raise EnvContractError(
                f"{name}._step() returned info[{ACTION_PARSED!r}] = {parsed!r:.80}; it must be "
                "True or False. Return self.not_understood(message) for an action the "
                "environment could not read, and leave the key out otherwise."
            )
        extra[ACTION_PARSED] = parsed
        return observation, reward, bool(terminated), extra
