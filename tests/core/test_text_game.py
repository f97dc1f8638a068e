from __future__ import annotations

import warnings

import pytest
from pettingzoo.test import api_test

from spade_envs import EnvContractError, GameSeatEnv, IllegalMove, SpadeError, TextGame
from spade_envs.core.episodes import play_episode


class RaceToTen(TextGame):
    """Players add 1 or 2 to a counter; whoever reaches 10 wins."""

    skill = "math"
    description = "Add 1 or 2 to the counter; reaching 10 wins."
    max_turns = 30

    def _reset(self):
        self.total = self.rng.choice([0, 2, 3, 5, 6])  # not a multiple of 3 away from 10

    def _observe(self, agent):
        return f"Counter at {self.total}; you are {agent}."

    def _move(self, agent, action):
        move = self.parse_move(action)
        if move not in ("1", "2"):
            raise IllegalMove("say 1 or 2")
        self.total += int(move)
        if self.total >= 10:
            return {a: float(a == agent) for a in self.agents}
        return None

    def legal_moves(self, agent):
        return ["1", "2"]

    def best_move(self, agent):
        step = (10 - self.total) % 3
        return str(step or 1)

    def hint(self, agent):
        return "Leave a multiple of three."


def test_passes_pettingzoo_api_test():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(RaceToTen(), num_cycles=200)


def test_illegal_moves_forfeit_the_turn_and_are_explained():
    game = RaceToTen()
    game.reset(seed=0)
    game.step("seven")
    assert game.agent_selection == "player_1"
    game.step("1")
    assert game.observe("player_0").startswith("Your last move was illegal (say 1 or 2)")


def test_truncation_at_max_turns():
    game = RaceToTen()
    game.reset(seed=0)
    for _ in range(game.max_turns):
        game.step("pass")
    assert all(game.truncations.values()) and game.game_over


def test_dead_steps_accept_any_action():
    game = RaceToTen()
    game.reset(seed=1)
    while not all(game.terminations.values()):
        game.step(game.best_move(game.agent_selection))
    game.step("whatever")  # PettingZoo itself would raise here
    game.step(None)
    assert game.agents == []


def test_winning_line_and_seat_env():
    game = RaceToTen()
    game.reset(seed=4)
    line = game.winning_line("player_0")
    assert line and all(m in ("1", "2") for m in line)
    env = GameSeatEnv(RaceToTen(), opponent="random")
    env.reset(seed=4)
    episode = play_episode(env, env.solution(), seed=4)
    assert episode.won
    assert "player_1 played:" in episode.transitions[0].observation


def test_seat_env_validates_arguments():
    with pytest.raises(SpadeError, match="seat must be in 0..1"):
        GameSeatEnv(RaceToTen(), seat=2)
    with pytest.raises(SpadeError, match="opponent must be 'best' or 'random'"):
        GameSeatEnv(RaceToTen(), opponent="smart")


def test_bad_final_rewards_are_contract_errors():
    class Greedy(RaceToTen):
        def _move(self, agent, action):
            return {agent: 5.0}

    game = Greedy()
    game.reset(seed=0)
    with pytest.raises(EnvContractError, match="reward 5.0, outside reward_range"):
        game.step("1")
