"""One seat of a :class:`TextGame` as a single-agent :class:`TextEnv`.

The agent plays ``seat``; every other seat is played by a fixed opponent: the
game's reference policy (``best_move``) or a seeded random legal move. This is how
a game enters single-agent tooling (Gymnasium checks, the validator, vector envs)
and how an agent is trained against a fixed opponent.
"""

from __future__ import annotations

import copy
from typing import Literal

from ..error import SpadeError
from .text_env import ACTION_PARSED, StepResult, TextEnv
from .text_game import TextGame

__all__ = ["GameSeatEnv"]

Opponent = Literal["best", "random"]


class GameSeatEnv(TextEnv):
    """Play ``seat`` of ``game`` against a fixed opponent.

    Args:
        game: The game instance to wrap (this env owns it from now on).
        seat: Index of the agent's seat (0 moves first).
        opponent: ``"best"`` (the game's ``best_move``) or ``"random"`` (a legal move
            drawn from the env's seeded ``rng``).
    """

    def __init__(self, game: TextGame, seat: int = 0, opponent: Opponent = "best"):
        if not isinstance(game, TextGame):
            raise SpadeError(f"GameSeatEnv wraps a TextGame, got {type(game).__name__}.")
        if not 0 <= seat < game.num_players:
            raise SpadeError(f"seat must be in 0..{game.num_players - 1}, got {seat}.")
        if opponent not in ("best", "random"):
            raise SpadeError(f"opponent must be 'best' or 'random', got {opponent!r}.")
        self.game = game
        self.seat = seat
        self.opponent = opponent
        self.agent = game.possible_agents[seat]
        self.skill = game.skill
        self.description = f"{game.description} You play {self.agent}."
        self.reward_range = game.reward_range
        # Every game move may be ours, so the env's own turn budget is the game's.
        self.max_turns = game.max_turns
        super().__init__(render_mode=game.render_mode)

    # The seat's own reward arrives whenever any move ends the game.
    def _advance_opponents(self) -> float:
        reward = 0.0
        self._opponent_moves: list[str] = []
        while not self.game.game_over and self.game.agent_selection != self.agent:
            current = self.game.agent_selection
            if self.opponent == "best":
                move = self.game.best_move(current)
            else:
                legal = self.game.legal_moves(current)
                move = self.rng.choice(legal) if legal else ""
            self.game.step(move)
            self._opponent_moves.append(f"{current} played: {move}")
            reward += self.game.rewards.get(self.agent, 0.0)
        return reward

    def _seat_view(self) -> str:
        view = self.game.observe(self.agent) if self.game.agents else "The game is over."
        return "\n".join([*self._opponent_moves, view])

    def _reset(self) -> str:
        self.game.reset(seed=self.rng.randrange(2**31))
        self._opening_reward = self._advance_opponents()
        if self.game.game_over:
            raise SpadeError(f"{type(self.game).__name__} ended before {self.agent} could move.")
        return self._seat_view()

    def _step(self, action: str) -> StepResult:
        self.game.step(action)
        # Read before the opponents move: the game reports whether it took our move.
        info = self.game.infos.get(self.agent)
        parsed = info.get(ACTION_PARSED, True) if isinstance(info, dict) else True
        reward = self.game.rewards.get(self.agent, 0.0) + self._advance_opponents()
        if self._opening_reward:
            reward, self._opening_reward = reward + self._opening_reward, 0.0
        done = self.game.game_over
        observation = self._seat_view()
        if done:
            final = self.game.infos.get(self.agent, {}).get("final_reward", reward)
            observation = f"{observation}\nGame over. Your result: {final}."
        return observation, reward, done and not self._out_of_time(), {ACTION_PARSED: parsed}

    def _out_of_time(self) -> bool:
        return any(self.game.truncations.values()) and not any(self.game.terminations.values())

    def hint(self) -> str:
        return self.game.hint(self.agent)

    def solution(self) -> list[str]:
        """The seat's moves if it plays ``best_move`` against this opponent from the reset state."""
        probe = copy.deepcopy(self)
        moves: list[str] = []
        while probe._ended is None and probe.turn < probe.max_turns:
            move = probe.game.best_move(probe.agent)
            moves.append(move)
            probe.step(move)
        return moves

    def close(self) -> None:
        self.game.close()
        super().close()
