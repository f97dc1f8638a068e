"""The labelled corpus: every broken environment is rejected for the right reason, every
valid one is accepted (see corpus/README.md for the label format)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_envs.validation import validate_many

CORPUS = Path(__file__).parent / "corpus"
BROKEN = sorted((CORPUS / "broken").glob("*.py"))
VALID = sorted((CORPUS / "valid").glob("*.py"))


def label(path: Path) -> list[str]:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect:"), f"{path.name} has no '# expect:' label"
    return first.removeprefix("# expect:").split()


@pytest.fixture(scope="session")
def reports():
    # Session-scoped: xdist's loadgroup interleaves this module with the suite imports of
    # the same group on one worker, and a module fixture is rebuilt each time the worker
    # comes back (the whole corpus validated twice, about 3 minutes each).
    paths = BROKEN + VALID
    # One validation process: the cases are timed, and with the other xdist worker busy
    # two more processes on two cores starved them past their wall-clock limits in CI.
    # Fixed check seeds, as for the seeds' own test: with fresh ones a valid case can meet a
    # rare seed where an answer it shows is also right (half_life_lab_duck at 194610).
    results = validate_many(
        [p.read_text(encoding="utf-8") for p in paths], progress=False, workers=1, seed=0
    )
    return dict(zip(paths, results))


def test_corpus_is_big_enough():
    assert len(BROKEN) >= 40 and len(VALID) >= 15


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_environment_is_rejected_for_the_right_reason(path, reports):
    check, *words = label(path)
    report = reports[path]
    assert not report.passed, f"{path.name} was accepted"
    failed = {c.name: c.reason for c in report.failures}
    assert check in failed, f"{path.name}: expected {check} to fail, failures: {failed}"
    for word in words:
        assert word.lower() in failed[check].lower(), f"{path.name}: {failed[check]!r}"


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_environment_is_accepted(path, reports):
    assert label(path) == ["valid"]
    report = reports[path]
    assert report.passed, f"{path.name} was rejected:\n{report.feedback()}"
