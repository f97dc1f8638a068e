"""Holes of a parent environment: reading them, parsing fillings, writing the child."""

from __future__ import annotations

import ast
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_envs.generator.scaffold import (
    MAX_RULE_LINES,
    FillingError,
    NoHolesError,
    Scaffold,
    filling_distance,
    parse_filling,
)
from spade_envs.seeds import seed_names, seed_source

PARENT = '''"""A toy parent."""

from spade_envs import TextEnv, boxed


class Toy(TextEnv):
    skill = "math"
    # hole: what the task says
    description = (
        "Reply with the number. "
        "Nothing else."
    )
    # hole: turns allowed [1, 9]
    max_turns = 3
    # hole: difficulty [0, 1000]
    knobs = {"top": 10, "scale": 1.5, "loud": False}

    def _reset(self) -> str:
        return f"Say {self.top}."

    def _step(self, action):
        return "ok", float(action == boxed(self.top)), True

    # hole: rule: the hint
    def hint(self) -> str:
        """Help."""
        return "It is " + str(self.top)

    def solution(self):
        return [boxed(self.top)]
'''


@pytest.fixture
def toy():
    return Scaffold(PARENT, "spade/Toy-v1")


def test_holes_are_read_with_names_types_bounds_and_defaults(toy):
    assert [h.name for h in toy.holes] == ["description", "max_turns", "knobs", "hint"]
    assert toy.defaults()["description"] == "Reply with the number. Nothing else."
    assert toy.by_name["max_turns"].bounds == (1.0, 9.0)
    assert toy.by_name["knobs"].default == {"top": 10, "scale": 1.5, "loud": False}
    assert toy.by_name["hint"].kind == "rule"
    assert toy.by_name["hint"].default == 'return "It is " + str(self.top)'  # no docstring
    assert json.loads(toy.template()) == {
        k: v for k, v in toy.defaults().items() if k != "hint"
    }  # a rule hole is listed in the marked source, its body not inlined
    assert "def hint(self) -> str:\n    ..." in toy.marked_source()
    assert "# hole: turns allowed [1, 9]\nmax_turns = 3" in toy.marked_source()


def test_a_filling_becomes_a_complete_renamed_module(toy):
    filling, _ = parse_filling(
        'Sure:\n```json\n{"max_turns": 5, "knobs": {"top": 70}, "description": "Say it.",'
        ' "hint": "return \\"Big.\\" if self.top > 50 else \\"Small.\\""}\n```',
        toy,
    )
    source, name = toy.fill(filling)
    tree = ast.parse(source)
    [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert cls.name == name and name.startswith("ToyX") and len(name) == 10
    assert "max_turns = 5" in source and "'top': 70, 'scale': 1.5, 'loud': False" in source
    assert Scaffold(source).defaults()["description"] == "Say it."
    assert 'return "Big." if self.top > 50 else "Small."' in source
    assert '"""Help."""' in source and "# hole: rule: the hint" in source  # markers stay
    child = Scaffold(source, "child")  # a child is a parent in turn, with a short name
    assert child.defaults()["max_turns"] == 5
    assert child.fill({"max_turns": 2})[1].startswith("ToyX")
    assert len(child.fill({"max_turns": 2})[1]) == 10


def test_every_seed_with_holes_fills_back_to_itself():
    found = 0
    for name in seed_names():
        source = seed_source(name)
        if "# hole:" not in source:
            continue
        found += 1
        scaffold = Scaffold(source, name)
        filled, new_name = scaffold.fill(scaffold.defaults())
        assert filled.replace(new_name, name) == source.replace("\r\n", "\n") or ast.dump(
            ast.parse(filled.replace(new_name, name))
        ) == ast.dump(ast.parse(source)), name
    assert found == len(seed_names())  # every seed declares holes


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("I would make it harder.", "no JSON object"),
        ('{"max_turns": 4', "not closed"),
        ('{"max_turns": 4,, }', "not valid JSON"),
        ('{"max_turn": 4}', r"names no hole \(it has 'max_turn'\)\. Did you mean 'max_turns'"),
        ('{"max_turns": "4"}', "takes a number"),
        ('{"max_turns": 4.5}', "whole number"),
        ('{"max_turns": 40}', r"must lie in \[1, 9\]"),
        ('{"knobs": {"tpo": 4}}', "no key 'tpo'.*Did you mean 'top'"),
        ('{"knobs": {"loud": 1}}', "true or false"),
        ('{"description": ""}', "non-empty text"),
        ('{"hint": 3}', "as a non-empty string"),
        ('{"hint": "return ("}', "does not parse"),
        ('{"hint": "' + "x = 1\\n" * (MAX_RULE_LINES + 1) + '"}', "at most"),
        ("[1, 2]", "no JSON object"),
    ],
)
def test_bad_fillings_are_refused_with_the_reason(toy, reply, message):
    with pytest.raises(FillingError, match=message):
        parse_filling(reply, toy)


def test_a_python_dict_literal_is_accepted_and_ints_fill_float_holes(toy):
    filling, ignored = parse_filling("{'knobs': {'scale': 3}, 'max_turns': 2.0, 'x': 1}", toy)
    assert ignored == ["x"]  # keys naming no hole are ignored, and said
    assert filling == {"knobs": {"top": 10, "scale": 3.0, "loud": False}, "max_turns": 2}
    assert isinstance(filling["knobs"]["scale"], float) and isinstance(filling["max_turns"], int)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("class A:\n    x = 1\n", "declares no holes"),
        (
            "class A:\n    # hole: x\n\n    def f(self):\n        pass\n",
            "must stand directly above",
        ),
        ("class A:\n    # hole: x\n    x = len('a')\n", "not a literal"),
        ("class A:\n    # hole: x\n    x = y = 1\n", "value hole must stand above"),
        ("class A:\n    # hole: rule: r\n    x = 1\n", "rule hole must stand above a function"),
        ("x = 1\n", "defines no class"),
        ("class A(:\n", "does not parse"),
    ],
)
def test_parents_without_proper_holes_are_refused_by_name(source, message):
    with pytest.raises(NoHolesError, match=message) as refused:
        Scaffold(source, "spade/Plain-v3")
    assert "spade/Plain-v3" in str(refused.value)


def test_filling_distance_is_the_largest_change_of_any_hole(toy):
    base = toy.defaults()
    assert filling_distance(base, base) == 0.0
    nudged = {**base, "knobs": {**base["knobs"], "top": 10.2}}
    assert filling_distance(base, nudged) == pytest.approx(0.2 / 10.2)
    moved = {**base, "max_turns": 9}
    assert filling_distance(base, moved) == pytest.approx(6 / 9)
    assert filling_distance(base, {**base, "knobs": {**base["knobs"], "loud": True}}) == 1.0
    assert 0 < filling_distance(base, {**base, "description": "Reply with the number."}) < 0.5


@settings(max_examples=60, deadline=None)
@given(turns=st.integers(1, 9), top=st.integers(0, 1000), text=st.text(min_size=1, max_size=40))
def test_any_well_typed_filling_writes_a_module_that_parses(turns, top, text):
    scaffold = Scaffold(PARENT, "toy")
    if not text.strip():
        text = "x" + text
    filling, _ = parse_filling(
        json.dumps({"max_turns": turns, "knobs": {"top": top}, "description": text}), scaffold
    )
    source, name = scaffold.fill(filling)
    reread = Scaffold(source, name)
    assert reread.defaults()["max_turns"] == turns
    assert reread.defaults()["knobs"]["top"] == top
    assert reread.defaults()["description"] == text


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=6), inner, max_size=3)
        | st.sets(st.integers(), min_size=1, max_size=3)
        | st.tuples(inner)
    ),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None)
@given(
    reply=st.one_of(
        st.text(max_size=80),
        st.builds(
            lambda d: repr(d),
            st.dictionaries(
                st.sampled_from(["max_turns", "knobs", "description", "hint", "x"]),
                _VALUES,
                max_size=4,
            ),
        ),
    )
)
def test_any_reply_is_a_filling_or_a_filling_error(reply):
    # Model replies are arbitrary: parsing either succeeds or says why, never crashes.
    scaffold = Scaffold(PARENT, "toy")
    try:
        filling, _ = parse_filling(reply, scaffold)
    except FillingError:
        return
    scaffold.fill(filling)  # and what parses can be written


@pytest.mark.parametrize(
    "reply",
    [
        '{"hint": "return \'\\ud800\'"}',  # a lone surrogate in a rule body
        '{"max_turns": ' + "9" * 5000 + "}",  # past Python's int-string limit
        "[" * 1500 + "]" * 1500,  # not an object, and deep
        '{"knobs": ' + "[" * 1500 + "]" * 1500 + "}",
        '{"knobs": {"scale": ' + "9" * 400 + "}}",  # a float hole given a huge int
        '{"hint": "# hole: k [1e, 5]\\nreturn 1"}',  # a marker smuggled into a rule body
    ],
)
def test_hostile_replies_are_bad_fillings(toy, reply):
    with pytest.raises(FillingError):
        parse_filling(reply, toy)


def test_bad_bounds_and_overlapping_holes_are_refused():
    with pytest.raises(NoHolesError, match="are not two numbers"):
        Scaffold("class A:\n    # hole: x [1e, 5]\n    x = 1\n", "p")
    with pytest.raises(NoHolesError, match="not low <= high"):
        Scaffold("class A:\n    # hole: x [9, 5]\n    x = 1\n", "p")
    inside = "class A:\n    # hole: rule: r\n    def r(self):\n        # hole: y\n        y = 1\n        return y\n"
    with pytest.raises(NoHolesError, match="lies inside hole 'r'"):
        Scaffold(inside, "p")


def test_the_class_renamed_is_the_environment_class_the_gate_names():
    source = PARENT + "\n\nclass Helper:\n    pass\n"
    scaffold = Scaffold(source, "spade/Toy-v1")
    assert scaffold.class_name == "Toy"
    child, name = scaffold.fill({"max_turns": 4})
    assert f"class {name}(TextEnv)" in child and "class Helper:" in child
