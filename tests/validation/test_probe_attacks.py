"""Issue 25's hostile environments (``attacks/``): probes they cannot predict, seeds in
every band plays use, and enumeration of small stated ranges reject each one, for the
reason its label names; honest seeds still pass.

Each program is validated twice: with check seeds drawn afresh (``seed=None``, as
production validates: the environment cannot know them) and with a fixed seed (as a
reproducible run does).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spade_envs.sandbox import SandboxConfig
from spade_envs.seeds import seed_source
from spade_envs.validation import Validator

ATTACKS = Path(__file__).with_name("attacks")
LABEL = re.compile(
    r"^# attack: (?P<category>[a-z0-9_-]+) expect: rejected \[(?P<checks>[a-z_, ]+)\] "
    r"reason: (?P<reason>.+?)\s*$"
)
#: Every worker here is bounded (the hostile corpus's limits): a regression fails a test
#: instead of harming the machine.
LIMITS = SandboxConfig(memory_mb=1024, cpu_seconds=10, max_processes=16, call_timeout=10.0)


def _label(path: Path) -> tuple[tuple[str, ...], str]:
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    match = LABEL.match(first)
    assert match, f"{path.name}: malformed label {first!r}"
    return tuple(c.strip() for c in match["checks"].split(",")), match["reason"]


PROGRAMS = sorted(ATTACKS.glob("*.py"))


@pytest.fixture(scope="module", params=[None, 25], ids=["fresh-seeds", "fixed-seed"])
def probing(request):
    with Validator("default", config=LIMITS, pool_size=2, seed=request.param) as validator:
        yield validator


def test_the_corpus_holds_the_attacks_of_issue_25():
    names = {p.stem for p in PROGRAMS}
    assert {
        "seed_band_evaluation",
        "first_episode_beyond_fixed_list",
        "number_guess_enumeration",
    } <= names


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_attack_is_rejected_for_the_labelled_reason(path, probing):
    checks, reason = _label(path)
    report = probing.validate(path.read_text(encoding="utf-8"), filename=path.name)
    failed = {c.name: c.reason for c in report.failures}
    assert not report.passed, f"{path.name} was accepted"
    matching = [c for c in checks if c in failed and re.search(reason, failed[c], re.I)]
    assert matching, f"{path.name}: expected one of {checks} to fail matching {reason!r}: {failed}"


@pytest.mark.parametrize("name", ["NumberGuess", "LabThermostat", "Mastermind"])
def test_honest_seeds_with_stated_ranges_pass(name, probing):
    report = probing.validate(seed_source(name))
    assert report.passed, report.feedback()
