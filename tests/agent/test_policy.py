"""Chat formatting, action classification and per-item seeds of the policy."""

from __future__ import annotations

import pytest

from spade_envs.agent import Policy, SeededParams, Turn, classify_action, system_prompt, with_hint
from spade_envs.llm.base import ChatModel, Completion
from spade_envs.seeds import seed_classes

TOOLS = seed_classes()["SupplierLookup"].function_schemas()
NAMES = [t["function"]["name"] for t in TOOLS]


def test_system_prompts_explain_the_answer_convention():
    text = system_prompt("text", description="Guess   the number.")
    assert "\\boxed{" in text and "Task: Guess the number." in text
    tool = system_prompt("tool", tools=TOOLS)
    assert "<tool_call>" in tool and "<answer>" in tool
    assert all(f'"name": "{name}"' in tool for name in NAMES)
    game = system_prompt("game", seat="player_1")
    assert "You are player_1" in game and "\\boxed{" in game
    assert with_hint("Obs.", "Look left.") == "Obs.\n\nHINT: Look left."


@pytest.mark.parametrize(
    ("reply", "kind", "expected"),
    [
        ("", "text", "empty"),
        ("   \n", "tool", "empty"),
        ("So \\boxed{4}", "text", "ok"),
        ("<answer>4</answer>", "text", "ok"),
        ("\\boxed{3} no, \\boxed{4}", "text", "several_answers"),
        ("I think it is four", "text", "no_answer"),
        ("take 1 from 2", "game", "no_answer"),
        (
            '<tool_call>{"name": "select", "arguments": {"table": "products"}}</tool_call>',
            "tool",
            "ok",
        ),
        ('<tool_call>{"name": "delete", "arguments": {}}</tool_call>', "tool", "wrong_tool"),
        ("<tool_call>{not json}</tool_call>", "tool", "bad_tool_call"),
        ('<tool_call>{"name": "select"}</tool_call><answer>x</answer>', "tool", "several_answers"),
        ("<answer>Accra</answer>", "tool", "ok"),
        ("Accra", "tool", "no_answer"),
    ],
)
def test_classify_action(reply, kind, expected):
    assert classify_action(reply, kind, NAMES) == expected


def test_seeded_params_give_each_item_its_own_seed():
    params = SeededParams(seed=5, item_seeds=(5, 99, 7), max_tokens=4)
    assert [params.seed_for(i) for i in range(3)] == [5, 99, 7]
    assert SeededParams(seed=None).seed_for(0) is None


class Echo(ChatModel):
    def __init__(self, replies=None):
        self.replies = replies
        self.seen = []

    def generate(self, conversations, params=None):
        self.seen.append([params.seed_for(i) for i in range(len(conversations))])
        if self.replies is not None:
            return self.replies
        return [Completion(text=str(params.seed_for(i))) for i in range(len(conversations))]


def test_policy_acts_in_one_call_with_per_item_seeds():
    model = Echo()
    chats = [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]]
    replies = Policy(model).act(chats, [42, 7])
    assert [r.text for r in replies] == ["42", "7"] and model.seen == [[42, 7]]
    Policy(model).act(chats, [None, None])
    assert model.seen[-1] == [None, None]


def test_policy_turns_a_short_answer_into_errors():
    chats = [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]]
    replies = Policy(Echo(replies=[Completion(text="x")])).act(chats, [1, 2])
    assert all(not r.ok and "1 replies for 2" in r.error for r in replies)


def test_turn_mask_separates_model_tokens():
    turn = Turn(
        index=0,
        seat="",
        action="a",
        outcome="ok",
        prompt_token_ids=[1, 2, 3],
        token_ids=[4, 5],
        logprobs=[-0.1, -0.2],
    )
    assert turn.tokens == [1, 2, 3, 4, 5] and turn.mask == [0, 0, 0, 1, 1]
