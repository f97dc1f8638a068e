"""math_verify in environment code: SPADE's single-turn environments grade with it.

A SPADE-shaped environment (a ``*Env`` class with ``reset(seed=None)`` returning
``(question, {})``, ``step`` scoring the ``\\boxed{}`` answer with
``math_verify.verify(math_verify.parse(gold), math_verify.parse(answer))`` and
``solution()`` returning the gold answer) passes the validator in the real sandbox and
plays through the door in every sandbox configuration the attack tests use. The static
filter allows only math_verify's grading names; the hostile programs that reach for the
rest (sympify, ``os``) are in ``tests/sandbox/attacks/math_verify_*.py``.

Bounded like the sandbox tests: one worker at a time, 1 GB, 10 s of CPU per worker.
"""

from __future__ import annotations

import decimal
import json
import os
import re

import pytest

from spade_envs.error import SandboxTimeout
from spade_envs.runtime.door import open_source
from spade_envs.sandbox import SandboxConfig, WorkerPool, capabilities, open_env
from spade_envs.validation.budget import get_budget
from spade_envs.validation.static import MATH_VERIFY_NAMES, static_checks

SOURCE = r'''
import random

import math_verify


def last_boxed(text):
    """The contents of the last \boxed{...} in text (braces may nest), or None."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, begin = 0, start + len("\\boxed{")
    for index in range(begin, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            if depth == 0:
                return text[begin:index]
            depth -= 1
    return None


class RecipeFractionEnv:
    """Add two fractions of a cup; any equivalent form of the sum is right."""

    def __init__(self, max_turns=1, **kwargs):
        self.max_turns = max_turns
        self.gold = None

    def reset(self, seed=None):
        rng = random.Random(seed)
        a, b = rng.randint(1, 7), rng.choice([2, 4, 5, 8])
        c, d = rng.randint(1, 7), rng.choice([2, 4, 5, 8])
        num, den = a * d + c * b, b * d
        for k in range(den, 1, -1):
            if num % k == 0 and den % k == 0:
                num, den = num // k, den // k
                break
        self.gold = str(num) if den == 1 else f"\\frac{{{num}}}{{{den}}}"
        question = (
            f"A recipe needs {a}/{b} cup of flour and {c}/{d} cup of sugar. How many cups "
            "is that together? Put the answer in \\boxed{}."
        )
        return question, {}

    def step(self, action):
        answer = last_boxed(str(action))
        if answer is None:
            return "No \\boxed{} answer found.", 0.0, True, False, {}
        gold = math_verify.parse("$" + self.gold + "$")
        given = math_verify.parse("$" + answer + "$")
        if math_verify.verify(gold, given):
            return "Correct!", 1.0, True, False, {}
        return "Wrong.", 0.0, True, False, {}

    def solution(self):
        return self.gold
'''

LIMITS = dict(memory_mb=1024, cpu_seconds=10, call_timeout=10.0, load_timeout=10.0)
#: The configurations of tests/runtime/test_play_attacks.py and tests/sandbox/test_attacks.py,
#: with the layers each needs.
CONFIGS = {
    "all": (SandboxConfig(**LIMITS), ("bubblewrap", "seccomp")),
    "no-bwrap": (SandboxConfig(bubblewrap=False, **LIMITS), ("seccomp",)),
    "no-seccomp": (SandboxConfig(seccomp=False, **LIMITS), ("bubblewrap",)),
}


def _require_layers(config: str) -> None:
    missing = [layer for layer in CONFIGS[config][1] if not getattr(capabilities(), layer)]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"configuration {config} needs {missing}, which CI must provide")
        pytest.skip(f"configuration {config} needs {missing}, not usable on this machine")


@pytest.fixture(scope="module", params=list(CONFIGS))
def pool(request):
    _require_layers(request.param)
    with WorkerPool(CONFIGS[request.param][0], size=0) as pool:
        yield pool


def _gold(seed: int) -> str:
    """The gold answer of episode ``seed``, computed here from the same (trusted) source."""
    namespace: dict = {}
    exec(compile(SOURCE, "<test>", "exec"), namespace)
    env = namespace["RecipeFractionEnv"]()
    env.reset(seed=seed)
    return env.gold


def _fraction(gold: str) -> tuple[int, int]:
    match = re.fullmatch(r"\\frac\{(\d+)\}\{(\d+)\}|(\d+)", gold)
    assert match, gold
    if match[3]:
        return int(match[3]), 1
    return int(match[1]), int(match[2])


# ----- the static filter ----------------------------------------------------------------------
def _imports_reason(source: str) -> str:
    results, _ = static_checks(source, get_budget("default"))
    failed = {c.name: c.reason for c in results if not c.passed and not c.skipped}
    assert set(failed) <= {"imports"}, failed
    return failed.get("imports", "")


_CLASS = """

class GradeEnv:
    def reset(self, seed=None):
        return "What is 1/2? Answer in \\\\boxed{}.", {}

    def step(self, action):
        return "ok", float(GRADE(action)), True, False, {}

    def solution(self):
        return "0.5"
"""

ALLOWED_USES = {
    "spade_template": "from math_verify import parse, verify\n"
    "GRADE = lambda a: verify(parse(a), parse('0.5'))",
    "module_attributes": "import math_verify\n"
    "GRADE = lambda a: math_verify.verify(math_verify.parse('$0.5$'), math_verify.parse(a))",
    "alias_and_configs": "import math_verify as mv\n"
    "from math_verify import LatexExtractionConfig, LatexNormalizationConfig\n"
    "CONFIG = [LatexExtractionConfig(normalization_config=LatexNormalizationConfig()),"
    " mv.ExprExtractionConfig(), mv.StringExtractionConfig()]\n"
    "GRADE = lambda a: mv.verify(mv.parse('0.5'), mv.parse(a, extraction_config=CONFIG))",
}


@pytest.mark.parametrize("name", sorted(ALLOWED_USES))
def test_the_static_filter_allows_grading_with_math_verify(name):
    assert _imports_reason(ALLOWED_USES[name] + _CLASS) == ""


def test_the_environment_passes_the_static_filter():
    assert _imports_reason(SOURCE) == ""


#: Uses that reach past the grading names: (snippet, what the reason must say).
REFUSED_USES = {
    "submodule_attribute": (
        "import math_verify\nGRADE = math_verify.parser.sympy.sympify",
        r"math_verify\.parser is not allowed: use only .*parse, verify .*sympy",
    ),
    "utils_os": (
        "import math_verify as mv\nGRADE = lambda a: mv.utils.os.system(a)",
        r"math_verify\.utils is not allowed",
    ),
    "import_submodule": (
        "import math_verify.parser\nGRADE = math_verify.parser.parse",
        r"import of 'math_verify\.parser': take .* from the top-level package only",
    ),
    "from_submodule": (
        "from math_verify.grader import sympy_expr_eq as GRADE",
        r"import of 'math_verify\.grader'",
    ),
    "from_submodule_sympy": (
        "from math_verify.parser import sympy\nGRADE = sympy.sympify",
        r"import of 'math_verify\.parser'",
    ),
    "unlisted_name": (
        "from math_verify import math_metric as GRADE",
        r"math_verify\.math_metric is not allowed",
    ),
    "star": ("from math_verify import *\nGRADE = verify", r"math_verify\.\* is not allowed"),
    "getattr_on_module": (
        "import math_verify\nGRADE = getattr(math_verify, 'par' + 'ser').sympy.sympify",
        r"the math_verify module may only be used as math_verify\.<name>",
    ),
    "module_passed_on": (
        "import math_verify\nM = math_verify\nGRADE = M.parser.sympy.sympify",
        r"the math_verify module may only be used as math_verify\.<name>",
    ),
    "vars_of_module": (
        "import math_verify\nGRADE = vars(math_verify)['parser'].sympy.sympify",
        r"the math_verify module may only be used",
    ),
    "dunder_dict": (
        "import math_verify\nGRADE = math_verify.__dict__['parser']",
        r"math_verify\.__dict__ is not allowed",
    ),
    "sympy_itself": ("import sympy\nGRADE = sympy.sympify", r"import of 'sympy' is not allowed"),
    "latex2sympy": (
        "from latex2sympy2_extended import latex2sympy as GRADE",
        r"import of 'latex2sympy2_extended' is not allowed",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED_USES))
def test_the_static_filter_refuses_the_rest_of_math_verify(name):
    snippet, reason = REFUSED_USES[name]
    found = _imports_reason(snippet + _CLASS)
    assert re.search(reason, found), found


def test_the_allowed_names_are_math_verify_public_grading_api():
    import math_verify

    assert set(math_verify.__all__) - MATH_VERIFY_NAMES == {"math_metric"}
    for name in MATH_VERIFY_NAMES:
        assert callable(getattr(math_verify, name)), name


# ----- in the sandbox -------------------------------------------------------------------------
def test_the_environment_validates(validator):
    """The real gate: default budget, default sandbox (every layer this machine has)."""
    report = validator.validate(SOURCE)
    assert report.passed, report.summary()
    load = next(c for c in report.checks if c.name == "load")
    # The worker imports math_verify (sympy) while loading: inside the load limit, or the
    # load check would have failed with a time-out.
    assert load.passed, load


def test_it_plays_through_the_door(pool):
    env = open_source(SOURCE, pool=pool)
    try:
        for seed in (0, 1, 2):
            observation, _info = env.reset(seed=seed)
            assert "\\boxed{}" in observation
            (action,) = env.solution()
            assert action == f"\\boxed{{{_gold(seed)}}}"
            _obs, reward, terminated, truncated, _info = env.step(action)
            assert (reward, terminated, truncated) == (1.0, True, False)

            num, den = _fraction(_gold(seed))
            exact = decimal.Decimal(num) / decimal.Decimal(den)  # den is 2^i 5^j: exact
            right = [
                f"\\boxed{{{exact}}}",
                f"\\boxed{{\\frac{{{2 * num}}}{{{2 * den}}}}}",
                f"\\boxed{{\\dfrac{{{num}}}{{{den}}}}}",
                f"\\boxed{{{num}/{den}}}",
                f"Adding them gives $\\frac{{{3 * num}}}{{{3 * den}}}$, so \\boxed{{{exact}}}.",
            ]
            wrong = [
                f"\\boxed{{{exact + 1}}}",
                f"\\boxed{{\\frac{{{num + 1}}}{{{den}}}}}",
                f"{exact}",  # no \boxed{}
                "\\boxed{}",
                "\\boxed{x}",
            ]
            for answers, expected in ((right, 1.0), (wrong, 0.0)):
                for answer in answers:
                    env.reset(seed=seed)
                    assert env.step(answer)[1] == expected, (seed, answer)
    finally:
        env.close()


def test_a_half_is_a_half(pool):
    """The example of the brief: gold \\frac{1}{2}, answered 0.5."""
    seed = next(s for s in range(5000) if _gold(s) == "\\frac{1}{2}")
    env = open_source(SOURCE, pool=pool)
    try:
        for answer, expected in (("\\boxed{0.5}", 1.0), ("\\boxed{0.25}", 0.0)):
            env.reset(seed=seed)
            assert env.step(answer)[1] == expected, answer
    finally:
        env.close()


PROBE = """
import json
import signal
import sys

from spade_envs import TextEnv

HEAVY = ("math_verify", "sympy", "mpmath", "latex2sympy2_extended", "antlr4")


class Probe(TextEnv):
    skill = "code"
    description = "Reports what the worker loaded and what signal.alarm does."
    max_turns = 1

    def _reset(self):
        loaded = sorted(name for name in HEAVY if name in sys.modules)
        return json.dumps({"loaded": loaded, "alarm": [signal.alarm(30), signal.alarm(0)]})

    def _step(self, action):
        return "done", 0.0, True

    def hint(self):
        return "none"

    def solution(self):
        return ["done"]
"""


def test_workers_load_math_verify_only_for_environments_that_import_it(pool):
    """Worker start-up stays light, and math_verify's alarm arms nothing in any
    configuration (without seccomp too): no reward depends on real time."""
    env = open_env(PROBE, pool=pool)
    try:
        observation, _info = env.reset(seed=0)
    finally:
        env.close()
    assert json.loads(observation) == {"loaded": [], "alarm": [0, 0]}


WARM_PROBE = """
import json
import sys

import math_verify

from spade_envs import TextEnv

# Recorded as the module runs: what math_verify's first parse() had already built.
PARSER = sys.modules["math_verify.parser"]
BUILT = [PARSER.lazy_latex_regex.cache_info().currsize, PARSER.lazy_expr_regex.cache_info().currsize]


class WarmProbe(TextEnv):
    skill = "code"
    description = "Reports whether math_verify had graded an answer before this code ran."
    max_turns = 1

    def _reset(self):
        return json.dumps(BUILT)

    def _step(self, action):
        return "done", 0.0, True

    def hint(self):
        return "none"

    def solution(self):
        return ["done"]
"""


def test_an_environment_that_imports_math_verify_finds_it_warm(pool):
    """The first parse() builds math_verify's grammar and regexes (0.1 s of CPU quiet, over
    the 0.5 s a step may take on a loaded machine: a valid environment was once rejected
    in CI for it). The worker grades one answer before the environment's code runs, so
    that cost counts against loading and the first step() costs what the others do."""
    env = open_env(WARM_PROBE, pool=pool)
    try:
        observation, _info = env.reset(seed=0)
    finally:
        env.close()
    assert json.loads(observation) == [1, 1]


def test_a_slow_comparison_ends_in_the_call_limit():
    """``\\boxed{10^{10^{10}}+1}`` keeps sympy busy past any limit: with math_verify's
    alarm disarmed, the parent's wall-clock limit ends the call and kills the worker."""
    _require_layers("all")
    config = SandboxConfig(**{**LIMITS, "call_timeout": 3.0})
    with WorkerPool(config, size=0) as pool:
        env = open_source(SOURCE, pool=pool)
        try:
            env.reset(seed=0)
            # Ended by the parent's 3 s call limit (the message names it), not by the CPU
            # limit or math_verify's own alarm.
            with pytest.raises(SandboxTimeout, match=r"step\(\) did not finish within 3 s"):
                env.step("\\boxed{10^{10^{10}}+1}")
        finally:
            env.close()
