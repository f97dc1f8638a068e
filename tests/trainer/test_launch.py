"""``spade-envs launch``: task rendering, finding SkyPilot, and the exact call it makes.

A fake ``sky`` executable (a script written into tmp) stands in for SkyPilot and records
its argv, the YAML it was given and whether the registry secret reached its environment;
the real SkyPilot CLI's parsing of the same argv is checked in test_sky_tasks.py.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_envs.cli import main
from spade_envs.trainer import launch as L

REPO = Path(__file__).resolve().parents[2]
URL = "postgresql+psycopg://spade:s3cret@db.example:5432/spade"


@pytest.fixture
def presets(tmp_path, monkeypatch):
    """The preset names the task files use, independent of the presets' contents."""
    directory = tmp_path / "presets"
    directory.mkdir()
    for name in ("cpu-test", "cpu-tiny", "gpu-8x", "multinode"):
        (directory / f"{name}.toml").write_text("# stand-in\n")
    monkeypatch.setattr(L, "PRESET_DIR", directory)
    return directory


def fake_sky(tmp_path: Path, *, exit_code: int = 0) -> tuple[Path, Path]:
    """Write a ``sky`` stand-in that records its call into ``record/``."""
    record = tmp_path / "record"
    record.mkdir(parents=True)
    script = tmp_path / "bin" / "sky"
    script.parent.mkdir()
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > "{record}/argv"\n'
        'for last in "$@"; do :; done\n'
        f'cp "$last" "{record}/task.yaml"\n'
        f'printf "%s" "${{SPADE_REGISTRY_URL:-}}" > "{record}/secret"\n'
        f"exit {exit_code}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, record


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, ["launch", *args], env=env)


def rendered(output: str) -> dict:
    """The YAML part of a --dryrun output."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# Rendered by"))
    end = next(i for i, line in enumerate(lines) if line.startswith("# command (not run)"))
    return yaml.safe_load("\n".join(lines[start:end]) + "\n")


# --- dry run ------------------------------------------------------------------------------


def test_dryrun_prints_the_rendered_task_with_every_override(presets):
    result = invoke(
        "--preset", "multinode", "--nodes", "3", "--gpus", "A100:4", "--cloud", "gcp",
        "--name", "exp-7", "--env", "WANDB_MODE=offline", "--bucket", "my-ckpts", "--spot",
        "--dryrun",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    task = rendered(result.output)
    assert task["name"] == "exp-7"
    assert task["num_nodes"] == 3
    assert task["resources"]["accelerators"] == "A100:4"
    assert task["resources"]["infra"] == "gcp"
    assert task["resources"]["use_spot"] is True
    assert task["resources"]["job_recovery"]["max_restarts_on_errors"] >= 1
    assert task["workdir"] == str(REPO)
    assert task["envs"]["PRESET"] == "multinode"
    assert task["envs"]["RUN_NAME"] == "exp-7"
    assert task["envs"]["SPADE_BUCKET"] == "my-ckpts"
    assert task["envs"]["WANDB_MODE"] == "offline"
    assert task["secrets"] == {"SPADE_REGISTRY_URL": None}
    assert "# task file: " + str(L.SKY_DIR / "train-multinode.yaml") in result.output
    # The printed command names the rendered file, which exists with the printed YAML.
    command = result.output.split("# command (not run):\n", 1)[1].splitlines()[0]
    assert re.search(
        r"jobs launch --yes --name exp-7 --secret SPADE_REGISTRY_URL \S+\.yaml$", command
    )
    path = Path(command.rsplit(" ", 1)[1])
    assert yaml.safe_load(path.read_text()) == task


def test_dryrun_defaults_single_node_h100(presets, monkeypatch):
    monkeypatch.delenv("SPADE_BUCKET", raising=False)
    result = invoke("--preset", "gpu-8x", "--dryrun")
    assert result.exit_code == 0, result.output
    task = rendered(result.output)
    shipped = yaml.safe_load((L.SKY_DIR / "train-1node.yaml").read_text())
    assert task["num_nodes"] == 1
    assert task["resources"]["accelerators"] == "H100:8"
    assert "infra" not in task["resources"] and "use_spot" not in task["resources"]
    assert task["name"] == task["envs"]["RUN_NAME"] == "spade-gpu-8x"
    assert task["envs"]["SPADE_BUCKET"] == shipped["envs"]["SPADE_BUCKET"]
    assert task["run"] == shipped["run"] and task["setup"] == shipped["setup"]


def test_multinode_preset_defaults_to_two_nodes_and_env_bucket(presets, monkeypatch):
    monkeypatch.setenv("SPADE_BUCKET", "team-bucket")
    task = rendered(invoke("--preset", "multinode", "--dryrun").output)
    assert task["num_nodes"] == 2
    assert task["envs"]["SPADE_BUCKET"] == "team-bucket"
    single = invoke("--preset", "multinode", "--nodes", "1", "--dryrun").output
    assert rendered(single)["num_nodes"] == 1
    assert f"# task file: {L.SKY_DIR / 'train-1node.yaml'}" in single


def test_gpus_none_drops_the_accelerators(presets):
    task = rendered(invoke("--preset", "cpu-tiny", "--gpus", "none", "--dryrun").output)
    assert "accelerators" not in task["resources"]


def test_preset_file_inside_the_checkout_is_passed_relative(presets, tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "presets").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    (checkout / "presets" / "My_Run.toml").write_text("")
    task = rendered(
        invoke("--preset", str(checkout / "presets" / "My_Run.toml"), "--workdir", str(checkout),
               "--dryrun").output
    )  # fmt: skip
    assert task["envs"]["PRESET"] == "presets/My_Run.toml"
    assert task["name"] == "spade-my-run"
    assert task["workdir"] == str(checkout)
    outside = tmp_path / "mine.toml"
    outside.write_text("")
    result = invoke("--preset", str(outside), "--workdir", str(checkout), "--dryrun")
    assert result.exit_code == 2
    assert "outside the workdir" in result.output
    missing = invoke("--preset", "nope.toml", "--workdir", str(checkout), "--dryrun")
    assert "Preset file 'nope.toml' does not exist" in missing.output
    not_checkout = invoke("--preset", "gpu-8x", "--workdir", str(tmp_path), "--dryrun")
    assert "is not a spade-envs checkout" in not_checkout.output


@settings(max_examples=40, deadline=None)
@given(
    name=st.from_regex(r"[A-Z][A-Za-z0-9-]{0,10}", fullmatch=True),
    count=st.integers(1, 64),
    nodes=st.integers(1, 64),
    values=st.lists(st.text(max_size=30), max_size=4),
)
def test_rendered_values_survive_yaml_exactly(name, count, nodes, values):
    """Whatever the values (quotes, colons, '#', newlines, unicode), the rendered YAML
    reads back as exactly the overrides given."""
    envs = tuple(f"V{i}={value}" for i, value in enumerate(values))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(L, "available_presets", lambda: ["gpu-8x"])
        config = L.LaunchConfig(
            preset="gpu-8x", gpus=f"{name}:{count}", nodes=nodes, envs=envs, workdir=REPO
        )
        _, text = L.render_task(config)
    task = yaml.safe_load(text)
    assert task["resources"]["accelerators"] == f"{name}:{count}"
    assert task["num_nodes"] == nodes
    for i, value in enumerate(values):
        assert task["envs"][f"V{i}"] == value


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize("gpus", ["H100:0", "H100:x", "8", "H100:8:2", ":8", "H100:-1", "H 100"])
def test_bad_gpus_format_is_refused(presets, gpus):
    result = invoke("--preset", "gpu-8x", "--gpus", gpus, "--dryrun")
    assert result.exit_code == 2
    assert "is not NAME[:COUNT]" in result.output


@pytest.mark.parametrize(("gpus", "fix"), [("H100x8", "H100:8"), ("A100-80GB*4", "A100-80GB:4")])
def test_count_glued_to_the_gpu_name_is_refused_with_the_fix(presets, gpus, fix):
    result = invoke("--preset", "gpu-8x", "--gpus", gpus, "--dryrun")
    assert result.exit_code == 2
    assert f"the count follows a colon, as in {fix}." in result.output


@pytest.mark.parametrize("gpus", ["L4", "A100-80GB:8", "tpu-v4-8", "H100:16", "none"])
def test_good_gpus_are_accepted(presets, gpus):
    assert invoke("--preset", "gpu-8x", "--gpus", gpus, "--dryrun").exit_code == 0


def test_unknown_preset_suggests_a_close_match(presets):
    result = invoke("--preset", "gpu8x", "--dryrun")
    assert result.exit_code == 2
    assert "No trainer preset named 'gpu8x'. Did you mean 'gpu-8x'?" in result.output
    assert "cpu-test, cpu-tiny, gpu-8x, multinode" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env", "NOEQUALS"], "is not KEY=VALUE"),
        (["--env", "1BAD=x"], "is not KEY=VALUE"),
        (["--env", f"SPADE_REGISTRY_URL={URL}"], "holds the database password"),
        (["--nodes", "0"], "--nodes must be at least 1"),
        (["--name", "Has_Caps"], "must be lower-case letters"),
        (["--cloud", "aws east"], "is not a SkyPilot infra"),
        (["--bucket", "B!"], "is not valid"),
    ],
)
def test_bad_options_are_refused_with_the_fix(presets, args, message):
    result = invoke("--preset", "gpu-8x", *args, "--dryrun")
    assert result.exit_code == 2
    assert message in result.output


def test_installed_without_a_checkout_asks_for_workdir(presets, tmp_path, monkeypatch):
    monkeypatch.setattr(L, "REPO_ROOT", tmp_path / "site-packages")
    result = invoke("--preset", "gpu-8x", "--dryrun")
    assert result.exit_code == 2
    assert "not from a source checkout" in result.output and "--workdir" in result.output
    # --workdir fixes it.
    assert invoke("--preset", "gpu-8x", "--dryrun", "--workdir", str(REPO)).exit_code == 0


# --- the real call path (fake sky) -------------------------------------------------------


def test_managed_launch_calls_sky_jobs_launch_with_the_rendered_yaml(presets, tmp_path):
    sky, record = fake_sky(tmp_path)
    result = invoke(
        "--preset", "gpu-8x", "--gpus", "H200:8", "--cloud", "aws", "--sky-bin", str(sky),
        "--env", "A=1", "--detach",
        env={"SPADE_REGISTRY_URL": URL},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    argv = (record / "argv").read_text().splitlines()
    assert argv[:-1] == [
        "jobs", "launch", "--yes", "--name", "spade-gpu-8x", "--detach-run",
        "--secret", "SPADE_REGISTRY_URL",
    ]  # fmt: skip
    assert argv[-1].endswith("spade-gpu-8x.yaml")
    task = yaml.safe_load((record / "task.yaml").read_text())
    assert task["resources"]["accelerators"] == "H200:8"
    assert task["resources"]["infra"] == "aws"
    assert task["envs"]["A"] == "1"
    # The password reached sky's environment, never its argv or the YAML.
    assert (record / "secret").read_text() == URL
    assert "s3cret" not in " ".join(argv) + (record / "task.yaml").read_text()


def test_unmanaged_launch_uses_a_named_cluster(presets, tmp_path):
    sky, record = fake_sky(tmp_path)
    result = invoke(
        "--preset", "multinode", "--unmanaged", "--name", "dev", "--sky-bin", str(sky),
        env={"SPADE_REGISTRY_URL": URL},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    argv = (record / "argv").read_text().splitlines()
    assert argv[:-1] == ["launch", "--yes", "--cluster", "dev", "--secret", "SPADE_REGISTRY_URL"]
    assert yaml.safe_load((record / "task.yaml").read_text())["num_nodes"] == 2


def test_sky_failure_is_the_exit_status(presets, tmp_path):
    sky, _ = fake_sky(tmp_path, exit_code=3)
    result = invoke("--preset", "gpu-8x", "--sky-bin", str(sky), env={"SPADE_REGISTRY_URL": URL})
    assert result.exit_code == 3


def test_launch_without_registry_url_stops_before_sky(presets, tmp_path, monkeypatch):
    monkeypatch.delenv("SPADE_REGISTRY_URL", raising=False)
    sky, record = fake_sky(tmp_path)
    result = invoke("--preset", "gpu-8x", "--sky-bin", str(sky))
    assert result.exit_code == 1  # not a usage error: the shell lacks the variable
    assert "SPADE_REGISTRY_URL is not set" in result.stderr
    assert not (record / "argv").exists()


# --- finding SkyPilot ---------------------------------------------------------------------


@pytest.fixture
def no_sky(tmp_path, monkeypatch):
    """A world without SkyPilot: empty PATH, no .venv-sky, nothing importable."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("SPADE_SKY_BIN", raising=False)
    monkeypatch.setattr(L, "REPO_ROOT", tmp_path / "repo")
    monkeypatch.setattr(sys, "executable", str(empty / "python"))
    monkeypatch.setattr(L, "_sky_importable", lambda: False)
    return tmp_path


def test_no_sky_fails_with_the_install_command(presets, no_sky):
    with pytest.raises(L.LaunchError, match=r"own environment: python3 -m venv \.venv-sky"):
        L.find_sky()
    result = invoke("--preset", "gpu-8x", "--workdir", str(REPO), env={"SPADE_REGISTRY_URL": URL})
    assert result.exit_code == 1
    assert f"skypilot=={L.SKYPILOT_VERSION}" in result.stderr
    # A dry run still works offline and says how to install SkyPilot.
    dry = invoke("--preset", "gpu-8x", "--workdir", str(REPO), "--dryrun")
    assert dry.exit_code == 0
    assert "sky jobs launch --yes" in dry.output
    assert "SkyPilot was not found" in dry.output


def test_sky_is_found_in_the_documented_order(no_sky, monkeypatch):
    tmp = no_sky
    venv_sky, _ = fake_sky(tmp / "v")
    (tmp / "repo" / ".venv-sky" / "bin").mkdir(parents=True)
    target = tmp / "repo" / ".venv-sky" / "bin" / "sky"
    target.write_bytes(venv_sky.read_bytes())
    target.chmod(0o755)
    assert L.find_sky() == L.SkyRunner("cli", str(target), ".venv-sky")

    on_path, _ = fake_sky(tmp / "p")
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert L.find_sky().found_by == "PATH"

    by_env, _ = fake_sky(tmp / "e")
    monkeypatch.setenv("SPADE_SKY_BIN", str(by_env))
    assert L.find_sky() == L.SkyRunner("cli", str(by_env), "SPADE_SKY_BIN")

    explicit, _ = fake_sky(tmp / "x")
    assert L.find_sky(str(explicit)).found_by == "--sky-bin"
    with pytest.raises(L.LaunchError, match="--sky-bin '/nope/sky' is not an executable"):
        L.find_sky("/nope/sky")


def test_importable_sky_is_used_through_its_python_api(presets, no_sky, monkeypatch):
    """With no sky command but ``import sky`` working, the Python API gets the task."""
    package = no_sky / "fake_site" / "sky"
    (package / "jobs").mkdir(parents=True)
    (package / "__init__.py").write_text(
        "calls = []\n"
        "class Task:\n"
        "    def __init__(self, text): self.text = text; self.secrets = {}\n"
        "    @staticmethod\n"
        "    def from_yaml(path):\n"
        "        calls.append(('from_yaml', path)); return Task(open(path).read())\n"
        "    def update_secrets(self, s): self.secrets.update(s); return self\n"
        "def launch(task, cluster_name=None): calls.append(('launch', cluster_name)); return 'r'\n"
        "def stream_and_get(request): calls.append(('stream_and_get', request))\n"
        "def get(request): calls.append(('get', request))\n"
    )
    (package / "jobs" / "__init__.py").write_text(
        "import sky\n"
        "def launch(task, name=None):\n"
        "    sky.calls.append(('jobs.launch', name, task.secrets, task.text)); return 'req'\n"
    )
    monkeypatch.syspath_prepend(str(package.parent))
    for module in ("sky", "sky.jobs"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setattr(L, "_sky_importable", lambda: True)
    assert L.find_sky() == L.SkyRunner("sdk", None, "import sky")

    plan = L.plan_launch(L.LaunchConfig(preset="gpu-8x", workdir=REPO, gpus="L4:1"))
    assert "sky.Task.from_yaml(" in plan.describe_command()
    assert L.launch(plan, environ={"SPADE_REGISTRY_URL": URL}) == 0
    import sky  # the fake, imported by the launcher

    (kind, path), (launched, name, secrets, text), (stream, request) = sky.calls
    assert (kind, path) == ("from_yaml", str(plan.task_path))
    assert (launched, name, secrets) == ("jobs.launch", "spade-gpu-8x", {"SPADE_REGISTRY_URL": URL})
    assert "accelerators: L4:1" in text
    assert (stream, request) == ("stream_and_get", "req")


# --- consistency --------------------------------------------------------------------------


def test_ci_and_help_pin_the_validated_skypilot_version():
    pin = f"skypilot=={L.SKYPILOT_VERSION}"
    # The Makefile builds .venv-sky for `make test` and CI.
    makefile = (REPO / "Makefile").read_text()
    assert f"SKYPILOT_VERSION := {L.SKYPILOT_VERSION}" in makefile
    assert "skypilot==$(SKYPILOT_VERSION)" in makefile
    assert pin in L.SKY_INSTALL
    help_text = CliRunner().invoke(main, ["launch", "--help"]).output
    assert pin in help_text
    assert "spade-envs launch --preset gpu-8x --dryrun" in help_text


def test_cli_import_stays_light():
    code = (
        "import sys, spade_envs.cli, spade_envs.cli.launch, spade_envs.trainer.launch; "
        "print(','.join(m for m in ('sky', 'yaml', 'torch') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
