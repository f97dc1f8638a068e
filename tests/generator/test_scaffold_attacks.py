"""Hostile fillings of the scaffold designer: what a model's JSON reply can do to the pipeline.

Each test is an attack a designer model (or whoever controls its replies) can make; the
strict xfails are holes found and not yet closed (each names the fix), so they show in
every run and turn red once closed.
"""

from __future__ import annotations

import json
import time

import pytest

from spade_envs import describe, seed_class
from spade_envs.generator.scaffold import (
    FillingError,
    NoHolesError,
    Scaffold,
    filling_distance,
    parse_filling,
)
from spade_envs.memory import HashingEmbedder, Memory, MemoryConfig
from spade_envs.registry import Registry
from spade_envs.seeds import seed_source
from spade_envs.validation.static import static_metadata

from .test_scaffold_pipeline import PARENT, run


@pytest.fixture
def setup(tmp_path, registry_url):
    """A registry holding the NumberGuess seed (the parent), as in test_scaffold_pipeline."""
    from spade_envs.corpus import open_corpus

    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"text": "A document about guessing numbers. " * 6}) + "\n")
    registry = Registry(registry_url)
    registry.register_many(
        [(seed_source("NumberGuess"), describe(seed_class("NumberGuess")))], status="validated"
    )
    memory = Memory(registry, MemoryConfig(index="exact"), embedder=HashingEmbedder())
    yield registry, memory, open_corpus(docs, min_words=3)
    registry.close()


#: The parent's own hint body (NumberGuess), as the designer is shown it.
HINT = (
    'parity = "even" if self.secret % 2 == 0 else "odd"\n'
    'half = "upper" if self.secret > self.upper // 2 else "lower"\n'
    'return f"The number is {parity} and lies in the {half} half of the range."'
)


# ----- novelty ----------------------------------------------------------------------------------
def test_the_hint_the_attacks_copy_is_the_parents_own():
    # An ordinary test, so a changed seed fails here (and says to update HINT) instead of
    # changing what the strict xfail below runs.
    assert Scaffold(seed_source("NumberGuess")).defaults()["hint"] == HINT, "update HINT"


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,  # only the attack's own assertion: anything else is a failure
    reason="filling_distance compares rule bodies as raw text (scaffold.py _distance): a "
    "comment makes the parent's own hint 'new'; compare ast.dump(ast.parse(body)) instead",
)
def test_a_comment_in_the_rule_body_is_not_a_new_environment(setup):
    registry = setup[0]
    # The parent's hint as the designer is shown it, read from the seed itself (no skip: a
    # skip would hide this xfail; test_the_hint_the_attacks_copy_is_the_parents_own
    # watches HINT).
    own = Scaffold(seed_source("NumberGuess")).defaults()["hint"]
    copy = own + "\n# this hint is exactly the parent's own, word for word, nothing new"
    report, _ = run(setup, [[json.dumps({"hint": copy})]], repair_rounds=0)
    [attempt] = report.attempts
    assert attempt.failure == "not_novel", (
        f"a behavioural copy of {PARENT} was registered as {attempt.env_id}: "
        f"{registry.get(attempt.env_id).name if attempt.env_id else attempt.reason}"
    )


#: 60 characters: a registry name may have 64, a child's base is cut to 56.
LONG = "NumberGuessWithAVeryLongDescriptiveNameThatGoesOnAndOnAndOnX"


@pytest.mark.xfail(
    strict=True,
    reason="Scaffold.fill cuts the base name to 56 characters (scaffold.py fill), and "
    "ScaffoldParents.family/held_out match base names (parents.py family, scaffold_of): "
    "the children of a parent with a longer name are nobody's family; refuse such parents "
    "in Scaffold.__init__ or match families by lineage (extra.scaffold.parent)",
)
def test_siblings_of_a_long_named_parent_are_compared(setup):
    registry = setup[0]
    assert len(LONG) == 60
    source = seed_source("NumberGuess").replace("NumberGuess", LONG)
    parent = registry.register(
        source, static_metadata(source, origin="imported"), status="validated"
    )
    scripts = [['{"knobs": {"upper": 200}}'], ['{"knobs": {"upper": 204}}']]  # 2% apart
    report, _ = run(setup, scripts, parent=parent.id, repair_rounds=0)
    stages = [(a.stage, a.failure) for a in report.attempts]
    assert stages == [("registered", None), ("valid", "not_novel")], stages


# ----- the lines the filler counts are not the lines the parser counts -------------------------
#: A rule body whose first line holds a raw form feed inside a string: Python reads one line
#: there, ``str.splitlines`` (which ``Scaffold`` uses for offsets) reads two.
FORM_FEED_HINT = (
    '_ = "\x0c"\nreturn "The number is even." if self.secret % 2 == 0 else "The number is odd."'
)


def _child_with_a_form_feed(setup):
    report, _ = run(
        setup, [[json.dumps({"hint": FORM_FEED_HINT, "max_turns": 9})]], repair_rounds=0
    )
    [attempt] = report.attempts
    assert attempt.stage == "registered", attempt.reason
    return attempt.env_id


@pytest.mark.xfail(
    strict=True,
    reason="Scaffold reads positions with ast (lines end at \\n) but cuts the text by "
    "str.splitlines (also at \\x0b \\x0c \\x1c-\\x1e \\x85 \\u2028 \\u2029) in _hole and "
    "fill: in a child whose source holds one, a filling edits the wrong span, and the values "
    "recorded (what novelty compares) are not the code registered; split on \\n only (or "
    "refuse those characters in _rule_body) and check in fill() that Scaffold(child) reads "
    "the filling back",
)
def test_the_values_a_child_is_registered_with_are_its_code(setup):
    registry = setup[0]
    child = _child_with_a_form_feed(setup)
    # One statement that returns nothing: the misread span is the form feed's line only, so
    # the child's own return stays and runs. The hint is still the child's, word for word,
    # while the filling says it is new (and far from every sibling's).
    filling = {"hint": '_ = "a new hint: whether the number lies above or below the middle"'}
    report, _ = run(setup, [[json.dumps(filling)]], parent=child, repair_rounds=0)
    [attempt] = report.attempts
    if attempt.stage != "registered":
        return  # refused (bad_filling, not_novel): a fix
    record = registry.get(attempt.env_id)
    assert record.extra["scaffold"]["values"]["hint"] == filling["hint"]
    code = Scaffold(record.source, record.id).defaults()["hint"]
    assert code == filling["hint"], (
        f"{record.id} was registered with a hint its code lacks:\n{code}"
    )


@pytest.mark.xfail(
    strict=True,
    reason="the same misread span (scaffold.py fill) can leave an opening triple quote: "
    "_rename's tokenize raises TokenError, which _judge_filling (pipeline.py, catches "
    "FillingError only) lets out of Designer.run(); catch any exception of parse/fill "
    "there as bad_filling",
)
def test_a_child_that_misreads_cannot_crash_a_designer_batch(setup):
    body = '_ = "\x0c"\nreturn """The number is\neven or odd."""'
    report, _ = run(setup, [[json.dumps({"hint": body, "max_turns": 9})]], repair_rounds=0)
    [attempt] = report.attempts
    assert attempt.stage == "registered", attempt.reason
    # The grandchild fills the rule again: the span cut ends before the closing line.
    report, _ = run(setup, [['{"hint": "return \'x\'"}']], parent=attempt.env_id, repair_rounds=0)
    [attempt] = report.attempts
    assert attempt.failure in ("bad_filling", "invalid"), attempt


# ----- names ------------------------------------------------------------------------------------
TOY = '''"""A toy parent."""

from spade_envs import TextEnv, boxed


class Toy(TextEnv):
    skill = "math"
    # hole: what the task says
    description = "Reply with the number."
    # hole: turns allowed [1, 9]
    max_turns = 3
    # hole: difficulty [0, 1000]
    knobs = {"top": 10}

    def _reset(self) -> str:
        return f"Say {self.top}."

    def _step(self, action):
        return "ok", float(action == boxed(self.top)), True

    # hole: rule: the hint
    def hint(self) -> str:
        return "It is small."

    def solution(self):
        return [boxed(self.top)]
'''
#: Found offline in 5 s on two cores (2**24 tries at most): the grandchild's 6 hex digits
#: are its parent's.
COLLIDING = '{"description": "Say the number (variant 12395584)."}'


@pytest.mark.xfail(
    strict=True,
    reason="a child's name is its base, X and 6 hex digits of its source (scaffold.py fill): "
    "24 bits, so a filling can be searched (seconds) that gives a child its parent's name, "
    "and registering it makes it a new version of the parent (siblings collide by chance "
    "after ~4,000); refuse a name equal to the parent's in fill() and one the registry "
    "already holds in Designer._gate, and use more digits",
)
def test_a_child_never_takes_its_parents_name():
    child, parent_name = Scaffold(TOY, "spade/Toy-v1").fill({"max_turns": 5})
    scaffold = Scaffold(child, f"spade/{parent_name}-v1")
    filling, _ = parse_filling(COLLIDING, scaffold)
    try:
        grandchild, name = scaffold.fill(filling)
    except FillingError:
        return  # refused: a fix
    assert grandchild != child
    assert name != parent_name, f"the grandchild is named {name}, as its parent"


# ----- the parent's CPU -------------------------------------------------------------------------
def _periodic(period: int, size: int) -> str:
    """Text of ``period`` distinct characters (each under 1%, so difflib's autojunk keeps them)."""
    return "".join(chr(0x4E00 + i % period) for i in range(size))


@pytest.mark.xfail(
    strict=True,
    reason="a rule body is bounded in lines, not characters (scaffold.py _rule_body), and "
    "filling_distance compares bodies with difflib.SequenceMatcher, quadratic on such "
    "text: every family member with a long body costs the designer process seconds to "
    "minutes (an 80,000-character body fits the source limit); cap a body's characters "
    "(and text holes') in parse_filling",
)
def test_comparing_long_rule_bodies_costs_the_designer_little():
    scaffold = Scaffold(seed_source("NumberGuess"), PARENT)
    bodies = []
    try:
        for period in (200, 201):
            body = f'_ = "{_periodic(period, 20_000)}"\nreturn "The number is even or odd."'
            bodies.append(parse_filling(json.dumps({"hint": body}), scaffold)[0])
    except FillingError:
        return  # refused: a fix
    start = time.process_time()
    filling_distance(*bodies)
    spent = time.process_time() - start
    assert spent < 1.0, f"comparing two rule bodies took {spent:.1f} s of the designer's CPU"


# ----- what holds (guards against regressions) ------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "[1," + "1" * 30_000 + " x",
        "[" * 30_000 + "1, 1",
        "[1, 1" + " " * 30_000 + "x",
        "[1,1 " * 6_000,
        "[1" + " " * 30_000 + "," + " " * 30_000 + "1" + " " * 30_000,
        "[-" + ".e+" * 10_000 + ",",
        "[1, " + "9" * 30_000 + "]",
    ],
)
def test_pathological_markers_cost_linear_time(text):
    # A parent's markers are read in the designer process (_MARKER, _BOUNDS): no backtracking.
    source = f"class A:\n    # hole: {text}\n    x = 1\n"
    start = time.process_time()
    try:
        Scaffold(source, "p")
    except NoHolesError:
        pass
    assert time.process_time() - start < 0.5


# ----- attempts read back from a checkpoint (state.json "pending") ---------------------------
def _resume_with(pending_attempt: dict, tmp_path):
    """Restore a trainer's pending designer attempts from a hand-edited state.json."""
    from spade_envs.trainer.checkpoint import Checkpoint
    from spade_envs.trainer.loop import SelfPlayTrainer

    base = {"index": 0, "mode": "new", "skill": "math"}
    state = {
        "iteration": 1,
        "run_id": "r",
        "rng": {},
        "pending": [[1, [{**base, **pending_attempt}]]],
    }
    checkpoint = Checkpoint(tmp_path, 1, {}, state, "", "")
    trainer = SelfPlayTrainer.__new__(SelfPlayTrainer)
    trainer._restore(checkpoint)


@pytest.mark.parametrize(
    "edit", [{"stage": "bogus"}, {"failure": "Invalid"}, {"stage": "x" * 100_000}, {"extra": 1}]
)
def test_a_damaged_pending_attempt_fails_the_resume_with_a_checkpoint_error(edit, tmp_path):
    from spade_envs.trainer.checkpoint import CheckpointError

    with pytest.raises(CheckpointError) as info:
        _resume_with(edit, tmp_path)
    assert len(str(info.value)) < 2_000  # a huge value is not echoed whole


@pytest.mark.parametrize("failure", [0, False, []])
def test_a_non_string_failure_is_refused(failure):
    from spade_envs.generator import Attempt

    with pytest.raises((ValueError, TypeError)):
        Attempt(index=0, mode="new", skill="math", stage="parsed", failure=failure)


def test_a_reason_that_reads_like_another_failure_is_counted_by_its_failure():
    """Metrics count the failure enum, never the (model-influenced) reason text."""
    from spade_envs.generator import Attempt
    from spade_envs.trainer.metrics import reject_field
    from spade_envs.trainer.stages import design_summary

    attempt = Attempt(
        index=0,
        mode="scaffold",
        skill="math",
        stage="parsed",
        failure="invalid",
        reason="truncated (hit max_tokens) not novel: registered",
    )
    summary = design_summary([attempt])
    assert summary["registered"] == 0
    assert reject_field(next(iter(summary["failures"]))) == "reject_invalid"
