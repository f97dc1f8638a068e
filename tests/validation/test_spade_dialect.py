"""SPADE-dialect sources through the whole gate, in the real sandbox: what SPADE's loader
accepts is accepted (validated, or unproven when no win can be shown), what it refuses is
rejected with its reason; played through the door, with rollouts' tool-call format."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_envs.validation import validate_many

FIXTURES = Path(__file__).parents[1] / "core" / "spade_fixtures"
ACCEPTED = {
    "multi_turn_no_imports.py": "unvalidated",  # no solution(): unproven
    "tool_use_prose.py": "validated",  # prose solution in SPADE's numbered-call form
    "two_env_classes.py": "validated",  # the first *Env class, with a notice
    "prose_not_numbered.py": "unvalidated",  # prose outside the form: unproven
    "single_turn_math_verify.py": "validated",  # SPADE's single-turn contract: math_verify
}
REFUSED = {
    "broken/no_env_class.py": ("env_class", "SPADE's dialect: a class named *Env"),
    "broken/first_env_missing_step.py": ("env_class", "missing required method: step"),
    "broken/reset_raises.py": ("check_env", "_board"),
    "broken/reward_out_of_range.py": ("check_env", "outside reward_range (-10.0, 10.0)"),
    "broken/uses_numpy.py": ("imports", "numpy is not among the modules"),
    # SPADE's win rule (a final reward above zero) makes wrong answers win here.
    "broken/wrong_answers_pay.py": ("fresh_play", "wrong answers"),
}


@pytest.fixture(scope="module")
def reports():
    names = [*ACCEPTED, *REFUSED]
    sources = [(FIXTURES / n).read_text(encoding="utf-8") for n in names]
    return dict(zip(names, validate_many(sources, budget="fast", progress=False, workers=1)))


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_what_spades_loader_accepts_is_accepted(name, reports):
    report = reports[name]
    assert report.dialect == "spade"
    assert report.verdict() == ACCEPTED[name], report.summary()
    assert not report.failures, report.summary()


def test_an_unproven_game_says_why_and_still_ran_every_check_that_needs_no_solution(reports):
    report = reports["multi_turn_no_imports.py"]
    assert "defines no solution()" in report.unproven and not report.passed
    ran = {c.name for c in report.checks if c.passed}
    assert {"load", "check_env", "fuzz", "determinism", "solved_at_reset", "info"} <= ran
    assert "trivial" in ran  # the empty action and random text need no solution
    skipped = {c.name for c in report.checks if c.skipped}
    assert {"solution", "fresh_play", "hint_leak"} <= skipped
    assert "UNPROVEN" in report.summary().splitlines()[0]
    prose = reports["prose_not_numbered.py"]
    assert "numbered-call form" in prose.unproven


def test_two_env_classes_give_a_notice_naming_the_other(reports):
    check = reports["two_env_classes.py"].check("env_class")
    assert "SumTargetEnv is the environment" in check.details["notice"]
    assert "HelperEnv" in check.details["notice"]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_spades_loader_refuses_is_rejected_with_its_reason(name, reports):
    check, words = REFUSED[name]
    report = reports[name]
    assert report.verdict() == "rejected"
    failed = {c.name: c.reason for c in report.failures}
    assert check in failed, report.summary()
    assert words in failed[check]


def test_a_spade_tool_game_plays_through_the_door_with_spades_seeds():
    from spade_envs.core.loader import load_env_class
    from spade_envs.runtime import open_source

    source = (FIXTURES / "tool_use_prose.py").read_text(encoding="utf-8")
    env = open_source(source, env_id="ArchiveReportEnv")
    try:
        observation, info = env.reset(seed=11)
        assert env.win_rule == "final_reward" and "tools" in info
        local = load_env_class(source)()
        assert local.reset(seed=11)[0] == observation  # episode 11 is episode 11
        local_actions = local.solution()
        for action in ["look around", *local_actions]:
            _, reward, terminated, truncated, _ = env.step(action)
        assert (reward, terminated, truncated) == (1.0, True, False)
    finally:
        env.close()


def test_a_pool_of_spade_dialect_games_round_trips_with_verdicts_and_plays(tmp_path, monkeypatch):
    """SPADE's own shapes as a pool: imported with validation (validated, or unproven with
    the reason), exported back to SPADE's layout, imported again to the same sources; the
    tool game is a gym.make ID whose solution wins."""
    import warnings

    import gymnasium as gym

    from spade_envs.registry import Registry
    from spade_envs.registry.formats import export_corpus
    from spade_envs.runtime import import_corpus

    pool = tmp_path / "run" / "spade_games"
    pool.mkdir(parents=True)
    stems = {
        "multi_turn_no_imports.py": "game_00001_000_logical_deduction",
        "tool_use_prose.py": "game_00001_001_multi_step_workflows",
        "two_env_classes.py": "game_00001_002_mathematical_reasoning",
    }
    for name, stem in stems.items():
        (pool / f"{stem}.py").write_text((FIXTURES / name).read_text(encoding="utf-8"))
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)  # where gym.make looks
    registry = Registry(url)
    try:
        result = import_corpus(registry, pool.parent, budget="fast", workers=1)
        assert result.problems == [], result.problems
        records = {r.name: r for r in registry.iter_records()}
        assert {n: r.status for n, r in records.items()} == {
            "HiddenPathEnv": "unvalidated",
            "ArchiveReportEnv": "validated",
            "SumTargetEnv": "validated",
        }
        assert "defines no solution()" in records["HiddenPathEnv"].extra["unproven"]
        assert records["ArchiveReportEnv"].kind == "tool"
        assert records["ArchiveReportEnv"].skill == "planning"  # SPADE's tool-use category

        out = tmp_path / "exported"
        assert export_corpus(registry, out, "spade-pool") == 3
        again = Registry(f"sqlite:///{tmp_path / 'again.db'}")
        try:
            import_corpus(again, out, validate=False)
            assert {r.sha256 for r in again.iter_records()} == {r.sha256 for r in records.values()}
        finally:
            again.close()

        from spade_envs.core.loader import load_env_class

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a validated version opens without a warning
            env = gym.make(records["ArchiveReportEnv"].id)
        try:
            env.reset(seed=4)
            local = load_env_class(records["ArchiveReportEnv"].source)()
            local.reset(seed=4)
            for action in local.solution():
                _, reward, terminated, truncated, _ = env.step(action)
            assert (reward, terminated, truncated) == (1.0, True, False)
        finally:
            env.close()
    finally:
        registry.close()
