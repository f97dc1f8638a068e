"""``spade-envs import/export --format spade-pool``, ``show`` (why a version is rejected or
unproven, SPADE's statistics) and ``register`` agreeing with the import, through Click."""

from __future__ import annotations

import json

from spade_envs.cli import main
from spade_envs.registry import Registry
from spade_envs.seeds import seed_source

from ..registry.spade_pool_fixtures import BASE_GAMES, HEADER, build_run, number_guess


def test_import_show_export_and_import_again(runner, tmp_path, monkeypatch):
    run = build_run(tmp_path)
    wrong = number_guess("WrongAnswerEnv", 9, 3).replace(
        "return str(self.target)", "return str(self.target + 1)"
    )
    (run / "spade_games" / "game_00005_000_mathematical_reasoning.py").write_text(HEADER + wrong)
    done = runner.invoke(main, ["import", str(run), "--budget", "fast"])
    assert done.exit_code == 0, done.output
    assert "imported 5 environment version(s) (4 validated, 1 rejected)" in done.stdout
    assert "validated 5/5" in done.stderr  # the progress line
    assert "skipped: game_00003_000_logical_deduction.py: its env_memory.json record" in done.stderr

    shown = runner.invoke(main, ["show", "spade/WrongAnswerEnv-v1"])
    assert shown.exit_code == 0, shown.output
    assert "   rejected: solution: " in shown.output  # the stored report's failed check
    guess = runner.invoke(main, ["show", "spade/HighLowEnv-v1"]).output
    assert "spade skill: Mathematical Reasoning (game_00002_000_mathematical_reasoning.py)" in guess
    assert "spade stats: actor win rate 0.50, regret +0.25" in guess
    assert "rejected:" not in guess  # SPADE's statistics are not this registry's plays:
    assert "     played: no play statistics stored" in guess

    out = tmp_path / "exported"
    exported = runner.invoke(
        main,
        ["export", str(out), "--format", "spade-pool", "--skill", "math", "--status", "validated"],
    )
    assert exported.exit_code == 0, exported.output
    assert "exported 2 environment version(s)" in exported.stdout
    assert f"--spade-games-dir {out / 'spade_games'}" in exported.stdout
    one = tmp_path / "one"
    picked = runner.invoke(
        main, ["export", str(one), "--format", "spade-pool", "--id", "spade/OddOneEnv-v1"]
    )
    assert "exported 1 environment version(s)" in picked.stdout, picked.output
    stored = {r.sha256: r.skill for r in Registry().iter_records() if r.skill == "math"}
    stored = {k: v for k, v in stored.items() if Registry().by_sha256([k])[k].status == "validated"}

    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'again.db'}")
    again = runner.invoke(main, ["import", str(out), "--no-validate"])
    assert again.exit_code == 0 and "imported 2" in again.stdout, again.output
    assert {r.sha256: r.skill for r in Registry().iter_records()} == stored


def test_a_pool_without_memory_says_so_and_show_prints_unproven(runner, tmp_path):
    pool = tmp_path / "spade_games"
    pool.mkdir()
    stem, code = BASE_GAMES[0]
    (pool / f"{stem}.py").write_text(HEADER + code)
    done = runner.invoke(main, ["import", str(pool), "--no-validate"])
    assert done.exit_code == 0, done.output
    assert "note: no env_memory.json beside" in done.stderr
    fresh = runner.invoke(main, ["show", "spade/HighLowEnv-v1"]).output
    assert "unvalidated: never validated (`spade-envs revalidate spade/HighLowEnv-v1`)" in fresh

    from spade_envs.runtime.imports import source_metadata

    source = HEADER + number_guess("NoProofEnv", 5, 2)
    Registry().register(
        source, source_metadata(source), status="unvalidated", extra={"unproven": "no\nsolution()"}
    )
    shown = runner.invoke(main, ["show", "spade/NoProofEnv-v1"]).output
    assert "   unproven: no solution()" in shown  # on one line


def test_export_spade_pool_lists_what_spade_cannot_load(runner, tmp_path):
    from spade_envs import describe, seed_class

    Registry().register(seed_source("Nim"), describe(seed_class("Nim")), status="validated")
    out = tmp_path / "pool"
    done = runner.invoke(main, ["export", str(out), "--format", "spade-pool"])
    assert done.exit_code == 0, done.output
    assert "skipped: spade/Nim-v1: not written: a multi-agent game" in done.stderr
    assert "exported 0 environment version(s)" in done.stdout
    assert json.loads((out / "spade_games_cache" / "env_memory.json").read_text()) == []
    bad = runner.invoke(main, ["export", str(out), "--format", "spade-pool"])
    assert bad.exit_code == 1 and "not an empty directory" in bad.stderr
    typo = runner.invoke(main, ["export", str(tmp_path / "x"), "--format", "spade_pol"])
    assert typo.exit_code == 2 and "spade-pool" in typo.output


def test_register_and_pool_import_agree_on_max_turns(runner, tmp_path, monkeypatch):
    source = HEADER + number_guess("TurnsAgreeEnv", 12, 7)
    game = tmp_path / "game_00001_000_mathematical_reasoning.py"
    game.write_text(source)
    done = runner.invoke(main, ["register", str(game), "--budget", "fast"])
    assert done.exit_code == 0, done.output
    registered = Registry().get("spade/TurnsAgreeEnv-v1")
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'pool.db'}")
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / game.name).write_text(source)
    assert runner.invoke(main, ["import", str(pool), "--no-validate"]).exit_code == 0
    imported = Registry().get("spade/TurnsAgreeEnv-v1")
    assert registered.max_turns == imported.max_turns == 7
    assert (registered.name, registered.kind) == (imported.name, imported.kind)
