"""``info["action_parsed"]``: every protocol base says whether it understood the action."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from spade_envs import EnvContractError, GameSeatEnv, IllegalMove, TextEnv, TextGame, ToolEnv
from spade_envs.core.loader import load_env_class
from spade_envs.core.spade_tool import FORMAT_PENALTY
from spade_envs.core.text_env import ACTION_PARSED
from spade_envs.error import ToolError

FIXTURES = Path(__file__).parent / "spade_fixtures"


class Digits(TextEnv):
    """Say a digit; "7" wins, other digits are wrong but understood."""

    skill = "math"
    description = "Say the hidden digit."
    max_turns = 3

    def _reset(self) -> str:
        return "Say a digit."

    def _step(self, action: str):
        text = action.strip()
        if text == "last":
            return self.not_understood("That was your last chance.", terminated=True)
        if not (len(text) == 1 and text.isdigit()):
            return self.not_understood("Say one digit.")
        if text == "7":
            return "Right.", 1.0, True
        return "Wrong digit.", 0.0, False, {"guess": text}


class Reports(Digits):
    """Returns whatever ``report`` holds as its ``action_parsed``."""

    report: object = None

    def _step(self, action: str):
        return "x", 0.0, False, {ACTION_PARSED: self.report}


def reporting(value: object) -> Reports:
    env = Reports()
    env.report = value
    env.reset(seed=0)
    return env


# ----- TextEnv ---------------------------------------------------------------------------------
def test_not_understood_reports_false_and_keeps_the_observation():
    env = Digits()
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("qwerty zzz")
    assert (observation, reward, terminated, truncated) == ("Say one digit.", 0.0, False, False)
    assert info[ACTION_PARSED] is False and info["turn"] == 1


def test_not_understood_may_end_the_episode():
    env = Digits()
    env.reset(seed=0)
    *_, terminated, truncated, info = env.step("last")
    assert (terminated, truncated, info[ACTION_PARSED]) == (True, False, False)


def test_a_step_that_does_not_say_counts_as_parsed():
    env = Digits()
    env.reset(seed=0)
    *_, info = env.step("3")  # an info dict without the key
    assert info[ACTION_PARSED] is True and info["guess"] == "3"
    *_, info = env.step("7")  # no info dict at all
    assert info[ACTION_PARSED] is True and info["success"] is True


@pytest.mark.parametrize("value", ["no", 0, 1, None, [], "False"])
def test_a_non_bool_action_parsed_is_a_contract_error(value):
    env = reporting(value)
    with pytest.raises(
        EnvContractError, match=r"info\['action_parsed'\] = .*must be True or False"
    ):
        env.step("x")


def test_a_numpy_bool_is_taken_as_a_bool():
    *_, info = reporting(np.bool_(False)).step("x")
    assert info[ACTION_PARSED] is False


def test_a_step_after_the_end_is_not_parsed():
    env = Digits()
    env.reset(seed=0)
    env.step("7")
    observation, reward, terminated, truncated, info = env.step("7")
    assert (observation, reward, terminated, truncated) == ("Right.", 0.0, True, False)
    assert info == {"turn": 1, "episode_over": True, ACTION_PARSED: False}


# ----- ToolEnv ---------------------------------------------------------------------------------
class Counter(ToolEnv):
    skill = "planning"
    description = "Count up to three with the tool."
    max_turns = 8

    def _reset(self) -> str:
        self.count = 0
        return "Count."

    def tool_add(self, step: int) -> str:
        """Add to the count.

        Args:
            step: 1 or 2.
        """
        if step not in (1, 2):
            raise ToolError("step must be 1 or 2")
        self.count += step
        return f"count {self.count}"

    def _answer(self, answer: str):
        return ("Right.", 1.0, True) if answer == str(self.count) else ("Wrong.", 0.0, True)


class NoAnswers(Counter):
    _answer = ToolEnv._answer


def call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


@pytest.mark.parametrize(
    ("action", "parsed"),
    [
        ("qwerty zzz", False),  # neither a call nor an answer
        ("<tool_call>{not json}</tool_call>", False),
        (call("mul", step=1), False),  # unknown tool
        (call("add", step="one"), False),  # an argument of the wrong type
        (call("add", size=1), False),  # an argument the tool does not take
        (call("add"), False),  # a missing argument
        (call("add", step=1), True),
        (call("add", step=5), True),  # the tool ran and refused: understood
        ("<answer>4</answer>", True),  # a wrong answer is understood
        ("\\boxed{0}", True),
    ],
)
def test_tool_env_reports_whether_it_understood(action, parsed):
    env = Counter()
    env.reset(seed=0)
    *_, info = env.step(action)
    assert info[ACTION_PARSED] is parsed


def test_a_tool_env_without_answers_does_not_understand_one():
    env = NoAnswers()
    env.reset(seed=0)
    observation, *_, info = env.step("<answer>done</answer>")
    assert "takes no final answer" in observation and info[ACTION_PARSED] is False


# ----- TextGame and GameSeatEnv ----------------------------------------------------------------
class RaceToTen(TextGame):
    skill = "math"
    description = "Add 1 or 2 to the counter; reaching 10 wins."
    max_turns = 30

    def _reset(self) -> None:
        self.total = 5

    def _observe(self, agent: str) -> str:
        return f"Counter at {self.total}."

    def _move(self, agent: str, action: str):
        move = self.parse_move(action)
        if move not in ("1", "2"):
            raise IllegalMove("say 1 or 2")
        self.total += int(move)
        if self.total >= 10:
            return {a: float(a == agent) for a in self.agents}
        return None

    def legal_moves(self, agent: str) -> list[str]:
        return ["1", "2"]

    def best_move(self, agent: str) -> str:
        return str((10 - self.total) % 3 or 1)

    def hint(self, agent: str) -> str:
        return "Leave a multiple of three."


def test_a_game_reports_in_the_movers_info_whether_it_took_the_move():
    game = RaceToTen()
    game.reset(seed=0)
    game.step("qwerty zzz")  # player_0: illegal, turn lost
    assert game.infos["player_0"][ACTION_PARSED] is False
    game.step("\\boxed{2}")  # player_1
    assert game.infos["player_1"][ACTION_PARSED] is True
    assert game.infos["player_0"][ACTION_PARSED] is False  # still its own last move
    game.step("2")  # player_0 reaches 9
    game.step("1")  # player_1 reaches 10 and wins
    assert game.infos["player_1"] == {"final_reward": 1.0, ACTION_PARSED: True}
    assert game.infos["player_0"]["final_reward"] == 0.0


def test_a_game_seat_reports_its_own_move():
    env = GameSeatEnv(RaceToTen(), seat=0, opponent="random")
    env.reset(seed=0)
    *_, info = env.step("qwerty zzz")
    assert info[ACTION_PARSED] is False
    *_, info = env.step("1")
    assert info[ACTION_PARSED] is True


# ----- SPADE's ToolUseBaseEnv ------------------------------------------------------------------
def test_spade_tool_games_report_format_errors_unknown_tools_and_bad_arguments():
    env = load_env_class((FIXTURES / "tool_use_prose.py").read_text(encoding="utf-8"))()
    env.reset(seed=2)
    steps = {
        "I will look around": False,
        "<tool_call>{not json}</tool_call>": False,
        call("rm", path="x"): False,
        call("cd", folder="x"): False,  # cd takes path, not folder
        call("cd", path="nowhere"): True,  # the tool ran (and said no)
        "<answer>nope</answer>": True,
    }
    for action, parsed in steps.items():
        _, reward, *_, info = env.step(action)
        assert info[ACTION_PARSED] is parsed, action
        if action == "I will look around":
            assert reward == FORMAT_PENALTY


def test_a_spade_tool_games_last_turn_format_error_is_not_parsed():
    env = load_env_class((FIXTURES / "tool_use_prose.py").read_text(encoding="utf-8"))()
    env.reset(seed=2)
    for _ in range(env.max_turns):
        *_, terminated, truncated, info = env.step("no call")
        if terminated or truncated:
            break
    assert truncated and info[ACTION_PARSED] is False
