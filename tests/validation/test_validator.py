"""The validator end to end: seeds pass, reports round-trip, the CLI speaks exit codes."""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from click.testing import CliRunner

from spade_envs.cli import main
from spade_envs.seeds import seed_names, seed_source
from spade_envs.validation import (
    VALIDATOR_VERSION,
    CheckResult,
    ValidationReport,
    Validator,
    validate_many,
)


def test_every_seed_environment_passes():
    # Fixed check seeds: with fresh ones a rare SubtractionGame pile (seed 437233 was one)
    # lets repeating the first solution move win, and the trivial check rejects it.
    names = seed_names()
    reports = validate_many(
        [seed_source(n) for n in names], budget="default", progress=False, seed=0
    )
    failures = {n: r.feedback() for n, r in zip(names, reports) if not r.passed}
    assert failures == {}
    assert [r.env_name for r in reports] == names


def test_random_text_that_names_the_secret_by_luck_does_not_reject_a_sound_task(monkeypatch):
    """At seed 620038 NumberGuess's secret is 4 and the random-text stream's third action is
    "4": the trivial check rejected the seed (a CI failure). Four other random streams lose
    there, so it was luck; a task that any text wins still loses every stream (the corpus's
    trivial cases)."""
    from spade_envs.validation import checks, validator

    real = checks.check_seeds
    monkeypatch.setattr(
        validator, "check_seeds", lambda count, seed=None: [620038, *real(count - 1, seed)]
    )
    with Validator("fast", pool_size=1, seed=0) as v:
        report = v.validate(seed_source("NumberGuess"))
    assert report.passed, report.feedback()
    assert report.check("solution").details["check_seeds"][0] == 620038


def test_report_round_trips_through_json(validator):
    report = validator.validate(seed_source("Nim"))
    again = ValidationReport.from_json(report.to_json())
    assert again == report
    assert report.validator_version == VALIDATOR_VERSION and report.kind == "game"
    assert {"static", "sandbox_start", "checks", "total"} <= set(report.timings)
    assert [c.name for c in report.checks][:5] == [
        "syntax",
        "size",
        "env_class",
        "imports",
        "no_input",
    ]
    with pytest.raises(Exception, match="no check 'fuzzz'"):
        report.check("fuzzz")


def test_failures_become_feedback_lines_for_the_designer(validator):
    source = seed_source("NumberGuess") + '\nNumberGuess.solution = lambda self: ["\\\\boxed{0}"]\n'
    report = validator.validate(source)
    assert not report.passed
    assert re.match(r"seed \d+: playing solution\(\)", report.check("solution").reason)
    assert re.match(r"seed \d+: solution\(\) .* fresh sandbox", report.check("fresh_play").reason)
    assert re.match(r"- fresh_play: seed \d+", report.feedback())


def test_the_summary_headlines_a_syntax_error_rather_than_a_missing_class(validator):
    headline = validator.validate("def f(:\n").summary().splitlines()[0]
    assert headline.startswith("REJECTED: (syntax error: line 1: ") and "class" not in headline
    assert "(no environment class)" in validator.validate("x = 1\n").summary()


HANGS_ON_BLANK = textwrap.dedent("""
    from spade_envs import TextEnv, boxed

    class Hangs(TextEnv):
        skill = "math"
        description = "Hangs on a blank answer, otherwise a fine guessing game."
        max_turns = 4
        def _reset(self):
            self.n = self.rng.randint(1, 9)
            return "Guess 1..9 as \\\\boxed{n}."
        def _step(self, action):
            while not action.strip():
                pass
            return ("yes", 1.0, True) if action == boxed(self.n) else ("no", 0.0, False)
        def hint(self):
            return "odd" if self.n % 2 else "even"
        def solution(self):
            return [boxed(self.n)]
""")


def test_a_call_that_never_returns_rejects_at_once():
    """A hang is fatal: the first check that meets it fails, every later one is skipped
    with the same reason, so rejecting it costs one call's wall-clock limit, not one per
    check (it once cost 134 s at --budget fast)."""
    from spade_envs.validation import Validator

    with Validator("fast", pool_size=2) as fast:
        report = fast.validate(HANGS_ON_BLANK)
    assert not report.passed and len(report.checks) == 16
    (failed,) = report.failures
    # The call's own limit, or (on a loaded machine) the check's, whichever came first.
    assert re.search(r"did not (return|finish) within \d+ s of wall-clock time", failed.reason)
    later = report.checks[report.checks.index(failed) + 1 :]
    assert later and all(c.skipped and c.reason == f"skipped: {failed.reason}" for c in later)


def test_validate_many_reports_progress_in_input_order():
    seen = []
    sources = [seed_source("NumberGuess"), "x = 1\n", seed_source("Kayles")]
    reports = validate_many(sources, budget="fast", progress=lambda d, t, r: seen.append((d, t)))
    assert [r.passed for r in reports] == [True, False, True], [r.feedback() for r in reports]
    assert sorted(seen) == [(1, 3), (2, 3), (3, 3)]


def test_cli_exit_codes_and_json(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(seed_source("CodeTrace"))
    bad = tmp_path / "bad.py"
    bad.write_text("import socket\n" + seed_source("CodeTrace"))
    runner = CliRunner()
    result = runner.invoke(main, ["validate", str(good), "--budget", "fast"])
    assert result.exit_code == 0 and "VALID: CodeTrace" in result.output
    result = runner.invoke(main, ["validate", str(bad), "--json", "--budget", "fast"])
    assert result.exit_code == 1
    report = ValidationReport.from_json(result.output.strip())
    assert not report.passed and "socket" in report.check("imports").reason
    assert report.check("fuzz").skipped
    result = runner.invoke(main, ["validate", str(tmp_path / "missing.py")])
    assert result.exit_code == 2
    result = runner.invoke(main, ["validate", str(good), "--budget", "huge"])
    assert result.exit_code == 2


def test_check_result_defaults():
    assert CheckResult("x", True).details == {}
    assert json.loads(ValidationReport(True, [CheckResult("x", True)]).to_json())["passed"]


def test_validation_workers_hold_no_validator_code(validator):
    """The checks run in this process: a worker imports neither the validator nor
    Hypothesis, so environment code has nothing there to patch."""
    source = textwrap.dedent("""
        import sys
        from spade_envs import TextEnv

        class Modules(TextEnv):
            max_turns = 1
            def _reset(self):
                found = sorted(m for m in sys.modules
                               if m.startswith(("spade_envs.validation", "hypothesis")))
                return "modules: " + ",".join(found)
            def _step(self, action):
                return "done", float(action == "win"), True
            def hint(self):
                return "say the magic word"
            def solution(self):
                return ["win"]
    """)
    from spade_envs.sandbox import open_env

    env = open_env(source, pool=validator.pool)
    try:
        assert env.reset(seed=0)[0] == "modules: "
    finally:
        env.close()


def test_pool_size_is_honoured():
    from spade_envs.validation import Validator

    with Validator("fast", pool_size=0) as v:
        assert v.pool.size == 0
    with Validator("fast", pool_size=3) as v:
        assert v.pool.size == 3


def test_an_env_that_gets_easier_once_its_hint_was_asked_is_rejected(validator):
    """A hinted rollout asks hint() between reset and the first step; an environment that
    then lets anything win would fake regret, so trivial policies are also played so."""
    source = textwrap.dedent("""
        from spade_envs import TextEnv, boxed

        class EasyWithHint(TextEnv):
            max_turns = 3
            def _reset(self):
                self.n, self.asked = self.rng.randint(10, 99), False
                return "Guess 10..99 as \\\\boxed{n}."
            def _step(self, action):
                won = self.asked or action == boxed(self.n)
                return ("yes", 1.0, True) if won else ("no", 0.0, False)
            def hint(self):
                self.asked = True
                return "it has two digits"
            def solution(self):
                return [boxed(self.n)]
    """)
    report = validator.validate(source)
    assert not report.passed
    assert "after hint() was asked" in report.check("trivial").reason


def test_a_machine_whose_workers_cannot_start_gets_no_verdict():
    """No worker starting is the machine's fault: an error, never 'invalid' (that would
    hide a broken sandbox as a zero yield)."""
    from spade_envs.error import SandboxStartFailed
    from spade_envs.sandbox import SandboxConfig
    from spade_envs.validation import Validator

    broken = SandboxConfig(preload=("no_such_module_anywhere",))
    with Validator("fast", config=broken, pool_size=0) as validator:
        with pytest.raises(SandboxStartFailed, match="No module named 'no_such_module_any"):
            validator.validate(seed_source("NumberGuess"))
