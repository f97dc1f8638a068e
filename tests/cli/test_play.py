"""``spade-envs play``: seeds, files and registered versions (sandboxed), through Click's
runner."""

from __future__ import annotations

from click.testing import CliRunner

from spade_envs.cli import main

from .conftest import orbit_file


def run(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input)


def test_play_solution_wins():
    result = run("play", "NumberGuess", "--seed", "3", "--auto", "solution", "--hint")
    assert result.exit_code == 0, result.output
    assert "[hint]" in result.output and "WON" in result.output


def test_play_game_seat_against_random_opponent():
    result = run("play", "Nim", "--seed", "1", "--auto", "solution", "--opponent", "random")
    assert result.exit_code == 0 and "WON" in result.output and "player_1 played:" in result.output


def test_play_from_piped_actions_with_commands():
    result = run("play", "NumberGuess", "--seed", "3", input="50\n:hint\n:solution\n:quit\n")
    assert result.exit_code == 0
    assert "Higher than 50" in result.output and "[hint]" in result.output
    assert "[solution]" in result.output and "Stopped." in result.output


def test_play_empty_loses():
    result = run("play", "NumberGuess", "--seed", "3", "--auto", "empty")
    assert result.exit_code == 0 and "not won" in result.output and "out of turns" in result.output


def test_unknown_environment_is_a_runtime_error_with_suggestion(runner):
    result = runner.invoke(main, ["play", "NumbrGuess"])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == (
        "Error: No environment named 'NumbrGuess'. Did you mean 'NumberGuess'? "
        "`spade-envs list-seeds` lists the seeds, `spade-envs list` the registered versions; "
        "the path of a .py file works too.\n"
    )


def test_bad_knob_is_a_usage_error_of_play():
    result = run("play", "NumberGuess", "--knob", "uppr=5")
    assert result.exit_code == 2 and "Did you mean 'upper'?" in result.output
    assert result.output.startswith("Usage: main play [OPTIONS] NAME\n")
    result = run("play", "NumberGuess", "--knob", "nonsense")
    assert result.exit_code == 2 and "KEY=VALUE" in result.output


def test_knob_values_are_parsed_as_json():
    result = run("play", "NumberGuess", "--knob", "upper=4", "--seed", "0", "--auto", "solution")
    assert result.exit_code == 0 and "from 1 to 4" in result.output


def test_play_a_file_runs_it_in_the_sandbox(tmp_path):
    from spade_envs.seeds import seed_source

    path = tmp_path / "guess.py"
    path.write_text(seed_source("NumberGuess"))
    result = run("play", str(path), "--seed", "2", "--auto", "solution")
    assert result.exit_code == 0, result.output
    assert "[sandboxed:" in result.output
    assert "WON" in result.output


def test_play_shows_escape_sequences_escaped(tmp_path):
    """An observation that would clear the screen, set the title and reverse the text
    prints as visible escapes."""
    path = tmp_path / "escapes.py"
    path.write_text(
        "from spade_envs import TextEnv\n\n"
        "class Escapes(TextEnv):\n"
        "    max_turns = 1\n"
        "    def _reset(self):\n"
        "        return 'hi\\x1b[2J\\x1b]0;pwned\\x07\\u202eevil\\nnext line'\n"
        "    def _step(self, action):\n"
        "        return '\\x1b[31mred', float(action == 'x'), True\n"
        "    def hint(self):\n"
        "        return 'say x'\n"
        "    def solution(self):\n"
        "        return ['x']\n"
    )
    result = run("play", str(path), "--seed", "0", "--auto", "solution")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\u202e" not in result.output
    assert "hi\\x1b[2J\\x1b]0;pwned\\x07\\u202eevil\nnext line" in result.output
    assert "\\x1b[31mred" in result.output


def test_play_a_seed_game_sandboxed():
    result = run("play", "Kayles", "--seed", "4", "--auto", "solution", "--isolation", "sandbox")
    assert result.exit_code == 0 and "[sandboxed:" in result.output and "WON" in result.output


def test_play_isolation_none_refuses_non_seed_code_without_trust_code(tmp_path):
    path = orbit_file(tmp_path)
    refused = run("play", str(path), "--seed", "2", "--auto", "solution", "--isolation", "none")
    assert refused.exit_code == 2 and "is not a packaged seed" in refused.output
    assert "--trust-code" in refused.output and "WON" not in refused.output
    trusted = run(
        "play", str(path), "--seed", "2", "--auto", "solution", "--isolation", "none",
        "--trust-code",
    )  # fmt: skip
    assert trusted.exit_code == 0, trusted.output
    assert "OrbitGuess" in trusted.output and "WON" in trusted.output
    assert "[sandboxed:" not in trusted.output


def test_play_isolation_none_runs_a_copy_of_a_seed_without_trust_code(tmp_path):
    from spade_envs.seeds import seed_source

    path = tmp_path / "nim.py"
    path.write_text(seed_source("Nim"))
    result = run("play", str(path), "--seed", "1", "--auto", "solution", "--isolation", "none")
    assert result.exit_code == 0, result.output
    assert "== Nim" in result.output and "[sandboxed:" not in result.output


def test_play_a_registry_id_sandboxed_and_refused_in_process(tmp_path, monkeypatch):
    import dataclasses

    from spade_envs import describe, seed_class
    from spade_envs.registry import Registry

    url = f"sqlite:///{tmp_path / 'r.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    meta = dataclasses.replace(describe(seed_class("NumberGuess")), name="OrbitGuess")
    Registry(url).register(orbit_file(tmp_path).read_text(), meta, status="validated")
    result = run("play", "spade/OrbitGuess-v1", "--seed", "2", "--auto", "solution")
    assert result.exit_code == 0, result.output
    assert "[sandboxed:" in result.output and "WON" in result.output
    refused = run("play", "spade/OrbitGuess-v1", "--auto", "solution", "--isolation", "none")
    assert refused.exit_code == 2 and "spade/OrbitGuess-v1 is not a packaged seed" in refused.output


def test_trust_code_help_is_loud():
    text = " ".join(run("play", "--help").output.split())
    assert "--trust-code" in text and "DANGER: run code that is not a packaged seed" in text


def test_play_a_registered_name_plays_its_newest_version_sandboxed(runner, tmp_path):
    from spade_envs.registry import Registry
    from spade_envs.validation.static import static_metadata

    from .conftest import ORBIT

    registry = Registry()
    registry.register(ORBIT, static_metadata(ORBIT, origin="imported"), status="validated")
    newer = ORBIT.replace("Each turn", "Every turn")
    assert newer != ORBIT
    registry.register(newer, static_metadata(newer, origin="imported"), status="validated")
    registry.close()
    result = runner.invoke(main, ["play", "OrbitGuess", "--seed", "2", "--auto", "solution"])
    assert result.exit_code == 0, result.output
    assert "[sandboxed:" in result.output and "== spade/OrbitGuess-v2 (seed 2)" in result.output
    assert "WON" in result.output
    explicit = runner.invoke(
        main, ["play", "spade/OrbitGuess-v1", "--isolation", "sandbox", "--auto", "solution"]
    )
    assert explicit.exit_code == 0 and "== spade/OrbitGuess-v1" in explicit.output


def test_play_a_registered_game_seat(runner):
    from spade_envs import describe, seed_class
    from spade_envs.registry import Registry
    from spade_envs.seeds import seed_source

    Registry().register(seed_source("Nim"), describe(seed_class("Nim")), status="validated")
    result = runner.invoke(
        main, ["play", "spade/Nim-v1", "--seed", "1", "--auto", "solution", "--opponent", "random"]
    )
    assert result.exit_code == 0, result.output
    assert "[sandboxed:" in result.output and "WON" in result.output


def test_play_without_a_seed_prints_the_seed_it_drew_and_that_seed_replays_it():
    import re

    first = run("play", "NumberGuess", "--auto", "random")
    assert first.exit_code == 0, first.output
    header, *episode = first.output.splitlines()
    found = re.fullmatch(
        r"== NumberGuess \(seed (\d+), drawn at random: --seed \1 replays it\), 8 turns at most",
        header,
    )
    assert found, header
    again = run("play", "NumberGuess", "--auto", "random", "--seed", found.group(1))
    assert again.output.splitlines() == [
        f"== NumberGuess (seed {found.group(1)}), 8 turns at most",
        *episode,
    ]
