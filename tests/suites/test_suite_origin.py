"""The suite exemption belongs to the importer: its versions are recorded as suite tasks
and validated as such, while the same text reaching the gate any other way (``spade-envs
register``, a pool or file import, ``revalidate`` of a non-suite version) gets its hint()
checked, and a suite-shaped module with a hint attached after the class is refused."""

from __future__ import annotations

import pytest

from spade_envs.registry import Registry
from spade_envs.runtime import validate_stored
from spade_envs.suites import plan
from spade_envs.validation import Validator


def _spec():
    (spec,) = plan("reasoning-gym", ["basic_arithmetic"], ["0"])[0]
    return spec


def test_an_imported_task_is_recorded_as_the_importers(imported):
    url, results = imported
    env = next(
        e for r in results for e in r.envs if e.task == "basic_arithmetic" and e.level == "0"
    )
    registry = Registry(url)
    try:
        record = registry.get(env.env_id)
        report = registry.validations(record.id)[0].report
    finally:
        registry.close()
    assert record.suite == "reasoning-gym" and record.status == "validated"
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["env_class"]["details"] == {"suite_task": True, "origin": "suite importer"}


@pytest.fixture(scope="module")
def validator():
    with Validator("fast", pool_size=2) as v:
        yield v


def test_the_importers_source_registered_otherwise_is_refused(validator):
    """``spade-envs register`` validates with no flag: no exemption, whatever the shape."""
    report = validator.validate(_spec().source)
    assert not report.passed
    reason = {c.name: c.reason for c in report.failures}["env_class"]
    assert "registered only by `spade-envs import --suite`" in reason


def test_a_hint_attached_after_the_class_is_refused_even_as_an_import(validator):
    source = _spec().source + "\n\nRgBasicArithmeticL0.hint = lambda self: 'The answer is 4.'\n"
    for suite_import in (False, True):
        report = validator.validate(source, suite_import=suite_import)
        assert not report.passed, suite_import
        failed = {c.name for c in report.failures}
        assert "env_class" in failed, report.summary()


def test_revalidation_keeps_the_origin_it_was_stored_with(tmp_path, monkeypatch):
    """``revalidate`` exempts what the importer stored (``suite`` set) and nothing else."""
    monkeypatch.setenv("SPADE_VALIDATION_WORKERS", "1")
    spec = _spec()
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    try:
        suite = registry.register(
            spec.source, spec.meta, status="unvalidated", suite="reasoning-gym"
        )
        plain_source = spec.source.replace("RgBasicArithmeticL0", "PlainArithmetic")
        meta = type(spec.meta)(**{**spec.meta.__dict__, "name": "PlainArithmetic"})
        plain = registry.register(plain_source, meta, status="unvalidated")
        verdicts = dict(validate_stored(registry, [suite.id, plain.id], budget="fast"))
        assert verdicts == {suite.id: "validated", plain.id: "rejected"}
        assert registry.get(plain.id).status == "rejected"
    finally:
        registry.close()
