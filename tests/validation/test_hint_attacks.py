"""The hint attacks of issue 25 ("Hint and suite rules"): each program in
``corpus/hint_attacks/``
is rejected for the labelled reason, and the honest controls there still validate.

Labels (first line)::

    # attack: <category> expect: rejected [<check>] match: <regex> [also: suite-import]
    # control: valid

``match`` is searched in the failing check's reason; ``also: suite-import`` validates
the program a second time as the suite importer would (``suite_import=True``): the
suite exemption must not apply to it either. Every program runs under test-sized
sandbox limits (50 processes, 1 GB, 10 s of CPU per worker).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spade_envs.sandbox import SandboxConfig
from spade_envs.validation import Validator

CORPUS = Path(__file__).parent / "corpus" / "hint_attacks"
LABEL = re.compile(
    r"^# attack: (?P<category>[a-z-]+) expect: rejected \[(?P<check>[a-z_]+)\] "
    r"match: (?P<match>.+?)(?P<suite> also: suite-import)?\s*$"
)
CONTROL = "# control: valid"
LIMITS = SandboxConfig(
    memory_mb=1024, cpu_seconds=10, max_processes=50, call_timeout=10.0, load_timeout=10.0
)
PROGRAMS = sorted(CORPUS.glob("*.py"))


def _first_line(path: Path) -> str:
    return path.read_text(encoding="utf-8").split("\n", 1)[0]


ATTACKS = [p for p in PROGRAMS if _first_line(p).startswith("# attack:")]
CONTROLS = [p for p in PROGRAMS if _first_line(p) == CONTROL]


@pytest.fixture(scope="module")
def validator():
    with Validator("fast", config=LIMITS, pool_size=2) as v:
        yield v


def test_the_corpus_is_labelled():
    assert len(ATTACKS) >= 7 and CONTROLS
    assert set(ATTACKS) | set(CONTROLS) == set(PROGRAMS), "a program without a label"
    categories = set()
    for path in ATTACKS:
        match = LABEL.match(_first_line(path))
        assert match, f"{path.name}: malformed label"
        re.compile(match["match"])
        categories.add(match["category"])
    assert {"hint-leak", "hint-effect", "suite-exemption"} <= categories


def _assert_rejected(report, check: str, pattern: str, name: str) -> None:
    assert not report.passed, f"{name} was VALIDATED:\n{report.summary()}"
    failed = {c.name: c.reason for c in report.failures}
    assert check in failed, f"{name}: expected {check} to fail, failures: {failed}"
    assert re.search(pattern, failed[check]), f"{name}: {failed[check]!r} !~ {pattern!r}"


@pytest.mark.parametrize("path", ATTACKS, ids=lambda p: p.stem)
def test_attack_is_rejected_for_the_labelled_reason(path: Path, validator):
    label = LABEL.match(_first_line(path))
    source = path.read_text(encoding="utf-8")
    report = validator.validate(source, filename=path.name)
    _assert_rejected(report, label["check"], label["match"], path.name)
    if label["suite"]:
        report = validator.validate(source, filename=path.name, suite_import=True)
        _assert_rejected(report, label["check"], label["match"], f"{path.name} (suite import)")


@pytest.mark.parametrize("path", CONTROLS, ids=lambda p: p.stem)
def test_honest_control_validates(path: Path, validator):
    report = validator.validate(path.read_text(encoding="utf-8"), filename=path.name)
    assert report.passed, report.feedback()
    effect = {c.name: c for c in report.checks}["hint_effect"]
    assert effect.passed and effect.details.get("episodes", 0) > 0, effect
