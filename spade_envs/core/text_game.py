"""Turn-based multi-player text games (PettingZoo AEC).

A :class:`TextGame` is a PettingZoo ``AECEnv`` whose seats observe and act in text.
Subclasses write five hooks; the base class keeps PettingZoo's bookkeeping
(agent selection, rewards, terminations, dead steps) right::

    _reset()                   set up a game from self.rng
    _observe(agent) -> str     what ``agent`` sees now
    _move(agent, action)       apply a move; return None while the game goes on, or a
                               {agent: reward} dict when it ends; raise IllegalMove
                               for an illegal or unreadable move (the player loses
                               its turn, and ``infos[agent]["action_parsed"]`` is False)
    legal_moves(agent)         the legal moves now (used by random players and checks)
    best_move(agent) -> str    a strong reference move (the "solution" policy)
    hint(agent) -> str         privileged help for ``agent``

:meth:`winning_line` plays ``best_move`` for every seat on a copy of the game and
returns ``agent``'s moves when that line wins for ``agent``.
"""

from __future__ import annotations

import copy
import random
from typing import Any, ClassVar

import numpy as np
from gymnasium.utils import seeding
from pettingzoo import AECEnv

from ..error import EnvContractError, IllegalMove
from .answers import extract_answer
from .metadata import apply_knobs
from .spaces import DEFAULT_ACTION_LENGTH, DEFAULT_OBSERVATION_LENGTH, TextObservation, UnicodeText
from .text_env import ACTION_PARSED, clip_text

__all__ = ["TextGame"]


class TextGame(AECEnv):
    """Base class of turn-based text games for two or more players.

    Class attributes:
        skill, description, knobs: as for :class:`~spade_envs.core.text_env.TextEnv`.
        num_players: Number of seats (``player_0`` ... ``player_{n-1}``).
        max_turns: The game is truncated after this many moves in total.
        reward_range: Final reward of a seat: lowest (loss) to highest (win).
    """

    skill: ClassVar[str] = "general"
    description: ClassVar[str] = ""
    num_players: ClassVar[int] = 2
    max_turns: ClassVar[int] = 20
    reward_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    knobs: ClassVar[dict[str, Any]] = {}
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi"],
        "name": "text_game",
        "is_parallelizable": False,
    }

    def __init__(self, render_mode: str | None = None, **knobs: Any):
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise EnvContractError(
                f"render_mode={render_mode!r} is not supported by {type(self).__name__}; "
                "use 'ansi' or None."
            )
        if self.num_players < 2:
            raise EnvContractError(f"{type(self).__name__}.num_players must be at least 2.")
        apply_knobs(self, knobs)
        self.render_mode = render_mode
        self.possible_agents = [f"player_{i}" for i in range(self.num_players)]
        self.agents = []
        self._observation_spaces = {
            a: UnicodeText(DEFAULT_OBSERVATION_LENGTH) for a in self.possible_agents
        }
        self._action_spaces = {a: UnicodeText(DEFAULT_ACTION_LENGTH) for a in self.possible_agents}
        self._np_random: np.random.Generator | None = None
        self.rng = random.Random(0)
        self.moves = 0
        self.history: list[tuple[str, str]] = []
        self._feedback: dict[str, str] = {}

    # ----- hooks ----------------------------------------------------------------------------
    def _reset(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _reset()")

    def _observe(self, agent: str) -> str:
        raise NotImplementedError(f"{type(self).__name__} must implement _observe(agent) -> str")

    def _move(self, agent: str, action: str) -> dict[str, float] | None:
        raise NotImplementedError(
            f"{type(self).__name__} must implement _move(agent, action) -> None | {{agent: reward}}"
        )

    def legal_moves(self, agent: str) -> list[str]:
        """The legal moves of ``agent`` now, as action strings."""
        raise NotImplementedError(f"{type(self).__name__} must implement legal_moves(agent)")

    def best_move(self, agent: str) -> str:
        """A strong move for ``agent`` now (the reference policy)."""
        raise NotImplementedError(f"{type(self).__name__} must implement best_move(agent)")

    def hint(self, agent: str) -> str:
        """Privileged help for ``agent`` in the current position."""
        raise NotImplementedError(f"{type(self).__name__} must implement hint(agent)")

    def _next_agent(self, agent: str) -> str:
        """Who moves after ``agent`` (round robin unless overridden)."""
        i = self.possible_agents.index(agent)
        return self.possible_agents[(i + 1) % len(self.possible_agents)]

    def _move_parsed(self, agent: str) -> bool:
        """Whether the game took ``agent``'s last move as a move (``True`` unless
        overridden): a game that answers a malformed move with a retry or a penalty,
        rather than :class:`IllegalMove`, says so here, for ``infos[agent]["action_parsed"]``."""
        return True

    # ----- PettingZoo API -------------------------------------------------------------------
    def observation_space(self, agent: str) -> UnicodeText:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> UnicodeText:
        return self._action_spaces[agent]

    @property
    def np_random(self) -> np.random.Generator:
        if self._np_random is None:
            self._np_random, _ = seeding.np_random()
        return self._np_random

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None or self._np_random is None:
            self._np_random, _ = seeding.np_random(seed)
        self.rng = random.Random(int(self._np_random.integers(0, 2**62)))
        self.options = dict(options or {})
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.moves = 0
        self.history = []
        self._feedback = {}
        self._reset()
        self.agent_selection = self.agents[0]

    def observe(self, agent: str) -> str:
        text = self._observe(agent)
        if not isinstance(text, str):
            raise EnvContractError(
                f"{type(self).__name__}._observe() must return str, got {type(text).__name__}."
            )
        note = self._feedback.get(agent)
        if note:
            text = f"{note}\n{text}"
        return TextObservation(clip_text(text, DEFAULT_OBSERVATION_LENGTH))

    def step(self, action: str | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            # Any action of a finished seat is ignored (PettingZoo wants None; be lenient).
            self._was_dead_step(None)
            return
        if not isinstance(action, str):
            action = "" if action is None else str(action)
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        self._feedback.pop(agent, None)
        try:
            outcome = self._move(agent, action)
        except IllegalMove as exc:
            self._feedback[agent] = f"Your last move was illegal ({exc}); you lost that turn."
            outcome, parsed = None, False
        else:
            parsed = self._move_parsed(agent)
        if not isinstance(parsed, (bool, np.bool_)):
            raise EnvContractError(
                f"{type(self).__name__}._move_parsed() must return a bool, got {parsed!r:.80}."
            )
        self.history.append((agent, action))
        self.moves += 1
        if outcome is not None:
            self._finish(outcome)
        elif self.moves >= self.max_turns:
            for a in self.agents:
                self.truncations[a] = True
        # After _finish, which replaces every seat's info: the mover's info says whether
        # the game took its move (a rollout reads it there, also through the sandbox).
        self.infos[agent] = {**self.infos.get(agent, {}), ACTION_PARSED: bool(parsed)}
        self.agent_selection = self._next_agent(agent)
        self._accumulate_rewards()

    def _finish(self, outcome: Any) -> None:
        if not isinstance(outcome, dict) or set(outcome) - set(self.agents):
            raise EnvContractError(
                f"{type(self).__name__}._move() must return None or a dict of rewards keyed by "
                f"agents {self.agents}; got {outcome!r:.80}."
            )
        low, high = self.reward_range
        for a, r in outcome.items():
            r = float(r)
            if not np.isfinite(r) or not low - 1e-9 <= r <= high + 1e-9:
                raise EnvContractError(
                    f"{type(self).__name__} gave {a} reward {r!r}, "
                    f"outside reward_range {self.reward_range}."
                )
            self.rewards[a] = r
        for a in self.agents:
            self.terminations[a] = True
            self.infos[a] = {"final_reward": float(outcome.get(a, 0.0))}

    def render(self) -> str | None:
        if self.render_mode == "ansi" and self.agents:
            return self.observe(self.agent_selection)
        return None

    def close(self) -> None:
        pass

    # ----- helpers --------------------------------------------------------------------------
    @property
    def game_over(self) -> bool:
        return not self.agents or all(
            self.terminations[a] or self.truncations[a] for a in self.agents
        )

    def parse_move(self, action: str) -> str:
        """The move in an action: ``\\boxed{}``/``<answer>`` content or the text, normalised."""
        return " ".join(extract_answer(action).split()).lower()

    def winning_line(self, agent: str) -> list[str] | None:
        """``agent``'s moves when every seat plays :meth:`best_move` from here, if that wins.

        Returns None when the line does not end in the top reward for ``agent``.
        """
        game = copy.deepcopy(self)
        moves: list[str] = []
        total = 0.0
        while not game.game_over:
            current = game.agent_selection
            move = game.best_move(current)
            if current == agent:
                moves.append(move)
            game.step(move)
            total += game.rewards.get(agent, 0.0)
        return moves if total >= self.reward_range[1] - 1e-9 else None
