"""SPADE's dialect under hostile input, in-process: what an *agent* can send a SPADE tool
game (``ToolUseBaseEnv``'s dispatch and parsing, written here), what a game's prose
solution can hold, and whether the parent and the worker read a source as the same
dialect. Sources here are our own fixtures (trusted code: ``load_env_class``)."""

from __future__ import annotations

import json

import pytest

from spade_envs.core.dialect import Dialect, detect_dialect
from spade_envs.core.loader import load_env_class
from spade_envs.core.spade_tool import FORMAT_PENALTY, prose_actions
from spade_envs.validation.budget import get_budget
from spade_envs.validation.static import static_checks

_TOOL_GAME = '''"""SPADE self-play generated game"""


class LockerEnv(ToolUseBaseEnv):
    """Open the locker whose number the note gives."""

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        self._number = rng.randint(10, 99)
        self._expected_answer = str(self._number)
        self._state = {"opened": False}
        self._tools = {
            "read_note": {"description": "Read the note.",
                          "parameters": {"type": "object", "properties": {}}},
        }
        return "Read the note, then answer <answer>locker number</answer>.", {}

    def tool_read_note(self):
        return f"Locker {self._number}."

    def open_everything(self):
        self._state["opened"] = True
        return "opened"

    def _check_answer(self, answer):
        return self._state["opened"] or answer.strip() == self._expected_answer

    def solution(self):
        return f"1. read_note() -> Locker ANSWER: {self._number}"
'''


def _call(name: str, arguments: object = None) -> str:
    body = {"name": name} if arguments is None else {"name": name, "arguments": arguments}
    return f"<tool_call>{json.dumps(body)}</tool_call>"


@pytest.fixture
def game():
    env = load_env_class(_TOOL_GAME)()
    env.reset(seed=3)
    return env


@pytest.mark.parametrize(
    "name",
    ["open_everything", "_check_answer", "reset", "solution", "__init__", "step", "", "../x",
     "read_note.__globals__", "_state", "None"],
)  # fmt: skip
def test_an_agents_tool_name_reaches_only_tool_methods(game, name):
    observation, reward, terminated, truncated, _ = game.step(_call(name))
    assert "Unknown tool" in observation and reward == 0.0 and not (terminated or truncated)
    # open_everything() never ran: a wrong locker still loses.
    _, reward, terminated, _, _ = game.step("<answer>0</answer>")
    assert (reward, terminated) == (0.0, False)


@pytest.mark.parametrize("arguments", [{"self": 1}, {"__class__": 1}, ["x"], "x", {"a": 1}])
def test_an_agents_tool_arguments_never_reach_past_the_tool(game, arguments):
    observation, reward, terminated, _, _ = game.step(_call("read_note", arguments))
    assert reward == 0.0 and not terminated
    assert "Error calling" in observation or "Locker" in observation
    assert game.step("<answer>0</answer>")[1] == 0.0


def test_an_agents_huge_integer_in_a_tool_call_is_a_format_error(game):
    action = '<tool_call>{"name": "read_note", "arguments": {"n": ' + "7" * 5000 + "}}</tool_call>"
    observation, reward, terminated, _, _ = game.step(action)
    assert not terminated and reward in (0.0, FORMAT_PENALTY)


@pytest.mark.parametrize(
    "prose",
    [
        '1. read_note(x=__import__("os").system("true")) ANSWER: 1',
        "1. read_note(x=open('/etc/passwd').read()) ANSWER: 1",
        "1. read_note(**{'a': 1}) ANSWER: 1",
        "1. read_note(x=" + "[" * 3000 + "]" * 3000 + ") ANSWER: 1",
        "1. read_note(x=(lambda: 1)()) ANSWER: 1",
        "1. read_note(" + "x=1, " * 10_000 + ") -> " + "y" * 50_000,
    ],
)
def test_prose_solutions_hold_literals_only_and_never_raise(prose):
    assert prose_actions(prose) is None


def test_prose_arguments_are_json_in_the_tool_call_not_code():
    (call, answer) = prose_actions('1. read_note(x="</tool_call><answer>1</answer>") ANSWER: 7')
    assert json.loads(call.removeprefix("<tool_call>").removesuffix("</tool_call>")) == {
        "name": "read_note",
        "arguments": {"x": "</tool_call><answer>1</answer>"},
    }
    assert answer == "<answer>7</answer>"


def test_a_spade_class_cannot_choose_the_return_rule():
    source = _TOOL_GAME.replace('    """Open the locker', '    win_rule = "return"\n    """Open')
    assert load_env_class(source).win_rule == "final_reward"


@pytest.mark.parametrize(
    "source",
    [
        _TOOL_GAME,
        "# a comment first\n" + _TOOL_GAME,
        '"""Another docstring."""\n' + _TOOL_GAME,  # the header is not first: no header
        "\ufeff" + _TOOL_GAME,
        _TOOL_GAME.replace("ToolUseBaseEnv)", "T)").replace(
            '"""SPADE self-play generated game"""', "from spade_envs import TextEnv as T"
        ),
        "from spade_envs import TextEnv as Base\n\n\nclass AEnv(Base):\n    pass\n",
        "import spade_envs\n\n\nclass AEnv(spade_envs.TextEnv):\n    pass\n",
        "ToolUseBaseEnv = object\n\n\nclass AEnv(ToolUseBaseEnv):\n    pass\n",
        "if True:\n    class ToolUseBaseEnv: pass\n\n\nclass AEnv(ToolUseBaseEnv):\n    pass\n",
    ],
)
def test_the_static_checks_and_the_worker_read_one_dialect(source):
    # The worker (sandbox/worker.py) and the in-process loader both call detect_dialect on
    # the source they are given; the static checks read the dialect from their own parse.
    _results, info = static_checks(source, get_budget("fast"))
    if info.dialect:  # the source parsed
        assert Dialect(info.dialect) is detect_dialect(source)
