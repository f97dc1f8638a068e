"""The JSON Schema of a parent's fillings: built for every seed, every instance of it
parses, refusals name the hole, and the designer asks for its replies under it."""

from __future__ import annotations

import json
import os
import re
from functools import cache

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spade_envs.generator import Designer, DesignerConfig, DesignerFailure
from spade_envs.generator.scaffold import (
    FillingError,
    NoHolesError,
    RelationBroken,
    Scaffold,
    parse_filling,
)
from spade_envs.generator.schema import MAX_TEXT, SchemaError, filling_schema
from spade_envs.llm.base import ChatModel, Completion
from spade_envs.seeds import seed_names, seed_source

from .test_scaffold import PARENT


def _parents() -> dict[str, Scaffold]:
    found = {}
    for name in seed_names():
        source = seed_source(name)
        if "# hole:" not in source:
            continue
        found[name] = Scaffold(source, f"spade/{name}-v1")
    return found


PARENTS = _parents()


def parent(body: str, header: str = "") -> Scaffold:
    """A one-class parent whose class body is ``body`` (module lines above it: ``header``)."""
    source = (
        f'"""A toy."""\n\nfrom spade_envs import TextEnv\n{header}\n\nclass Toy(TextEnv):\n'
        '    skill = "math"\n'
        + body
        + "\n    def _reset(self):\n        return 'go'\n\n    def _step(self, action):\n"
        "        return 'ok', 0.0, True\n"
    )
    return Scaffold(source, "spade/Toy-v1")


# ----- every seed parent --------------------------------------------------------------------
def test_the_seeds_declare_holes():
    assert len(PARENTS) >= 20


@pytest.mark.parametrize("name", sorted(PARENTS))
def test_every_seed_parent_gets_a_schema_its_own_values_satisfy(name):
    scaffold = PARENTS[name]
    values = scaffold.defaults()
    for names in (None, scaffold.numeric_holes() or None):
        schema = filling_schema(scaffold, names)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["additionalProperties"] is False
        offered = list(schema["properties"])
        assert all(scaffold.by_name[n].kind == "value" for n in offered)  # no rule hole
        assert set(schema["required"]) <= set(offered) and schema["required"]
        # The parent's own values are an instance (when its text fits MAX_TEXT).
        own = {n: values[n] for n in offered if len(json.dumps(values[n])) < MAX_TEXT}
        jsonschema.validate({n: own[n] for n in own}, {**schema, "required": []})


def instances(schema: dict) -> st.SearchStrategy:
    """Instances of the keywords filling schemas use (hypothesis-jsonschema does not run
    with this Hypothesis), drawn to be awkward: edge numbers, whole floats for integers,
    text of any Unicode around its one required visible character, optional keys left out.
    """
    kind = schema["type"]
    if kind == "object":
        properties = {k: instances(v) for k, v in schema["properties"].items()}
        required = set(schema.get("required", ()))
        return st.fixed_dictionaries(
            {k: v for k, v in properties.items() if k in required},
            optional={k: v for k, v in properties.items() if k not in required},
        )
    if kind == "array":
        return st.lists(
            instances(schema["items"]), min_size=schema["minItems"], max_size=schema["maxItems"]
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        whole = st.integers(schema.get("minimum"), schema.get("maximum"))
        return whole | whole.map(float)  # 12.0 is an integer to JSON Schema
    if kind == "number":
        low, high = schema.get("minimum"), schema.get("maximum")
        return st.floats(low, high, allow_nan=False, allow_infinity=False) | st.integers(
            None if low is None else int(-(-low // 1)), None if high is None else int(high // 1)
        )
    assert kind == "string", schema
    longest = min(schema["maxLength"], 60)
    visible = st.characters(min_codepoint=0x21, max_codepoint=0x7E)
    return st.tuples(st.text(max_size=longest), visible, st.text(max_size=longest)).map(
        lambda parts: (
            (parts[0] + parts[1] + parts[2])[: schema["maxLength"]]
            if len(parts[0]) < schema["maxLength"]
            else parts[1]
        )
    )


@cache
def _schema(name: str, numeric: bool) -> dict:
    scaffold = PARENTS[name]
    names = scaffold.numeric_holes() if numeric and scaffold.numeric_holes() else None
    return filling_schema(scaffold, names)


@settings(
    max_examples=int(os.environ.get("SCHEMA_EXAMPLES", 150)),
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data(), name=st.sampled_from(sorted(PARENTS)), numeric=st.booleans())
def test_every_instance_of_a_seeds_schema_is_accepted_but_for_relations(data, name, numeric):
    scaffold = PARENTS[name]
    schema = _schema(name, numeric)
    instance = data.draw(instances(schema))
    jsonschema.validate(instance, schema)  # the strategy keeps to the schema
    reply = json.dumps(instance, ensure_ascii=False)
    try:
        filling, ignored = parse_filling(reply, scaffold)
    except FillingError as exc:
        # JSON Schema cannot compare two holes: only a relation may still refuse it.
        assert isinstance(exc, RelationBroken), (reply, str(exc))
        return
    assert ignored == [] and set(filling) == set(instance)
    scaffold.fill(filling)  # and the child module can be written


def test_bounds_and_one_number_relations_narrow_the_ranges():
    schema = filling_schema(PARENTS["BattleshipHunt"])
    knobs = schema["properties"]["knobs"]
    # marker [2, 9]; relations '3 <= size <= 9', '2 <= ship <= size'
    assert knobs["properties"]["size"] == {"type": "integer", "minimum": 3, "maximum": 9}
    assert knobs["properties"]["ship"] == {"type": "integer", "minimum": 2, "maximum": 9}
    assert knobs["required"] == ["size", "ship"] and knobs["additionalProperties"] is False
    assert schema["properties"]["max_turns"] == {"type": "integer", "minimum": 9, "maximum": 30}
    # 'len(_ACCOUNTS) >= 6' asks for six names at least.
    accounts = filling_schema(PARENTS["BankTransfers"])["properties"]["_ACCOUNTS"]
    assert accounts["minItems"] == 6 and accounts["items"]["type"] == "string"


def test_the_toy_parent_types_every_kind_of_value():
    scaffold = Scaffold(PARENT, "spade/Toy-v1")
    schema = filling_schema(scaffold)
    assert list(schema["properties"]) == ["description", "max_turns", "knobs"]  # no rule hole
    assert schema["required"] == ["max_turns"]  # the numeric ones (knobs holds a bool)
    text = schema["properties"]["description"]
    assert text["type"] == "string" and text["minLength"] == 1 and text["maxLength"] == MAX_TEXT
    knobs = schema["properties"]["knobs"]["properties"]
    assert knobs["top"] == {"type": "integer", "minimum": 0, "maximum": 1000}
    assert knobs["scale"] == {"type": "number", "minimum": 0.0, "maximum": 1000.0}
    assert knobs["loud"] == {"type": "boolean"}


def test_names_set_the_order_and_required_what_must_be_filled():
    scaffold = PARENTS["NumberGuess"]
    schema = filling_schema(scaffold, ["knobs", "max_turns"], required=["knobs"])
    assert list(schema["properties"]) == ["knobs", "max_turns"] and schema["required"] == ["knobs"]
    text_only = Scaffold(PARENT, "spade/Toy-v1")
    assert filling_schema(text_only, ["description"])["required"] == ["description"]


# ----- refusals name the hole -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "names", "required", "words"),
    [
        ("    # hole: things\n    things = []\n", None, None, "'things' is empty"),
        ("    # hole: mixed\n    mixed = [1, 'a']\n", None, None, "'mixed' mixes item types"),
        ("    # hole: deep\n    deep = {'a': [[]]}\n", None, None, "'deep.a[0]' is empty"),
        ("    # hole: odd [2.2, 2.8]\n    odd = 2\n", None, None, "no value of hole 'odd'"),
        ("    # hole: turns [1, 9]\n    turns = 3\n", ["hint"], None, "no hole 'hint'"),
        ("    # hole: turns [1, 9]\n    turns = 3\n", ["turns"], [], "at least one"),
        ("    # hole: turns [1, 9]\n    turns = 3\n", ["turns"], ["other"], "'other'"),
    ],
)
def test_a_hole_no_schema_can_describe_is_refused_by_name(body, names, required, words):
    with pytest.raises(SchemaError, match=re.escape(words)):
        filling_schema(parent(body), names, required=required)


def test_a_rule_hole_is_never_offered_and_a_parent_of_rules_only_is_refused():
    rules = parent("    # hole: rule: the hint\n    def hint(self):\n        return 'x'\n")
    with pytest.raises(SchemaError, match="only a rule hole .*'hint'"):
        filling_schema(rules)
    with pytest.raises(SchemaError, match="rule hole 'hint' is a Python function body"):
        filling_schema(Scaffold(PARENT, "spade/Toy-v1"), ["max_turns", "hint"])


def test_relations_that_leave_no_value_are_refused_naming_the_hole():
    body = '    hole_relations = ("turns >= 5",)\n    # hole: turns [1, 4]\n    turns = 5\n'
    with pytest.raises(SchemaError, match="no value of hole 'turns' lies in \\[5, 4\\]"):
        filling_schema(parent(body))


def test_a_parent_without_holes_is_still_refused_before_any_schema():
    with pytest.raises(NoHolesError):
        Scaffold("class A:\n    x = 1\n", "spade/A-v1")


# ----- the designer asks for its replies under the schema -------------------------------------
class SchemaModel(ChatModel):
    """Answers NumberGuess attempts with a filling of the hole its schema requires."""

    name = "schema-model"
    parameter_count = 135_000_000
    FILLINGS = {"max_turns": 12, "knobs": {"upper": 300}}

    def __init__(self) -> None:
        self.requests = []

    def generate(self, conversations, params=None):
        raise AssertionError("a constrained designer sends one request per attempt")

    def generate_each(self, conversations, params):
        self.requests.extend(params)
        replies = []
        for p in params:
            [focus] = p.json_schema["required"]
            text = json.dumps({focus: self.FILLINGS[focus]})
            tokens = tuple(range(1, len(text) + 1))
            replies.append(Completion(text, token_ids=tokens, logprobs=(-0.5,) * len(tokens)))
        return replies


@pytest.fixture
def number_guess(tmp_path):
    from spade_envs import describe, seed_class
    from spade_envs.corpus import sample_corpus
    from spade_envs.memory import HashingEmbedder, Memory, MemoryConfig
    from spade_envs.registry import Registry

    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    registry.register(
        seed_source("NumberGuess"), describe(seed_class("NumberGuess")), status="validated"
    )
    memory = Memory(registry, MemoryConfig(index="exact"), embedder=HashingEmbedder())
    yield registry, memory, sample_corpus()
    registry.close()


def test_the_designer_requests_each_scaffold_reply_under_its_fillings_schema(number_guess):
    registry, memory, corpus = number_guess
    model = SchemaModel()
    config = DesignerConfig(n=4, batch_size=4, mode="scaffold", repair_rounds=0, seed=5)
    report = Designer(model, registry, memory, corpus, config).run()
    assert len(model.requests) == 4
    scaffold = PARENTS["NumberGuess"]
    for attempt, params in zip(report.attempts, model.requests):
        schema = params.json_schema
        assert schema["required"] == [next(iter(schema["properties"]))]  # the focus, first
        assert set(schema["properties"]) == set(scaffold.numeric_holes())
        assert attempt.stage.rank >= 2, attempt.reason  # parsed, at least
    seeds = [p.seed for p in model.requests]
    assert seeds == list(range(seeds[0], seeds[0] + 4))  # as one batch would seed them
    registered = [a for a in report.attempts if a.env_id]
    assert registered and all(
        registry.get(a.env_id).extra["scaffold"]["constrained"] for a in registered
    )
    # Log-probs recorded under a grammar mask are dropped (vLLM reports masked ones): the
    # trainer recomputes them from the raw model; the tokens stay.
    assert all(a.reply_token_ids and a.reply_logprobs == [] for a in report.attempts)


def test_unconstrained_the_designer_sends_one_batch_as_before(number_guess):
    class Plain(SchemaModel):
        def generate(self, conversations, params=None):
            self.requests.append(params)
            return [
                Completion('{"max_turns": 9}', token_ids=(4, 5), logprobs=(-0.1, -0.2))
                for _ in conversations
            ]

    registry, memory, corpus = number_guess
    model = Plain()
    config = DesignerConfig(n=2, batch_size=2, mode="scaffold", repair_rounds=0, constrained=False)
    report = Designer(model, registry, memory, corpus, config).run()
    assert len(model.requests) == 1 and model.requests[0].json_schema is None
    assert all(a.reply_logprobs == [-0.1, -0.2] for a in report.attempts)  # free: kept


def test_a_parent_no_schema_fits_is_refused_naming_the_hole(number_guess, monkeypatch):
    registry, memory, corpus = number_guess
    import spade_envs.generator.pipeline as pipeline

    def refuse(scaffold, names=None, required=None):
        raise SchemaError(f"{scaffold.parent_id}: list hole 'things' is empty in the parent")

    monkeypatch.setattr(pipeline, "filling_schema", refuse)
    model = SchemaModel()
    config = DesignerConfig(n=2, batch_size=2, mode="scaffold", repair_rounds=0)
    report = Designer(model, registry, memory, corpus, config).run()
    assert model.requests == []  # nothing was sent
    for attempt in report.attempts:
        assert attempt.failure is DesignerFailure.PROMPT_ERROR
        assert "no reply schema" in attempt.reason and "'things'" in attempt.reason
