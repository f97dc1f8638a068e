from __future__ import annotations

import textwrap

import pytest

from spade_envs.validation import Budget, get_budget
from spade_envs.validation.static import static_checks

GOOD = textwrap.dedent("""
    import random
    from spade_envs import TextEnv

    class Fine(TextEnv):
        max_turns = 5
        def _reset(self): return "hi"
        def _step(self, action): return "ok", 0.0, True
        def hint(self): return "h"
        def solution(self): return ["x"]
""")


def failed(source, **kwargs):
    results, info = static_checks(source, Budget(), **kwargs)
    return {r.name: r.reason for r in results if not r.passed and not r.skipped}, info


def test_a_good_module_passes_and_is_described():
    problems, info = failed(GOOD)
    assert problems == {} and (info.env_name, info.kind, info.max_turns) == ("Fine", "text", 5)


@pytest.mark.parametrize(
    ("source", "check", "words"),
    [
        ("def f(:\n", "syntax", "line 1"),
        (GOOD.replace("max_turns = 5", "max_turns = 100000"), "size", "max_turns = 100000"),
        ("x = 1\n", "env_class", "no environment class"),
        (
            GOOD + GOOD.split("from spade_envs import TextEnv")[1].replace("Fine", "Other"),
            "env_class",
            "found 2 environment classes (Fine, Other)",
        ),
        (
            GOOD.replace('    def solution(self): return ["x"]\n', ""),
            "env_class",
            "missing: solution",
        ),
        ("import os\n" + GOOD, "imports", "'os' is not allowed"),
        ("from importlib import import_module\n" + GOOD, "imports", "importlib"),
        (GOOD + "\nX = eval('1')\n", "imports", "eval() is not allowed"),
        (GOOD + "\nY = ().__class__.__subclasses__\n", "imports", "__subclasses__"),
        (GOOD.replace('return "hi"', "return input()"), "no_input", "input()"),
    ],
)
def test_static_problems_are_named(source, check, words):
    problems, _ = failed(source)
    assert check in problems and words in problems[check]


def test_abstract_intermediate_classes_do_not_count():
    source = GOOD.replace(
        "class Fine(TextEnv):", "class Base(TextEnv):\n    pass\n\nclass Fine(Base):"
    )
    problems, info = failed(source)
    assert problems == {} and info.env_name == "Fine"


def test_duck_typed_classes_are_recognised():
    source = textwrap.dedent("""
        import random
        class GuessEnv:
            def reset(self, seed=None): return "go"
            def step(self, action): return "ok", 0.0, True, {}
    """)
    problems, info = failed(source)
    assert problems == {} and info.kind == "duck" and info.env_name == "GuessEnv"


def test_allow_list_is_configurable():
    problems, _ = failed("import os\n" + GOOD, allowed_modules={"os", "random", "spade_envs"})
    assert problems == {}


def test_source_size_limit():
    problems, _ = failed(GOOD + "#" * 200_000)
    assert "200" in problems["size"] or "characters" in problems["size"]


def test_budgets_by_name_with_suggestions():
    assert get_budget("fast").seeds < get_budget("thorough").seeds
    with pytest.raises(Exception, match="Unknown budget 'fats'. Did you mean 'fast'"):
        get_budget("fats")
