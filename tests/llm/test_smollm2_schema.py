"""The real SmolLM2-135M decoding under a filling's JSON Schema (llguidance, transformers).

Sampled at temperature 1.0, its free replies are often not JSON at all; under the schema
every reply parses into the parent's holes.
"""

from __future__ import annotations

import json
import os

import jsonschema
import pytest

from spade_envs.generator.prompts import DesignerPrompts
from spade_envs.generator.scaffold import FillingError, RelationBroken, Scaffold, parse_filling
from spade_envs.generator.schema import filling_schema
from spade_envs.llm import SamplingParams, load_model, serve
from spade_envs.llm.openai_backend import OpenAIChatModel
from spade_envs.seeds import seed_source

from ..model_support import SMOLLM2_MARKS, model_cache, torch_threads

pytestmark = SMOLLM2_MARKS


@pytest.fixture(scope="module")
def model():
    threads = 1 if os.environ.get("PYTEST_XDIST_WORKER") else None
    with (
        torch_threads(threads),
        load_model("smollm2", cache_dir=model_cache()) as loaded,
    ):
        yield loaded


def designer_request(name: str, focus: str) -> tuple[Scaffold, list[dict[str, str]], dict]:
    """A seed parent, the designer's prompt for changing ``focus``, and its reply schema
    (as the designer builds them: the focus required and first, the numeric holes)."""
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
    """Whether a reply parses into a filling (a broken relation still counts as parsed:
    JSON Schema cannot say it)."""
    try:
        parse_filling(text, scaffold)
    except FillingError as exc:
        return isinstance(exc, RelationBroken)
    return True


@pytest.mark.parametrize(
    ("name", "focus"), [("NumberGuess", "knobs"), ("BankTransfers", "max_turns")]
)
def test_sampled_replies_under_the_schema_always_parse(model, name, focus):
    scaffold, messages, schema = designer_request(name, focus)
    each = [
        SamplingParams(temperature=1.0, top_p=1.0, max_tokens=64, seed=s, json_schema=schema)
        for s in range(4)
    ]
    replies = model.generate_each([messages] * 4, each)
    for reply in replies:
        assert reply.ok and reply.finish_reason == "stop", reply
        value = json.loads(reply.text)
        jsonschema.validate(value, schema)
        assert next(iter(value)) == focus  # the schema's order: the focus first
        assert parses(reply.text, scaffold), reply.text
        assert len(reply.token_ids) == len(reply.logprobs) > 0
        assert all(lp <= 0.0 for lp in reply.logprobs)  # the raw model's, as unconstrained
    again = model.generate_each([messages] * 4, each)
    assert [r.text for r in again] == [r.text for r in replies]  # seeded per request


def test_one_batch_mixes_schemas_and_free_rows_and_a_bad_schema_fails_alone(model):
    first, messages_a, schema_a = designer_request("NumberGuess", "max_turns")
    second, messages_b, schema_b = designer_request("LabThermostat", "knobs")
    free = [{"role": "user", "content": "Name three colours."}]
    params = SamplingParams(temperature=0.0, max_tokens=48, seed=3)
    replies = model.generate_each(
        [messages_a, free, messages_b, free],
        [
            SamplingParams(temperature=0.0, max_tokens=48, seed=3, json_schema=schema_a),
            params,
            SamplingParams(temperature=0.0, max_tokens=48, seed=5, json_schema=schema_b),
            SamplingParams(temperature=0.0, max_tokens=48, json_schema={"type": "nonsense"}),
        ],
    )
    assert parses(replies[0].text, first) and parses(replies[2].text, second)
    assert replies[1].text == model.generate([free], params)[0].text  # free rows unchanged
    assert not replies[3].ok and "cannot be compiled" in replies[3].error


def test_our_server_decodes_under_a_response_format(model):
    scaffold, messages, schema = designer_request("Mastermind", "knobs")
    with serve(model) as server:
        client = OpenAIChatModel(server.url, timeout=120)
        reply = client.generate(
            [messages], SamplingParams(temperature=1.0, max_tokens=64, seed=1, json_schema=schema)
        )[0]
    assert reply.ok, reply.error
    jsonschema.validate(json.loads(reply.text), schema)
    assert parses(reply.text, scaffold)
