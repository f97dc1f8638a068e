"""Requests with a JSON Schema: ``SamplingParams.json_schema``, per-request parameters
(``generate_each``) and the schema over HTTP (``response_format``), without a model."""

from __future__ import annotations

import dataclasses

import pytest

from spade_envs.error import SpadeError
from spade_envs.llm import (
    ChatModel,
    Completion,
    LLMConfigError,
    OpenAIChatModel,
    SamplingParams,
    serve,
)

SCHEMA = {
    "type": "object",
    "properties": {"max_turns": {"type": "integer", "minimum": 4, "maximum": 30}},
    "required": ["max_turns"],
    "additionalProperties": False,
}


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


# ----- SamplingParams.json_schema -------------------------------------------------------------
def test_a_schema_is_copied_compared_and_left_out_of_the_hash():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    params = SamplingParams(json_schema=schema)
    schema["properties"]["a"]["type"] = "string"  # the caller's dict, changed afterwards
    assert params.json_schema == {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert SamplingParams().json_schema is None
    assert SamplingParams(json_schema={"required": ("a",)}).json_schema == {"required": ["a"]}
    assert params == SamplingParams(json_schema=params.json_schema)
    assert params != SamplingParams(json_schema=SCHEMA)
    assert hash(params) == hash(SamplingParams(json_schema=SCHEMA))  # hashable all the same
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.json_schema = None  # type: ignore[misc]


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ('{"type": "object"}', "json_schema must be a dict .*got str"),
        ([{"type": "object"}], "json_schema must be a dict .*got list"),
        ({"type": "object", "enum": {1, 2}}, "json_schema is not JSON"),
        ({"type": "number", "maximum": float("nan")}, "json_schema is not JSON"),
        ({"properties": {1: {}}}, "the key 1 is not a string"),
    ],
)
def test_a_schema_that_is_not_a_json_object_is_refused(schema, words):
    with pytest.raises(LLMConfigError, match=words) as info:
        SamplingParams(json_schema=schema)
    assert isinstance(info.value, SpadeError)


# ----- generate_each ------------------------------------------------------------------------
class Recorder(ChatModel):
    """Implements only generate: each call is recorded, each reply names its seed."""

    name = "recorder"

    def __init__(self) -> None:
        self.calls: list[tuple[int, SamplingParams]] = []

    def generate(self, conversations, params=None):
        params = params or SamplingParams()
        self.calls.append((len(conversations), params))
        return [Completion(f"seed {params.seed_for(i)}") for i in range(len(conversations))]


def test_the_default_generate_each_batches_neighbours_a_batch_would_seed_alike():
    model = Recorder()
    each = [SamplingParams(seed=s) for s in (10, 11, 12)]
    each += [
        SamplingParams(seed=13, json_schema=SCHEMA),
        SamplingParams(seed=14, json_schema=SCHEMA),
    ]
    each += [SamplingParams(seed=20), SamplingParams(), SamplingParams()]
    replies = model.generate_each([user(str(i)) for i in range(len(each))], each)
    assert [r.text for r in replies] == [
        "seed 10", "seed 11", "seed 12", "seed 13", "seed 14", "seed 20", "seed None", "seed None"
    ]  # fmt: skip
    assert [(n, p.seed, p.json_schema is not None) for n, p in model.calls] == [
        (3, 10, False),
        (2, 13, True),
        (1, 20, False),
        (2, None, False),
    ]


@pytest.mark.parametrize(
    ("params", "words"),
    [
        (SamplingParams(), "one SamplingParams per conversation"),
        ([SamplingParams()], "got 2 conversations and 1 SamplingParams"),
        ([SamplingParams(), {"temperature": 0}], r"params\[1\] is a dict"),
    ],
)
def test_generate_each_wants_one_params_per_conversation(params, words):
    with pytest.raises(LLMConfigError, match=words):
        Recorder().generate_each([user("a"), user("b")], params)


# ----- over HTTP: response_format ---------------------------------------------------------
class SchemaEcho(Recorder):
    """Replies with the schema's first property name, so the client sees what arrived."""

    def generate(self, conversations, params=None):
        self.calls.append((len(conversations), params))
        schema = params.json_schema
        text = "free" if schema is None else next(iter(schema.get("properties", {"-": 0})))
        return [Completion(text) for _ in conversations]


def test_a_schema_travels_as_response_format_to_our_server_and_back():
    model = SchemaEcho()
    with serve(model) as server:
        client = OpenAIChatModel(server.url, timeout=10)
        each = [
            SamplingParams(seed=5, json_schema=SCHEMA),
            SamplingParams(seed=9),
            SamplingParams(json_schema={"type": "object", "properties": {"k": {}}}),
        ]
        replies = client.generate_each([user("a"), user("b"), user("c")], each)
        assert [r.text for r in replies] == ["max_turns", "free", "k"]
        seen = sorted((p.seed or 0, p.json_schema) for _, p in model.calls)
        assert seen == [(0, each[2].json_schema), (5, SCHEMA), (9, None)]  # seeds as given
        assert client.generate([user("x")], SamplingParams(json_schema=SCHEMA))[0].text == (
            "max_turns"
        )


def test_the_request_body_carries_the_schema_and_the_server_checks_it():
    from spade_envs.llm.server import _BadRequest, _parse_request

    body = OpenAIChatModel("http://127.0.0.1:1")._body(
        "m", user("x"), SamplingParams(json_schema=SCHEMA)
    )
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": SCHEMA, "strict": False},
    }
    assert "response_format" not in OpenAIChatModel("http://127.0.0.1:1")._body(
        "m", user("x"), SamplingParams()
    )
    request = {"messages": user("x")}
    params = _parse_request({**request, "response_format": body["response_format"]}, "m").params
    assert params.json_schema == SCHEMA
    params = _parse_request({**request, "response_format": {"type": "json_object"}}, "m").params
    assert params.json_schema == {"type": "object"}
    params = _parse_request({**request, "response_format": {"type": "text"}}, "m").params
    assert params.json_schema is None
    for bad, words in [
        ({"type": "grammar"}, "type 'grammar' is not supported"),
        ({"type": "json_schema", "json_schema": {"name": "x"}}, "needs 'json_schema'"),
        ({"type": "json_schema", "json_schema": {"schema": [1]}}, "needs 'json_schema'"),
        ("json", "type None is not supported"),
    ]:
        with pytest.raises(_BadRequest, match=words) as info:
            _parse_request({**request, "response_format": bad}, "m")
        assert info.value.param == "response_format" and info.value.status == 400
