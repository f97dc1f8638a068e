from __future__ import annotations

import json
from typing import Literal, Optional

import pytest

from spade_envs import EnvContractError, ToolEnv, ToolError
from spade_envs.core.tool_env import parse_docstring


class Shop(ToolEnv):
    skill = "planning"
    description = "Buy exactly three apples, then answer 'done'."
    max_turns = 6

    def _reset(self):
        self.basket = {}
        return "Buy three apples."

    def tool_buy(self, item: Literal["apple", "pear"], count: int = 1) -> str:
        """Put items in the basket.

        Args:
            item: What to buy.
            count: How many (1 to 5).
                Larger orders are refused.
        """
        if not 1 <= count <= 5:
            raise ToolError("count must be 1 to 5")
        self.basket[item] = self.basket.get(item, 0) + count
        if self.basket.get("apple") == 3:
            self.end_episode(1.0, "Three apples: done.")
        return f"basket: {self.basket}"

    def tool_prices(self, items: list[str], discount: Optional[float] = None) -> dict:
        """Look up prices."""
        return {i: 1.0 - (discount or 0.0) for i in items}

    def _answer(self, answer):
        return "ok", 0.0, True

    def hint(self):
        return "Buy in one call."

    def solution(self):
        return [
            '<tool_call>{"name": "buy", "arguments": {"item": "apple", "count": 3}}</tool_call>'
        ]


def call(name, **arguments):
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def test_schemas_come_from_hints_and_docstrings():
    schemas = {s["function"]["name"]: s["function"] for s in Shop.function_schemas()}
    assert set(schemas) == {"buy", "prices"}
    buy = schemas["buy"]
    assert buy["description"] == "Put items in the basket."
    assert buy["parameters"]["required"] == ["item"]
    assert buy["parameters"]["properties"]["item"] == {
        "type": "string",
        "enum": ["apple", "pear"],
        "description": "What to buy.",
    }
    assert buy["parameters"]["properties"]["count"]["description"] == (
        "How many (1 to 5). Larger orders are refused."
    )
    prices = schemas["prices"]["parameters"]["properties"]
    assert prices["items"] == {"type": "array", "items": {"type": "string"}}
    assert prices["discount"] == {"type": "number"}


def test_reset_info_carries_fresh_schemas():
    env = Shop()
    _, info = env.reset(seed=0)
    info["tools"].clear()
    assert env.reset(seed=0)[1]["tools"]


def test_a_tool_can_end_the_episode():
    env = Shop()
    env.reset(seed=0)
    observation, reward, terminated, *_ = env.step(env.solution()[0])
    assert reward == 1.0 and terminated and "Three apples" in observation


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("hello", "no tool call or answer found"),
        (call("by", item="apple"), "unknown tool 'by'. Did you mean 'buy'?"),
        (call("buy"), "needs argument(s): item"),
        (call("buy", item="plum"), 'must be one of "apple", "pear"'),
        (call("buy", item="apple", count="2"), "argument 'count' of tool 'buy' must be integer"),
        (call("buy", item="apple", cuont=2), "no argument 'cuont'. Did you mean 'count'?"),
        (call("buy", item="apple", count=9), "Error: count must be 1 to 5"),
        (call("prices", items=[1, 2]), "must be array"),
        ("<tool_call>{bad json</tool_call>", "not valid JSON"),
    ],
)
def test_bad_calls_become_error_observations(action, message):
    env = Shop()
    env.reset(seed=0)
    observation, reward, terminated, truncated, _ = env.step(action)
    assert observation.startswith("Error:") and message in observation
    assert reward == 0.0 and not terminated


def test_types_are_converted_where_lossless():
    env = Shop()
    env.reset(seed=0)
    observation, *_ = env.step(call("buy", item="apple", count=2.0))
    assert "'apple': 2" in observation
    observation, *_ = env.step(call("prices", items=["a"], discount=0))
    assert json.loads(observation) == {"a": 1.0}


def test_answers_reach_the_answer_hook_via_tag_or_boxed():
    for action in ("<answer>x</answer>", "\\boxed{x}"):
        env = Shop()
        env.reset(seed=0)
        assert env.step(action)[:3] == ("ok", 0.0, True)


def test_tool_env_without_tools_is_rejected():
    class NoTools(ToolEnv):
        pass

    with pytest.raises(EnvContractError, match="without tools"):
        NoTools()


def test_non_tool_methods_with_the_prefix_are_not_tools():
    class Tricky(Shop):
        @classmethod
        def tool_helper(cls):
            return 1

    assert Tricky.available_tools() == ["buy", "prices"]


def test_long_tool_output_is_cut():
    class Loud(Shop):
        def tool_dump(self) -> str:
            """Dump."""
            return "y" * 50_000

    env = Loud()
    env.reset(seed=0)
    observation, *_ = env.step(call("dump"))
    assert len(observation) < 5_000 and observation.endswith("[... output cut ...]")


def test_parse_docstring_sections():
    summary, args = parse_docstring("""Do a thing.

    More text.

    Args:
        a (int): First.
        b: Second
            continued.

    Returns:
        Nothing.
    """)
    assert summary == "Do a thing." and args == {"a": "First.", "b": "Second continued."}
