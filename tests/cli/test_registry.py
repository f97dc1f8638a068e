"""The registry commands (list, show, search, register, retire, revalidate, stats)
through Click's runner, each on a fresh registry."""

from __future__ import annotations

import dataclasses
import json

from spade_envs.cli import main
from spade_envs.seeds import seed_source


def test_register_list_show_retire_stats(runner, tmp_path):
    path = tmp_path / "guess.py"
    path.write_text(seed_source("NumberGuess"))
    result = runner.invoke(main, ["register", str(path), "--budget", "fast"])
    assert result.exit_code == 0, result.output
    assert "registered spade/NumberGuess-v1" in result.output
    again = runner.invoke(main, ["register", str(path), "--budget", "fast"])
    assert again.exit_code == 0, again.output
    assert again.output == (
        "already registered as spade/NumberGuess-v1 (identical source, status validated)\n"
    )
    listed = runner.invoke(main, ["list", "--json"])
    rows = [json.loads(line) for line in listed.output.splitlines()]
    assert [r["id"] for r in rows] == ["spade/NumberGuess-v1"] and rows[0]["skill"] == "math"
    shown = runner.invoke(main, ["show", "spade/NumberGuess-v1", "--code"])
    assert (
        "gym.make('spade/NumberGuess-v1')" in shown.output and "class NumberGuess" in shown.output
    )
    assert "    dialect: native (spade_envs protocol" in shown.output
    assert (
        "retired spade/NumberGuess-v1"
        in runner.invoke(main, ["retire", "spade/NumberGuess-v1"]).output
    )
    stats = runner.invoke(main, ["stats"])
    assert "1 environment version(s) in the registry at sqlite:///" in stats.output
    assert "retired 1" in stats.output and "suite:" not in stats.output


def test_register_stores_an_unproven_spade_game_unvalidated_and_show_says_why(runner, tmp_path):
    from pathlib import Path

    fixture = Path(__file__).parents[1] / "core" / "spade_fixtures" / "multi_turn_no_imports.py"
    path = tmp_path / "hidden_path.py"
    path.write_text(fixture.read_text(encoding="utf-8"))
    result = runner.invoke(main, ["register", str(path), "--budget", "fast"])
    assert result.exit_code == 0, result.output
    assert "registered spade/HiddenPathEnv-v1 (unvalidated, budget fast)" in result.output
    assert "unproven: the game defines no solution()" in result.output
    shown = runner.invoke(main, ["show", "spade/HiddenPathEnv-v1"]).output
    assert "    dialect: spade (SPADE's" in shown and "   unproven: the game defines no" in shown
    assert "     status: unvalidated" in shown


def test_register_refuses_invalid_code(runner, tmp_path):
    path = tmp_path / "bad.py"
    renamed = seed_source("NumberGuess").replace("class NumberGuess(", "class OrbitGuess(")
    path.write_text("import socket\n" + renamed)
    result = runner.invoke(main, ["register", str(path), "--budget", "fast"])
    assert result.exit_code == 1 and "Not registered" in result.output
    assert "is empty" in runner.invoke(main, ["list"]).output


def test_show_unknown_id_is_a_runtime_error_and_a_malformed_one_a_usage_error(runner):
    result = runner.invoke(main, ["show", "spade/Nothing-v1"])
    assert result.exit_code == 1 and "No version of 'Nothing' is registered" in result.stderr
    result = runner.invoke(main, ["show", "not-an-id"])
    assert result.exit_code == 2 and "is not an environment ID" in result.output
    assert result.output.startswith("Usage: main show [OPTIONS] ENV_ID\n")


def test_search_embeds_new_versions_then_ranks_them(runner):
    from spade_envs import describe, seed_class
    from spade_envs.registry import Registry

    registry = Registry()
    for name in ("NumberGuess", "FlightBooking", "Nim"):
        registry.register(seed_source(name), describe(seed_class(name)), status="validated")
    result = runner.invoke(
        main, ["search", "book the cheapest flight", "-k", "2", "--json", "--embedder", "hashing"]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert rows[0]["id"] == "spade/FlightBooking-v1" and len(rows) == 2
    assert rows[0]["score"] >= rows[1]["score"]
    assert registry.embedding_count("hashing-384-v1") == 3


ORBIT = seed_source("NumberGuess").replace("class NumberGuess(", "class OrbitGuess(")


def test_register_refuses_a_seed_name_on_other_code(runner, tmp_path):
    path = tmp_path / "squat.py"
    path.write_text(seed_source("Nim").replace("class Nim(", "class NumberGuess("))
    result = runner.invoke(main, ["register", str(path), "--budget", "fast"])
    assert result.exit_code == 1 and "Rename the environment class" in result.stderr
    assert "is empty" in runner.invoke(main, ["list"]).output


def test_list_sorts_by_hint_gain_and_the_old_sort_name_still_works(runner, tmp_path):
    from spade_envs import describe, seed_class
    from spade_envs.registry import Registry

    registry = Registry()
    for name, with_hint, without in (("Nim", 0.25, 0.75), ("NumberGuess", 0.75, 0.25)):
        record = registry.register(seed_source(name), describe(seed_class(name)))
        registry.record_play_stats(
            record.id,
            "ckpt",
            plays_with_hint=4,
            plays_without_hint=4,
            mean_return_with_hint=with_hint,
            mean_return_without_hint=without,
            win_rate=without,
        )
    registry.register(seed_source("Mastermind"), describe(seed_class("Mastermind")))
    registry.close()
    ranked = ["spade/NumberGuess-v1", "spade/Nim-v1", "spade/Mastermind-v1"]  # unplayed last

    result = runner.invoke(main, ["list", "--sort", "hint_gain", "--json"])
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == ranked
    assert result.stderr == ""

    old = runner.invoke(main, ["list", "--sort", "regret", "--json"])
    assert old.exit_code == 0, old.output
    assert [json.loads(line)["id"] for line in old.stdout.splitlines()] == ranked
    assert "--sort regret is deprecated" in old.stderr and "use --sort hint_gain" in old.stderr

    wrong = runner.invoke(main, ["list", "--sort", "gain"])
    assert wrong.exit_code == 2 and wrong.output.endswith(
        "Error: Invalid value for '--sort': Unknown sort order 'gain'. Did you mean "
        "'hint_gain'? Use one of created, hint_gain, name.\n"
    )
    # The floored regret is the designer's reward; the registry shows the signed gain.
    shown = runner.invoke(main, ["show", "spade/Nim-v1"])
    assert "ckpt: hint gain -0.50, win rate 0.75" in shown.output


def _fill(*names):
    from spade_envs import describe, seed_class
    from spade_envs.registry import Registry

    registry = Registry()
    for name in names:
        registry.register(seed_source(name), describe(seed_class(name)), status="validated")
    return registry


def test_list_checks_the_skill_against_the_registry(runner):
    registry = _fill("NumberGuess", "Nim", "Mastermind")
    skills = sorted(registry.counts()["skill"])
    registry.close()
    result = runner.invoke(main, ["list", "--skill", "logik"])
    assert result.exit_code == 2
    assert result.output.startswith("Usage: main list [OPTIONS]\n")
    assert result.output.endswith(
        "Error: Invalid value for '--skill': Unknown skill 'logik'. Did you mean 'logic'? "
        f"Skills in this registry: {', '.join(skills)}.\n"
    )
    absent = next(s for s in ("code", "science", "planning", "pattern") if s not in skills)
    none = runner.invoke(main, ["list", "--skill", absent])  # a known skill, just no version
    assert none.exit_code == 0 and none.output == "0 environment version(s)\n"


def test_list_hides_retired_versions_and_says_how_many(runner):
    _fill("NumberGuess", "Nim").retire("spade/Nim-v1")
    result = runner.invoke(main, ["list"])
    assert result.exit_code == 0, result.output
    assert "spade/NumberGuess-v1" in result.output and "spade/Nim-v1" not in result.output
    assert result.output.endswith(
        "1 environment version(s) (1 retired version(s) hidden: --all lists them)\n"
    )
    every = runner.invoke(main, ["list", "--all"])
    assert "spade/Nim-v1" in every.output and every.output.endswith("2 environment version(s)\n")
    retired = runner.invoke(main, ["list", "--status", "retired", "--json"])
    assert [json.loads(line)["id"] for line in retired.stdout.splitlines()] == ["spade/Nim-v1"]
    as_json = runner.invoke(main, ["list", "--json"])
    assert [json.loads(line)["id"] for line in as_json.stdout.splitlines()] == [
        "spade/NumberGuess-v1"
    ]
    assert as_json.stderr == "1 retired version(s) not listed (--all lists them)\n"
    typo = runner.invoke(main, ["list", "--status", "retierd"])
    assert typo.exit_code == 2 and "Did you mean 'retired'?" in typo.output


def test_stats_and_list_on_an_empty_registry_say_how_to_fill_it(runner, tmp_path):
    for command in ("stats", "list"):
        result = runner.invoke(main, [command])
        assert result.exit_code == 0, result.output
        assert result.output == (
            f"The registry at sqlite:///{tmp_path / 'cli.db'} is empty: register a file with "
            "`spade-envs register FILE`, import a corpus with `spade-envs import PATH` or a "
            "suite with `spade-envs import --suite rlve`; `spade-envs rollout NumberGuess` "
            "registers a seed on first use.\n"
        )


def test_register_of_code_someone_registered_meanwhile_says_so(runner, tmp_path, monkeypatch):
    """The pre-check misses a version registered while the file was validated: the
    registry's outcome still says it was not new."""
    from spade_envs.cli import registry as cli_registry

    path = tmp_path / "guess.py"
    path.write_text(seed_source("NumberGuess"))
    _fill("NumberGuess").close()
    monkeypatch.setattr(cli_registry, "_identical", lambda registry, source: None)
    result = runner.invoke(main, ["register", str(path), "--budget", "fast"])
    assert result.exit_code == 0, result.output
    assert result.output.endswith("already registered as spade/NumberGuess-v1 (identical source)\n")


def test_a_fresh_registry_lists_the_packaged_seeds_once(seeded_runner):
    from spade_envs.seeds import seed_classes

    seeds = len(seed_classes())
    listed = seeded_runner.invoke(main, ["list", "--limit", "1000", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert len(rows) == seeds and {r["origin"] for r in rows} == {"seed"}
    assert seeded_runner.invoke(main, ["retire", "spade/Nim-v1"]).exit_code == 0
    stats = seeded_runner.invoke(main, ["stats"])  # retired, and not given again
    assert f"{seeds} environment version(s)" in stats.output and "retired 1" in stats.output
    shown = seeded_runner.invoke(main, ["list", "--limit", "1000"])
    assert shown.output.endswith(
        f"{seeds - 1} environment version(s) (1 retired version(s) hidden: --all lists them)\n"
    )


def _quarantined(name="NumberGuess", **changes):
    """A registry with ``name`` registered validated, then quarantined; returns the evidence."""
    from spade_envs import describe, seed_class
    from spade_envs.registry import QuarantineEvidence, Registry

    registry = Registry()
    env = registry.register(seed_source(name), describe(seed_class(name)), status="validated").id
    values = dict(seed=11, step=3, field="observation", played="Too low.", replayed="Too high.")
    evidence = QuarantineEvidence(env, **{**values, **changes}, at="2026-03-01T12:00:00+00:00")
    registry.quarantine(env, evidence)
    registry.close()
    return evidence


def test_show_gives_the_quarantine_evidence_on_safe_lines(runner):
    _quarantined(detail="\x1b[2Jcleared your screen\nfake: line", played="x" * 5000)
    shown = runner.invoke(main, ["show", "spade/NumberGuess-v1"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert "     status: quarantined" in lines
    assert "   evidence: seed 11, step 3, observation differs" in lines
    assert " replay saw: Too high." in lines
    assert "     detail: [2Jcleared your screen fake: line" in lines  # no escape, one line
    assert "   recorded: 2026-03-01T12:00:00+00:00" in lines
    assert "   clear it: spade-envs revalidate spade/NumberGuess-v1" in lines
    [played] = [line for line in lines if line.startswith("   play saw: ")]
    assert played.endswith("…") and len(played) == len("   play saw: ") + 200
    assert "\x1b" not in shown.output
    other = runner.invoke(main, ["show", "spade/NumberGuess-v1"]).output
    assert other == shown.output  # reading does not change it


def test_list_marks_quarantined_versions_and_filters_them(runner):
    _quarantined()
    listed = runner.invoke(main, ["list"])
    assert listed.exit_code == 0, listed.output
    assert "!quarantined" in listed.output.splitlines()[0]
    assert "! 1 quarantined: a replay audit diverged" in listed.output
    only = runner.invoke(main, ["list", "--status", "quarantined", "--json"])
    assert [json.loads(line)["status"] for line in only.output.splitlines()] == ["quarantined"]
    validated = runner.invoke(main, ["list", "--status", "validated"])
    assert "NumberGuess" not in validated.output and "quarantined" not in validated.output
    assert "quarantined 1" in runner.invoke(main, ["stats"]).output


def test_revalidate_clears_a_quarantine_that_passes(runner):
    from spade_envs.registry import Registry

    _quarantined()
    result = runner.invoke(main, ["revalidate", "--status", "quarantined", "--budget", "fast"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "spade/NumberGuess-v1: validated"
    shown = runner.invoke(main, ["show", "spade/NumberGuess-v1"]).output
    assert "     status: validated" in shown and "evidence" not in shown
    registry = Registry()
    assert registry.quarantine_evidence("spade/NumberGuess-v1") is None
    [(kept, cleared)] = registry.quarantine_history("spade/NumberGuess-v1")
    assert kept.seed == 11 and cleared is not None
    registry.close()
    nothing = runner.invoke(main, ["revalidate", "--status", "quarantined"])
    assert nothing.exit_code == 2 and "Name versions to validate" in nothing.output


def test_list_limit_says_how_many_matched_in_all(runner):
    _fill("NumberGuess", "Nim", "Mastermind", "CodeTrace").retire("spade/CodeTrace-v1")
    cut = runner.invoke(main, ["list", "--limit", "2"])
    assert cut.exit_code == 0, cut.output
    assert len(cut.output.splitlines()) == 3  # two versions and the count
    assert cut.output.endswith(
        "2 of 3 environment version(s) (--limit 3 lists them all) "
        "(1 retired version(s) hidden: --all lists them)\n"
    )
    assert runner.invoke(main, ["list", "--limit", "3"]).output.endswith(
        "3 environment version(s) (1 retired version(s) hidden: --all lists them)\n"
    )
    every = runner.invoke(main, ["list", "--limit", "1", "--all"])
    assert every.output.endswith("1 of 4 environment version(s) (--limit 4 lists them all)\n")
    math = runner.invoke(main, ["list", "--limit", "1", "--skill", "math"])
    assert math.output.endswith("1 of 2 environment version(s) (--limit 2 lists them all)\n")
    as_json = runner.invoke(main, ["list", "--limit", "2", "--json"])
    assert len(as_json.stdout.splitlines()) == 2
    assert as_json.stderr == (
        "2 of 3 matching version(s) listed (--limit 3 lists them all)\n"
        "1 retired version(s) not listed (--all lists them)\n"
    )


def test_show_prints_the_latest_validation_report_and_play_statistics(runner):
    import datetime as dt

    from spade_envs import describe, seed_class
    from spade_envs.registry import Registry
    from spade_envs.validation.report import CheckResult, ValidationReport

    def report(passed):
        checks = [
            CheckResult("syntax", True),
            CheckResult("solution", passed, "" if passed else "the solution lost on seed 3"),
            CheckResult("hint_effect", False, "needs a model to measure", skipped=True),
        ]
        return ValidationReport(passed, checks, env_name="OrbitGuess", budget="fast")

    registry = Registry()
    meta = dataclasses.replace(describe(seed_class("NumberGuess")), name="OrbitGuess")
    env = registry.register(ORBIT, meta, status="validated", report=report(False)).id
    registry.add_validation(env, report(True))
    registry.record_play_stats(
        env,
        "ckpt-7",
        plays_with_hint=8,
        plays_without_hint=8,
        mean_return_with_hint=0.75,
        mean_return_without_hint=0.25,
        win_rate=0.25,
    )
    registry.register(seed_source("Nim"), describe(seed_class("Nim")), status="validated")
    rejected = ORBIT.replace("Each turn", "Every turn")
    bad = registry.register(rejected, meta, status="rejected", report=report(False)).id
    registry.close()

    shown = runner.invoke(main, ["show", env])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    today = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    [latest] = [line for line in lines if line.startswith(" validation: ")]
    assert latest.startswith(
        " validation: latest report passed (budget fast, validator 1.0, 0.0 s, " + today
    )
    assert "     checks: 2 passed, 0 failed, 1 skipped" in lines
    assert "             skip hint_effect: needs a model to measure" in lines
    [earlier] = [line for line in lines if line.startswith("    earlier: ")]
    assert earlier.startswith("    earlier: FAILED (budget fast")
    assert (
        "     played: ckpt-7: hint gain +0.50, win rate 0.25, mean return 0.75 with the hint, "
        "0.25 without (8 plays without hint, 8 with)"
    ) in lines

    seed = runner.invoke(main, ["show", "spade/Nim-v1"]).output.splitlines()
    assert (
        " validation: no report stored (a packaged seed: spade-envs' own test suite validates "
        "every seed); "
        "`spade-envs revalidate spade/Nim-v1` validates it and stores the report"
    ) in seed
    assert (
        "     played: no play statistics stored (`spade-envs regret spade/Nim-v1` plays it "
        "with and without the hint and stores them)"
    ) in seed

    why = runner.invoke(main, ["show", bad]).output.splitlines()
    assert "   rejected: solution: the solution lost on seed 3" in why
    assert "     checks: 1 passed, 1 failed, 1 skipped" in why
    assert not [line for line in why if "FAIL solution" in line]  # said once, as the reason
