from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from spade_envs.cli import main
from spade_envs.seeds import seed_source


@pytest.fixture
def runner(monkeypatch, tmp_path):
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    return CliRunner()


def test_register_list_show_retire_stats(runner, tmp_path):
    path = tmp_path / "guess.py"
    path.write_text(seed_source("NumberGuess"))
    result = runner.invoke(main, ["register", str(path), "--budget", "fast"])
    assert result.exit_code == 0, result.output
    assert "registered spade/NumberGuess-v1" in result.output
    again = runner.invoke(main, ["register", str(path), "--budget", "fast"])
    assert "registered spade/NumberGuess-v1" in again.output  # identical code: same ID
    listed = runner.invoke(main, ["list", "--json"])
    rows = [json.loads(line) for line in listed.output.splitlines()]
    assert [r["id"] for r in rows] == ["spade/NumberGuess-v1"] and rows[0]["skill"] == "math"
    shown = runner.invoke(main, ["show", "spade/NumberGuess-v1", "--code"])
    assert (
        "gym.make('spade/NumberGuess-v1')" in shown.output and "class NumberGuess" in shown.output
    )
    assert (
        "retired spade/NumberGuess-v1"
        in runner.invoke(main, ["retire", "spade/NumberGuess-v1"]).output
    )
    stats = runner.invoke(main, ["stats"])
    assert "1 environment version(s)" in stats.output and "retired 1" in stats.output


def test_register_refuses_invalid_code(runner, tmp_path):
    path = tmp_path / "bad.py"
    renamed = seed_source("NumberGuess").replace("class NumberGuess(", "class OrbitGuess(")
    path.write_text("import socket\n" + renamed)
    result = runner.invoke(main, ["register", str(path), "--budget", "fast"])
    assert result.exit_code == 1 and "Not registered" in result.output
    assert "0 environment version(s)" in runner.invoke(main, ["list"]).output


def test_show_unknown_id_is_a_usage_error(runner):
    result = runner.invoke(main, ["show", "spade/Nothing-v1"])
    assert result.exit_code == 2 and "No registered environment named 'Nothing'" in result.output
    result = runner.invoke(main, ["show", "not-an-id"])
    assert result.exit_code == 2 and "is not an environment ID" in result.output


def test_export_import_round_trip_and_malformed_files(runner, tmp_path, monkeypatch):
    from spade_envs import describe, seed_class
    from spade_envs.registry import Registry

    registry = Registry()
    for name in ("NumberGuess", "Nim"):
        registry.register(seed_source(name), describe(seed_class(name)), status="validated")
    out = tmp_path / "corpus.jsonl"
    assert "exported 2" in runner.invoke(main, ["export", str(out)]).output
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'other.db'}")
    imported = runner.invoke(main, ["import", str(out), "--budget", "fast"])
    assert imported.exit_code == 0 and "imported 2" in imported.output, imported.output
    assert "validated 2/2" in imported.output  # the progress line (stderr)
    copy = Registry()
    assert sorted(r.id for r in copy.list()) == ["spade/Nim-v1", "spade/NumberGuess-v1"]
    assert copy.get("spade/Nim-v1").source == seed_source("Nim")
    for record in copy.list():  # validated here: the status is the stored report's verdict
        (report,) = copy.validations(record.id)
        assert record.status == ("validated" if report.passed else "rejected")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(out.read_text().splitlines()[0] + "\n{not json}\n")
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'third.db'}")
    result = runner.invoke(main, ["import", str(bad)])
    assert result.exit_code == 2 and "line 2: not JSON" in result.output
    assert (
        "0 environment version(s)" in runner.invoke(main, ["list"]).output
    )  # nothing half-written


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


def test_import_no_validate_stores_unvalidated_then_gym_make_warns_and_revalidate(runner, tmp_path):
    import gymnasium as gym

    from spade_envs.registry import Registry, UnvalidatedEnvWarning

    path = tmp_path / "lies.jsonl"
    path.write_text(
        json.dumps({"name": "Orbit", "source": ORBIT, "status": "validated", "kind": "game"}) + "\n"
    )
    result = runner.invoke(main, ["import", str(path), "--no-validate"])
    assert result.exit_code == 0, result.output
    assert "imported 1 environment version(s) (1 unvalidated)" in result.output
    assert "spade-envs revalidate --status unvalidated" in result.output
    record = Registry().get("spade/OrbitGuess-v1")
    assert (record.status, record.kind) == ("unvalidated", "text")
    with pytest.warns(UnvalidatedEnvWarning, match="never|without validation"):
        gym.make("spade/OrbitGuess-v1").close()
    again = runner.invoke(main, ["revalidate", "--status", "unvalidated", "--budget", "fast"])
    status = Registry().get("spade/OrbitGuess-v1").status
    assert f"spade/OrbitGuess-v1: {status}" in again.output
    assert again.exit_code == (0 if status == "validated" else 1)
    assert len(Registry().validations("spade/OrbitGuess-v1")) == 1


def test_import_reports_rows_it_refuses(runner, tmp_path):
    path = tmp_path / "mixed.jsonl"
    squat = seed_source("Nim").replace("class Nim(", "class NumberGuess(")
    path.write_text(
        json.dumps({"source": "def broken(:", "status": "validated"})
        + "\n"
        + json.dumps({"source": squat, "status": "validated"})
        + "\n"
    )
    result = runner.invoke(main, ["import", str(path), "--no-validate"])
    assert result.exit_code == 0, result.output
    assert "line 1: not imported: no environment class could be read" in result.output
    assert "line 2: not imported: 'NumberGuess' is the name of the packaged seed" in result.output
    assert "imported 0 environment version(s), 2 skipped with problems" in result.output


def test_register_refuses_a_seed_name_on_other_code(runner, tmp_path):
    path = tmp_path / "squat.py"
    path.write_text(seed_source("Nim").replace("class Nim(", "class NumberGuess("))
    result = runner.invoke(main, ["register", str(path), "--budget", "fast"])
    assert result.exit_code == 2 and "Rename the environment class" in result.output
    assert "0 environment version(s)" in runner.invoke(main, ["list"]).output


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
    assert wrong.exit_code == 2 and "not one of 'created', 'hint_gain', 'name'" in wrong.output
    # The floored regret is the designer's reward; the registry shows the signed gain.
    shown = runner.invoke(main, ["show", "spade/Nim-v1"])
    assert "ckpt: hint gain -0.50, win rate 0.75" in shown.output
