"""``list-seeds``, ``info``, ``validate`` and ``sandbox-info`` through Click's runner."""

from __future__ import annotations

import json

from click.testing import CliRunner

from spade_envs.cli import main

from .conftest import orbit_file


def run(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input)


def test_list_seeds_table_and_filters():
    result = run("list-seeds")
    assert (
        result.exit_code == 0
        and "NumberGuess" in result.output
        and "environment(s)" in result.output
    )
    result = run("list-seeds", "--kind", "game", "--json")
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert rows and all(r["kind"] == "game" for r in rows)


def test_list_seeds_rejects_unknown_skill():
    result = run("list-seeds", "--skill", "cooking")
    assert result.exit_code == 2 and "Invalid value for '--skill'" in result.output


def test_info_shows_metadata_and_source():
    result = run("info", "SupplierLookup", "--source")
    assert (
        result.exit_code == 0
        and "tools:" in result.output
        and "class SupplierLookup" in result.output
    )


def test_sandbox_info_reports_layers_and_starts_a_worker():
    result = run("sandbox-info")
    assert result.exit_code == 0, result.output
    assert "bubblewrap:" in result.output and "worker:     started in" in result.output


def test_info_on_a_file_reads_it_without_running_it(tmp_path):
    tripwire = tmp_path / "EXECUTED"
    path = tmp_path / "wire.py"
    path.write_text(
        f"import pathlib\npathlib.Path({str(tripwire)!r}).write_text('ran')\n"
        + orbit_file(tmp_path).read_text()
    )
    result = run("info", str(path))
    assert result.exit_code == 0, result.output
    assert "OrbitGuess" in result.output and "read without running it" in result.output
    assert not tripwire.exists()


def test_info_on_a_registry_id_points_to_show():
    result = CliRunner().invoke(main, ["info", "spade/NumberGuess-v1"])
    assert result.exit_code == 2 and result.output.startswith("Usage: main info [OPTIONS] NAME")
    assert "`spade-envs show spade/NumberGuess-v1` shows a registered version" in result.output


def test_list_seeds_suggests_a_close_skill():
    result = CliRunner().invoke(main, ["list-seeds", "--skill", "logik"])
    assert result.exit_code == 2 and result.output.endswith(
        "Error: Invalid value for '--skill': Unknown skill 'logik'. Did you mean 'logic'? "
        "Use one of math, logic, code, planning, science, pattern.\n"
    )


def test_validate_headlines_a_syntax_error_with_its_line_and_message(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("from spade_envs import TextEnv\n\nclass Broken(TextEnv:\n    pass\n")
    result = CliRunner().invoke(main, ["validate", str(path), "--budget", "fast"])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[:3] == [
        f"{path}: REJECTED: syntax error at line 3, column 21: invalid syntax",
        "    class Broken(TextEnv:",
        "                        ^",
    ]
    assert "(no environment class)" not in result.output
    assert lines[3].split()[:2] == ["FAIL", "syntax"]  # the checks follow, as before
