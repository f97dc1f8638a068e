"""Launching self-play training on cloud GPUs through SkyPilot.

The task files in ``spade_envs/trainer/sky/`` describe one 8-GPU node and several nodes.
:func:`render_task` copies the right one with the caller's overrides (GPUs, node count,
cloud, environment variables) and :func:`launch` hands the result to SkyPilot.

SkyPilot pins ``click`` to versions the Hugging Face stack does not accept, so it usually
lives in a virtual environment of its own (``.venv-sky`` next to the checkout, see
:data:`SKY_INSTALL`). The launcher therefore talks to SkyPilot through its ``sky``
command line; only when no ``sky`` command exists and ``sky`` is importable here does it
use the Python API. Nothing here imports ``sky`` or ``yaml`` at module level.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..error import SpadeError, suggest

__all__ = [
    "SKYPILOT_VERSION",
    "SKY_INSTALL",
    "LaunchConfig",
    "LaunchError",
    "LaunchPlan",
    "SkyRunner",
    "available_presets",
    "find_sky",
    "launch",
    "plan_launch",
    "render_task",
    "task_file",
]

#: The SkyPilot release the task files are validated against (CI builds it in .venv-sky).
SKYPILOT_VERSION = "0.14.1"
#: How to install SkyPilot beside spade-envs without sharing its dependencies.
SKY_INSTALL = f"python3 -m venv .venv-sky && .venv-sky/bin/pip install skypilot=={SKYPILOT_VERSION}"

REPO_ROOT = Path(__file__).resolve().parents[2]
SKY_DIR = Path(__file__).resolve().parent / "sky"
PRESET_DIR = Path(__file__).resolve().parent / "presets"
TASK_FILES = {"single": SKY_DIR / "train-1node.yaml", "multi": SKY_DIR / "train-multinode.yaml"}
#: The registry URL carries a password: it travels as a SkyPilot secret, never in a file.
REGISTRY_SECRET = "SPADE_REGISTRY_URL"
#: Presets meant for several nodes start that many when --nodes is not given.
DEFAULT_NODES = {"multinode": 2, "multinode-pool": 2}

_GPUS = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_.-]*)(?::(?P<count>[0-9]+))?$")
# H100x8, A100*4: a count glued to the name (no accelerator is named like that).
_GPUS_TYPO = re.compile(
    r"^(?P<name>[A-Za-z][A-Za-z0-9_.-]*?)(?:(?<=[0-9])[xX]|\*)(?P<count>[0-9]+)$"
)
_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")


class LaunchError(SpadeError):
    """A launch request was invalid, or SkyPilot could not be found."""


def available_presets() -> list[str]:
    """Return the names of the presets shipped with the trainer (``presets/*.toml``)."""
    if not PRESET_DIR.is_dir():
        return []
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


def _parse_env(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not _ENV_KEY.match(key):
        raise LaunchError(
            f"--env {item!r} is not KEY=VALUE with KEY a shell variable name "
            "(e.g. --env SPADE_BUCKET=my-bucket)."
        )
    if key == REGISTRY_SECRET:
        raise LaunchError(
            f"Do not pass {REGISTRY_SECRET} with --env: it holds the database password. "
            f"Export it in your shell (export {REGISTRY_SECRET}=postgresql+psycopg://...) and "
            "the launcher sends it to SkyPilot as a secret."
        )
    return key, value


@dataclass
class LaunchConfig:
    """What ``spade-envs launch`` was asked to do.

    Attributes:
        preset: A trainer preset name (``presets/*.toml``) or the path of a preset TOML
            file inside ``workdir`` (the cloud nodes read it from their copy of the workdir).
        gpus: Accelerators per node as ``NAME[:COUNT]`` (``H100:8``, ``A100``), or
            ``none`` for CPU-only nodes; None keeps the task file's ``H100:8``.
        nodes: Number of nodes; 1 uses the single-node task file, more the multi-node
            one. None: :data:`DEFAULT_NODES`, else 1.
        cloud: SkyPilot infra (``aws``, ``gcp/us-central1``, ``k8s``...); None lets
            SkyPilot choose the cheapest.
        name: Job (or cluster) name; also names the run's folder in the bucket.
            None: ``spade-<preset>``.
        envs: Extra environment variables for the task, as ``KEY=VALUE`` strings.
        bucket: Name of the checkpoint bucket (SkyPilot creates it when missing); None:
            ``$SPADE_BUCKET`` when set, else the task file's placeholder.
        spot: Ask for spot instances (managed jobs recover from preemptions).
        managed: Run as a managed job (``sky jobs launch``: recovery, then resume from the
            last checkpoint) rather than on a plain cluster (``sky launch``).
        detach: Return once the job is submitted instead of streaming its logs.
        workdir: The spade-envs checkout to upload; None: the one this package lives in.
        sky_bin: Path of the ``sky`` executable; None: searched (see :func:`find_sky`).
    """

    preset: str
    gpus: str | None = None
    nodes: int | None = None
    cloud: str | None = None
    name: str | None = None
    envs: tuple[str, ...] = ()
    bucket: str | None = None
    spot: bool = False
    managed: bool = True
    detach: bool = False
    workdir: Path | None = None
    sky_bin: str | None = None
    _env_pairs: tuple[tuple[str, str], ...] = field(init=False, repr=False, default=())

    def __post_init__(self) -> None:
        if self.gpus is not None and self.gpus.lower() != "none":
            typo = _GPUS_TYPO.match(self.gpus)
            if typo is not None:
                raise LaunchError(
                    f"--gpus {self.gpus!r}: the count follows a colon, as in "
                    f"{typo['name']}:{typo['count']}."
                )
            match = _GPUS.match(self.gpus)
            if match is None or (match["count"] is not None and int(match["count"]) < 1):
                raise LaunchError(
                    f"--gpus {self.gpus!r} is not NAME[:COUNT] with a whole count of at "
                    "least 1: use e.g. H100:8, A100:4, L4 (one GPU), or none for CPU nodes."
                )
        if self.nodes is not None and self.nodes < 1:
            raise LaunchError(f"--nodes must be at least 1, got {self.nodes}.")
        if self.cloud is not None and not re.match(r"^[A-Za-z0-9*/_.-]+$", self.cloud):
            raise LaunchError(
                f"--cloud {self.cloud!r} is not a SkyPilot infra such as aws, gcp, "
                "aws/us-east-1 or k8s."
            )
        if self.name is not None and not _NAME.match(self.name):
            raise LaunchError(
                f"--name {self.name!r} must be lower-case letters, digits and dashes, start "
                "with a letter and end with a letter or digit (at most 63 characters)."
            )
        if self.bucket is not None and not _BUCKET.match(self.bucket):
            raise LaunchError(
                f"Bucket name {self.bucket!r} is not valid: use 3-63 lower-case letters, "
                "digits, dots and dashes."
            )
        self._env_pairs = tuple(_parse_env(item) for item in self.envs)

    @property
    def env_pairs(self) -> tuple[tuple[str, str], ...]:
        """The ``--env`` items split into (key, value)."""
        return self._env_pairs

    @property
    def num_nodes(self) -> int:
        """The node count after defaults."""
        if self.nodes is not None:
            return self.nodes
        return DEFAULT_NODES.get(self.preset, 1)

    @property
    def job_name(self) -> str:
        """The SkyPilot job/cluster name after defaults."""
        if self.name is not None:
            return self.name
        stem = Path(self.preset).stem if self.preset.endswith(".toml") else self.preset
        slug = re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-") or "run"
        return f"spade-{slug}"[:63].rstrip("-")


def task_file(nodes: int) -> Path:
    """Return the shipped task file for ``nodes`` nodes."""
    return TASK_FILES["single" if nodes == 1 else "multi"]


def default_workdir() -> Path:
    """Return the spade-envs checkout this package was imported from.

    Raises:
        LaunchError: When the package is installed from a wheel (no checkout to upload).
    """
    root = REPO_ROOT
    if (root / "pyproject.toml").is_file() and (root / "spade_envs").is_dir():
        return root
    raise LaunchError(
        f"spade-envs is installed in {root}, not from a source checkout, and the cloud "
        "nodes install it from the uploaded workdir: clone the repository and pass "
        "--workdir PATH/TO/spade-envs."
    )


def _resolve_preset(preset: str, workdir: Path) -> str:
    """Return the PRESET value the task runs with (a name, or a path relative to workdir)."""
    if preset.endswith(".toml"):
        path = Path(preset).expanduser().resolve()
        if not path.is_file():
            raise LaunchError(f"Preset file {preset!r} does not exist.")
        try:
            return str(path.relative_to(workdir.resolve()))
        except ValueError:
            raise LaunchError(
                f"Preset file {path} is outside the workdir {workdir}: the cloud nodes only "
                "see files inside the uploaded workdir, so move it there."
            ) from None
    known = available_presets()
    if preset not in known:
        listed = ", ".join(known) if known else "none found in " + str(PRESET_DIR)
        raise LaunchError(
            f"No trainer preset named {preset!r}.{suggest(preset, known)} "
            f"Known presets: {listed}; or pass the path of a preset .toml file."
        )
    return preset


def _yaml() -> Any:
    try:
        import yaml
    except ImportError:
        raise LaunchError(
            "spade-envs launch needs PyYAML to read the task files: pip install pyyaml"
        ) from None
    return yaml


def _dump_yaml(data: Mapping[str, Any]) -> str:
    yaml = _yaml()

    class _Dumper(yaml.SafeDumper):
        pass

    def _str(dumper: Any, value: str) -> Any:
        # Scripts stay readable as literal blocks instead of one quoted line.
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, _str)
    return yaml.dump(dict(data), Dumper=_Dumper, sort_keys=False, width=100)


def render_task(config: LaunchConfig, *, workdir: Path | None = None) -> tuple[Path, str]:
    """Render the task file for ``config`` with its overrides applied.

    Args:
        config: The launch request.
        workdir: The checkout to upload; None: ``config.workdir`` or :func:`default_workdir`.

    Returns:
        The task file it started from, and the rendered YAML text.

    Raises:
        LaunchError: Unknown preset, preset file outside the workdir, or no checkout.
    """
    workdir = (workdir or config.workdir or default_workdir()).resolve()
    if not (workdir / "pyproject.toml").is_file():
        raise LaunchError(f"--workdir {workdir} is not a spade-envs checkout (no pyproject.toml).")
    preset = _resolve_preset(config.preset, workdir)
    source = task_file(config.num_nodes)
    task: dict[str, Any] = _yaml().safe_load(source.read_text(encoding="utf-8"))

    task["name"] = config.job_name
    task["num_nodes"] = config.num_nodes
    task["workdir"] = str(workdir)
    resources = task.setdefault("resources", {})
    if config.gpus is not None:
        if config.gpus.lower() == "none":
            resources.pop("accelerators", None)
        else:
            resources["accelerators"] = config.gpus
    if config.cloud is not None:
        resources["infra"] = config.cloud
    if config.spot:
        resources["use_spot"] = True
    envs = task.setdefault("envs", {})
    envs["PRESET"] = preset
    envs["RUN_NAME"] = config.job_name
    bucket = config.bucket or os.environ.get("SPADE_BUCKET")
    if bucket:
        envs["SPADE_BUCKET"] = bucket
    for key, value in config.env_pairs:
        envs[key] = value

    header = (
        f"# Rendered by `spade-envs launch` from {source.name} "
        f"(preset {preset}, {config.num_nodes} node(s)).\n"
    )
    return source, header + _dump_yaml(task)


@dataclass(frozen=True)
class SkyRunner:
    """How SkyPilot is reached: a ``sky`` executable, or its Python API in this process."""

    kind: str  # "cli" | "sdk"
    path: str | None = None
    found_by: str = ""


def _sky_importable() -> bool:
    return importlib.util.find_spec("sky") is not None


def find_sky(sky_bin: str | None = None) -> SkyRunner:
    """Find SkyPilot, preferring its command line.

    In order: ``sky_bin``, ``$SPADE_SKY_BIN``, ``sky`` on PATH, ``sky`` beside this
    Python, ``.venv-sky/bin/sky`` in the checkout, else the Python API when ``sky`` is
    importable here.

    Raises:
        LaunchError: When none of them exists, with the install command.
    """
    explicit = [(sky_bin, "--sky-bin"), (os.environ.get("SPADE_SKY_BIN"), "SPADE_SKY_BIN")]
    for value, origin in explicit:
        if value:
            path = Path(value).expanduser()
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise LaunchError(f"{origin} {value!r} is not an executable file.")
            return SkyRunner("cli", str(path), origin)
    on_path = shutil.which("sky")
    if on_path:
        return SkyRunner("cli", on_path, "PATH")
    root = REPO_ROOT
    for candidate, origin in (
        (Path(sys.executable).parent / "sky", "this environment"),
        (root / ".venv-sky" / "bin" / "sky", ".venv-sky"),
    ):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return SkyRunner("cli", str(candidate), origin)
    if _sky_importable():
        return SkyRunner("sdk", None, "import sky")
    raise LaunchError(
        "SkyPilot was not found (no --sky-bin, SPADE_SKY_BIN, `sky` on PATH, "
        f"{root / '.venv-sky/bin/sky'}, or importable `sky`). SkyPilot and the Hugging Face "
        f"stack disagree about click, so install it in its own environment: {SKY_INSTALL} "
        "(from the repository root), then configure a cloud with `.venv-sky/bin/sky check`."
    )


@dataclass(frozen=True)
class LaunchPlan:
    """A rendered task and the exact SkyPilot call that would launch it."""

    config: LaunchConfig
    source: Path
    yaml_text: str
    task_path: Path
    runner: SkyRunner | None
    command: tuple[str, ...]

    def describe_command(self) -> str:
        """The call as one line a person can paste (or read, for the Python API)."""
        if self.runner is not None and self.runner.kind == "sdk":
            call = "sky.jobs.launch(task, name=...)" if self.config.managed else "sky.launch(task)"
            return (
                f"python: task = sky.Task.from_yaml({str(self.task_path)!r}); "
                f"task.update_secrets({{{REGISTRY_SECRET!r}: ...}}); "
                f"sky.stream_and_get({call})"
            )
        return shlex.join(self.command)


def _cli_command(config: LaunchConfig, program: str, task_path: Path) -> tuple[str, ...]:
    if config.managed:
        cmd = [program, "jobs", "launch", "--yes", "--name", config.job_name]
    else:
        cmd = [program, "launch", "--yes", "--cluster", config.job_name]
    if config.detach:
        cmd.append("--detach-run")
    # `--secret NAME` without a value: sky reads it from its own environment, so the
    # password never appears on a command line.
    cmd += ["--secret", REGISTRY_SECRET, str(task_path)]
    return tuple(cmd)


def plan_launch(config: LaunchConfig, *, out_dir: Path | None = None) -> LaunchPlan:
    """Render the task into a file and work out the SkyPilot call, without running it.

    Args:
        config: The launch request.
        out_dir: Where to write the rendered YAML; None: a new temporary directory.

    Raises:
        LaunchError: Bad preset or workdir; SkyPilot missing (only for a real launch:
            a dry run still shows the command, with ``sky`` as the program).
    """
    source, text = render_task(config)
    directory = out_dir or Path(tempfile.mkdtemp(prefix="spade-launch-"))
    directory.mkdir(parents=True, exist_ok=True)
    task_path = directory / f"{config.job_name}.yaml"
    task_path.write_text(text, encoding="utf-8")
    try:
        runner: SkyRunner | None = find_sky(config.sky_bin)
    except LaunchError:
        runner = None
    program = runner.path if runner is not None and runner.path else "sky"
    return LaunchPlan(
        config, source, text, task_path, runner, _cli_command(config, program, task_path)
    )


def _run_sdk(plan: LaunchPlan, registry_url: str) -> int:
    import sky  # only reached when sky is importable and no sky command exists

    task = sky.Task.from_yaml(str(plan.task_path))
    task.update_secrets({REGISTRY_SECRET: registry_url})
    if plan.config.managed:
        import sky.jobs

        request = sky.jobs.launch(task, name=plan.config.job_name)
    else:
        request = sky.launch(task, cluster_name=plan.config.job_name)
    if plan.config.detach:
        sky.get(request)
    else:
        sky.stream_and_get(request)
    return 0


def launch(plan: LaunchPlan, *, environ: Mapping[str, str] | None = None) -> int:
    """Run the SkyPilot call of ``plan``; returns its exit status.

    Args:
        plan: From :func:`plan_launch`.
        environ: Environment of the ``sky`` process; None: this process's environment.

    Raises:
        LaunchError: SkyPilot missing, or ``SPADE_REGISTRY_URL`` not set.
    """
    env = dict(os.environ if environ is None else environ)
    # A plan made without SkyPilot (a dry run) looks again, and fails with the install command.
    runner = plan.runner if plan.runner is not None else find_sky(plan.config.sky_bin)
    registry_url = env.get(REGISTRY_SECRET, "")
    if not registry_url:
        raise LaunchError(
            f"{REGISTRY_SECRET} is not set. The cloud ranks share one registry: export "
            f"{REGISTRY_SECRET}=postgresql+psycopg://USER:PASSWORD@HOST:5432/DB (a server "
            "every node can reach); it is passed to SkyPilot as a secret."
        )
    if runner.kind == "sdk":
        return _run_sdk(plan, registry_url)
    command = _cli_command(plan.config, runner.path or "sky", plan.task_path)
    return subprocess.run(list(command), env=env, check=False).returncode
