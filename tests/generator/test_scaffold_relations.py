"""Relations between a parent's holes: parsed safely, enforced on fillings, declared by seeds."""

from __future__ import annotations

import json
import operator
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_envs import describe, seed_class
from spade_envs.error import SpadeError
from spade_envs.generator.relations import RelationError, parse_relation
from spade_envs.generator.scaffold import FillingError, Scaffold, parse_filling
from spade_envs.seeds import seed_names, seed_source

from .test_scaffold_pipeline import run

VALUES = {"max_turns": 8, "knobs": {"low": 20, "high": 80}, "names": ["a", "b", "c"], "on": True}

TOY = '''"""A toy parent."""

from spade_envs import TextEnv, boxed


class Toy(TextEnv):
    skill = "math"
    # hole: turns allowed [1, 9]
    max_turns = 3
    # hole: difficulty [0, 1000]
    knobs = {"low": 1, "high": 10}
    hole_relations = RELATIONS

    def _reset(self) -> str:
        return f"Say {self.high}."

    def _step(self, action):
        return "ok", float(action == boxed(self.high)), True

    def hint(self) -> str:
        return "It is small."

    def solution(self):
        return [boxed(self.high)]
'''


def toy(relations: str) -> Scaffold:
    return Scaffold(TOY.replace("RELATIONS", relations), "spade/Toy-v1")


# ----- the parser ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "holds"),
    [
        ("low < high", True),
        ("knobs.low + 10 <= knobs.high", True),
        ("max_turns < high - low", True),
        ("2 * (high - low) > 100", True),
        ("-low < 0 < max_turns <= 8", True),
        ("len(names) == 3", True),
        ("max_turns * 10 >= high", True),
        ("high != 80", False),
        ("low > high", False),
    ],
)
def test_valid_relations_evaluate_as_python_does(text, holds):
    relation = parse_relation(text, VALUES)
    assert relation.holds(VALUES) is holds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("low <", r"does not parse"),
        ("low + high", r"is not a comparison"),
        ("low < hihg", r"'hihg' names no number hole\. Did you mean 'high'\?"),
        ("on < 1", r"'on' names no number hole"),
        ("low < high and high < 100", r"is not a comparison"),
        ("low // 2 < high", r"FloorDiv is not allowed \(only \+, - and \*\)"),
        ("low ** 2 < high", r"Pow is not allowed"),
        ("low < 1.5", r"1\.5 is not an integer"),
        ("low < True", r"True is not an integer"),
        ("low < 'x'", r"'x' is not an integer"),
        ("low in names", r"compares with In"),
        ("__import__('os').system('x') < 1", r"the only call allowed is len\(hole\)"),
        ("len(max_turns) < 1", r"len\(max_turns\) needs a list, text or dict hole"),
        ("(low < high) < 2", r"a comparison inside a term is not allowed"),
        ("knobs.low.real < 2", r"only 'hole' and 'hole\.key' names are allowed"),
        ("[low][0] < 2", r"Subscript is not allowed"),
        ("low < 10**10", r"Pow is not allowed"),
        ("low < 99999999999", r"larger than 1000000000"),
        ("low < high" + " " * 300, r"longer than 200 characters"),
        (3, r"must be a string, got int"),
    ],
)
def test_malformed_relations_are_refused_with_a_clear_message(text, message):
    with pytest.raises(RelationError, match=message):
        parse_relation(text, VALUES)


def test_a_relation_error_is_a_spade_error():
    assert issubclass(RelationError, SpadeError)


OPS = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
ints = st.integers(-(10**6), 10**6)


@settings(max_examples=200, deadline=None)
@given(
    a=ints,
    b=ints,
    c=st.integers(-50, 50),
    op=st.sampled_from(sorted(OPS)),
    arith=st.sampled_from(["+", "-", "*"]),
)
def test_evaluation_matches_pythons_own_comparison(a, b, c, op, arith):
    values = {"a": a, "knobs": {"b": b}}
    relation = parse_relation(f"(a {arith} {c}) {op} knobs.b - -{c}", values)
    left = {"+": a + c, "-": a - c, "*": a * c}[arith]
    assert relation.holds(values) is OPS[op](left, b + c)


@settings(max_examples=100, deadline=None)
@given(a=ints, b=ints, c=ints)
def test_chained_comparisons_hold_like_pythons(a, b, c):
    values = {"a": a, "b": b, "c": c}
    assert parse_relation("a <= b < c", values).holds(values) is (a <= b < c)


# ----- a parent's declaration ------------------------------------------------------------------
def test_a_parent_reads_its_relations_and_shows_them_to_the_designer():
    scaffold = toy('("low < high", "max_turns < high - low")')
    assert [r.text for r in scaffold.relations] == ["low < high", "max_turns < high - low"]
    assert "# must hold: low < high; max_turns < high - low" in scaffold.marked_source()


@pytest.mark.parametrize(
    ("relations", "message"),
    [
        ('("low <",)', r"spade/Toy-v1: hole relation 'low <' does not parse"),
        ('("lo < high",)', r"'lo' names no number hole\. Did you mean 'low'\?"),
        ('["low < high", 3]', r"must be a string, got int"),
        ("compute()", r"hole_relations must be a literal tuple of strings"),
        ('"low < high"', r"hole_relations must be a literal tuple of strings"),
        (
            '("high < low",)',
            r"the parent's own values break its hole relation 'high < low' "
            r"\(high=10, low=1\)",
        ),
    ],
)
def test_a_malformed_declaration_is_an_error_when_the_parent_is_read(relations, message):
    with pytest.raises(RelationError, match=message):
        toy(relations)


def test_a_filling_that_breaks_a_relation_is_refused_naming_it_and_the_values():
    scaffold = toy('("low < high", "max_turns < high - low")')
    parse_filling('{"knobs": {"low": 2, "high": 9}}', scaffold)  # holds: accepted
    with pytest.raises(
        FillingError,
        match=r"breaks the hole relation 'low < high' "
        r"\(low=9, high=2\)",
    ):
        parse_filling('{"knobs": {"low": 9, "high": 2}}', scaffold)
    with pytest.raises(FillingError, match=r"'max_turns < high - low' \(max_turns=9, "):
        parse_filling('{"max_turns": 9}', scaffold)


def test_relations_are_never_run_as_code(tmp_path):
    marker = tmp_path / "ran"
    relation = f"__import__('pathlib').Path({str(marker)!r}).touch() or 1 < 2"
    with pytest.raises(RelationError):
        toy(repr((relation,)))
    assert not marker.exists()


# ----- the seeds ---------------------------------------------------------------------------------
def test_every_seed_parent_reads_and_its_own_values_hold():
    declared = {}
    for name in seed_names():
        scaffold = Scaffold(seed_source(name), name)  # raises if a relation is malformed
        declared[name] = [r.text for r in scaffold.relations]
    assert declared["NumberGuess"] == ["2 * max_turns <= upper"]
    assert "low + 10 <= high" in declared["LabThermostat"]
    assert sum(bool(r) for r in declared.values()) >= 20


# ----- the attacks of issue 25, through the designer's pipeline --------------------------------
@pytest.fixture
def parents(tmp_path, registry_url):
    from spade_envs.corpus import open_corpus
    from spade_envs.memory import HashingEmbedder, Memory, MemoryConfig
    from spade_envs.registry import Registry

    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"text": "A document about guessing numbers. " * 6}) + "\n")
    registry = Registry(registry_url)
    registry.register_many(
        [(seed_source(n), describe(seed_class(n))) for n in ("NumberGuess", "LabThermostat")],
        status="validated",
    )
    memory = Memory(registry, MemoryConfig(index="exact"), embedder=HashingEmbedder())
    yield registry, memory, open_corpus(docs, min_words=3)
    registry.close()


@pytest.mark.parametrize(
    ("parent", "filling", "reason"),
    [
        (
            "spade/NumberGuess-v1",
            {"knobs": {"upper": 4}, "max_turns": 30},
            r"broken relation: the filling breaks the hole relation '2 \* max_turns <= upper' "
            r"\(max_turns=30, upper=4\)",
        ),
        (
            "spade/LabThermostat-v1",
            {"knobs": {"low": 120, "high": 0}},
            r"broken relation: the filling breaks the hole relation 'low \+ 10 <= high' "
            r"\(low=120, high=0\)",
        ),
    ],
    ids=["number-guess-enumerable", "lab-thermostat-low-above-high"],
)
def test_fillings_that_make_the_description_false_break_a_relation(
    parents, parent, filling, reason
):
    report, _ = run(parents, [[json.dumps(filling)]], parent=parent, repair_rounds=0)
    [attempt] = report.attempts
    assert attempt.failure == "broken_relation", (attempt.stage, attempt.reason)
    assert not attempt.env_id
    assert re.search(reason, attempt.reason), attempt.reason
