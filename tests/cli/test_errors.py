"""Exit codes and messages: 1 and ``Error: ...`` on stderr for runtime errors, 2 and the
subcommand's own usage line for usage errors, missing extras named with pinned lines."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from spade_envs.cli import main
from spade_envs.cli.errors import SpadeCommand, missing_module_error
from spade_envs.error import TORCH_CPU_INSTALL, TORCH_VERSION, MissingExtraError, install_advice

from .conftest import ORBIT

REPO = Path(__file__).resolve().parents[2]


def _no_torch(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``spade-envs ARGS`` in a fresh process where torch and transformers cannot import
    (what a core-only install sees)."""
    code = (
        "import sys\n"
        "for name in ('torch', 'transformers', 'gguf', 'accelerate', 'peft'):\n"
        "    sys.modules[name] = None\n"
        "from spade_envs.cli import main\n"
        f"main({args!r}, prog_name='spade-envs')\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SPADE_REGISTRY_URL": f"sqlite:///{tmp_path / 'r.db'}",
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )


def test_train_without_torch_names_the_extra_and_the_pinned_lines(tmp_path):
    done = _no_torch(
        ["train", "--preset", "cpu-tiny", "--run-dir", str(tmp_path / "run")], tmp_path
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "ModuleNotFoundError" not in done.stderr
    assert done.stderr == (
        "Error: spade-envs train needs torch (not installed), from the [train] extra. "
        "Install it with:\n"
        f"  {TORCH_CPU_INSTALL}   # CPU-only machines; skip with a GPU\n"
        "  pip install 'spade-envs[train]'\n"
    )


def test_rollout_with_a_local_model_without_torch_names_the_extra(tmp_path):
    done = _no_torch(["rollout", "NumberGuess", "--plays", "1"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "Error: The transformers backend needs torch, transformers (not installed), " in (
        done.stderr
    )
    assert TORCH_CPU_INSTALL in done.stderr and "pip install 'spade-envs[train]'" in done.stderr
    assert "pip install gguf accelerate" not in done.stderr


def test_the_torch_pin_of_the_advice_is_the_extras_pin():
    text = (REPO / "pyproject.toml").read_text()
    train = re.search(r"^train = \[(.*?)\]", text, re.S | re.M).group(1)
    assert f'"torch=={TORCH_VERSION}"' in train
    assert TORCH_CPU_INSTALL == (
        f"pip install torch=={TORCH_VERSION} --index-url https://download.pytorch.org/whl/cpu"
    )
    assert install_advice("parquet") == "pip install 'spade-envs[parquet]'"
    assert install_advice("memory").splitlines()[0].startswith(TORCH_CPU_INSTALL)


def test_no_advice_anywhere_installs_gguf_unpinned():
    offenders = [
        str(path.relative_to(REPO))
        for path in (REPO / "spade_envs").rglob("*.py")
        if "pip install gguf" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_missing_module_maps_optional_dependencies_only():
    found = missing_module_error(ModuleNotFoundError("x", name="pyarrow.parquet"), "spade-envs x")
    assert isinstance(found, MissingExtraError) and found.extra == "parquet"
    assert str(found) == (
        "spade-envs x needs pyarrow (not installed), from the [parquet] extra. Install it "
        "with:\n  pip install 'spade-envs[parquet]'"
    )
    assert missing_module_error(ModuleNotFoundError("x", name="no_such_module"), "c") is None


def test_a_missing_module_that_is_no_extra_stays_a_traceback():
    @click.command(cls=SpadeCommand)
    def broken() -> None:
        import no_such_module_anywhere  # noqa: F401

    result = CliRunner().invoke(broken, [])
    assert isinstance(result.exception, ModuleNotFoundError)


def test_a_usage_error_shows_the_subcommand_usage_not_the_group(runner):
    result = runner.invoke(main, ["list", "--kind", "txt"])
    assert result.exit_code == 2
    assert result.output == (
        "Usage: main list [OPTIONS]\n"
        "Try 'main list --help' for help.\n\n"
        "Error: Invalid value for '--kind': Unknown kind 'txt'. Did you mean 'text'? "
        "Use one of text, tool, game.\n"
    )


def test_an_unknown_id_is_a_runtime_error_with_registered_matches(runner, tmp_path):
    from spade_envs.registry import Registry
    from spade_envs.validation.static import static_metadata

    registry = Registry()
    registry.register(ORBIT, static_metadata(ORBIT, origin="imported"), status="validated")
    url = registry.url
    registry.close()
    for command in (["show"], ["retire"], ["play", "--auto", "solution"]):
        result = runner.invoke(main, [*command[:1], "spade/OrbitGues-v1", *command[1:]])
        assert result.exit_code == 1, (command, result.output)
        assert result.stdout == ""
        total = Registry(url).count()  # the seeds may be registered on first open
        assert result.stderr == (
            f"Error: No version of 'OrbitGues' is registered in the registry at {url}. "
            f"Did you mean 'spade/OrbitGuess-v1'? `spade-envs list` lists its {total} "
            "registered version(s).\n"
        )
    result = runner.invoke(main, ["show", "spade/OrbitGuess-v3"])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: spade/OrbitGuess-v3 is not registered: 'OrbitGuess' has only "
        f"spade/OrbitGuess-v1 in the registry at {url}. `spade-envs list` lists its {total} "
        "registered version(s).\n"
    )


def test_a_registry_url_from_the_environment_may_be_a_plain_path(tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_REGISTRY_URL", str(tmp_path / "plain.db"))
    made = CliRunner().invoke(main, ["init"])
    assert made.exit_code == 0, made.output
    assert made.output.startswith(f"Created the registry at sqlite:///{tmp_path / 'plain.db'}")
    result = CliRunner().invoke(main, ["stats"])
    assert result.exit_code == 0, result.output
    assert f"sqlite:///{tmp_path / 'plain.db'}" in result.output
    assert (tmp_path / "plain.db").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["show", "spade/NumberGuess-v1"],
        ["stats"],
        ["search", "maze", "--embedder", "hashing"],
        ["export", "out.jsonl"],
        ["retire", "spade/NumberGuess-v1"],
        ["revalidate", "spade/NumberGuess-v1"],
        ["play", "spade/NumberGuess-v1", "--auto", "solution"],
        ["play", "OrbitGuess", "--auto", "solution"],  # a registered name, not a seed's
        ["evaluate", "--suite", "seeds"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_reading_a_registry_file_that_does_not_exist_is_an_error_naming_close_ones(
    args, tmp_path, monkeypatch
):
    from spade_envs.registry import Registry

    Registry(tmp_path / "registry.db").close()
    Registry(tmp_path / "other.db").close()
    typo = tmp_path / "registy.db"
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{typo}")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(
        f"Error: There is no registry at {typo}: the file does not exist. Did you mean "
        f"'{tmp_path / 'registry.db'}'? Check SPADE_REGISTRY_URL"
    )
    assert f"run `spade-envs init {typo}`" in result.stderr
    assert not typo.exists()  # nothing was created in its place


def test_a_missing_registry_without_close_files_lists_what_the_directory_holds(
    tmp_path, monkeypatch
):
    from spade_envs.registry import Registry
    from spade_envs.registry.urls import RegistryLocationError, require_existing

    monkeypatch.setenv("SPADE_REGISTRY_URL", str(tmp_path / "corpus.db"))
    with pytest.raises(RegistryLocationError, match=rf"{tmp_path} holds no \*\.db file\."):
        require_existing(f"sqlite:///{tmp_path / 'corpus.db'}")
    Registry(tmp_path / "zzz.db").close()
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 1
    assert f"the file does not exist. {tmp_path} holds zzz.db. Check" in result.stderr


def test_serve_refuses_a_registry_file_that_does_not_exist(tmp_path, monkeypatch):
    from spade_envs.registry import Registry

    monkeypatch.delenv("SPADE_REGISTRY_URL", raising=False)
    Registry(tmp_path / "registry.db").close()
    result = CliRunner().invoke(
        main, ["serve", "--port", "0", "--registry", f"sqlite:///{tmp_path / 'registy.db'}"]
    )
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(
        f"Error: There is no registry at {tmp_path / 'registy.db'}: the file does not exist. "
        f"Did you mean '{tmp_path / 'registry.db'}'?"
    )
    assert not (tmp_path / "registy.db").exists()


def test_writing_commands_init_and_the_default_location_create_a_registry(tmp_path, monkeypatch):
    path = tmp_path / "new.db"
    monkeypatch.setenv("SPADE_REGISTRY_URL", str(path))
    made = CliRunner().invoke(main, ["init"])
    assert made.exit_code == 0, made.output
    assert made.output.startswith(f"Created the registry at sqlite:///{path} with ")
    again = CliRunner().invoke(main, ["init"])
    assert again.output.startswith(f"The registry at sqlite:///{path} exists: ")
    other = tmp_path / "other.db"
    named = CliRunner().invoke(main, ["init", str(other)])
    assert named.exit_code == 0 and other.is_file()
    assert f"export SPADE_REGISTRY_URL={other}" in named.output
    # register writes: it creates a registry that does not exist yet
    third = tmp_path / "third.db"
    monkeypatch.setenv("SPADE_REGISTRY_URL", str(third))
    source = tmp_path / "orbit.py"
    source.write_text(ORBIT)
    registered = CliRunner().invoke(main, ["register", str(source), "--budget", "fast"])
    assert registered.exit_code == 0, registered.output
    assert "registered spade/OrbitGuess-v1" in registered.output and third.is_file()
    # the per-user default is created on first use, by reading commands too
    monkeypatch.delenv("SPADE_REGISTRY_URL")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    listed = CliRunner().invoke(main, ["list", "--limit", "1"])
    assert listed.exit_code == 0, listed.output
    assert (tmp_path / "data" / "spade-envs" / "registry.db").is_file()


def test_a_registry_in_a_missing_directory_is_an_error_not_created(tmp_path, monkeypatch):
    missing = tmp_path / "typo" / "reg.db"
    for value in (str(missing), f"sqlite:///{missing}"):
        monkeypatch.setenv("SPADE_REGISTRY_URL", value)
        result = CliRunner().invoke(main, ["list"])
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith("Error: ") and str(tmp_path / "typo") in result.stderr
        assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (["play", "NumberGuess", "--knob", "uppr=1"], "Usage: main play [OPTIONS] NAME"),
        (["show", "NumberGuess"], "Usage: main show [OPTIONS] ENV_ID"),
        (["import", "--format", "xml", "x"], "Usage: main import [OPTIONS] [PATH]"),
        (["validate", "x.py", "--budget", "quick"], "Usage: main validate [OPTIONS] FILES..."),
    ],
)
def test_usage_errors_exit_2_with_their_command_usage(runner, args, usage):
    result = runner.invoke(main, args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(usage + "\n")
