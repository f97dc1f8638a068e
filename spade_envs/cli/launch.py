"""``spade-envs launch``: self-play training on cloud GPUs through SkyPilot."""

from __future__ import annotations

from pathlib import Path

import click

from .errors import SpadeCommand, options_checked

__all__ = ["LAUNCH_COMMANDS"]


@click.command("launch", cls=SpadeCommand)
@click.option(
    "--preset",
    required=True,
    help="Trainer preset (gpu-8x, multinode, ...) or a preset .toml inside the checkout.",
)
@click.option("--gpus", help="GPUs per node as NAME[:COUNT], or none.  [default: H100:8]")
@click.option(
    "--nodes",
    type=int,
    help="Number of nodes (more than 1 uses the multi-node task).  "
    "[default: 2 for the multinode preset, else 1]",
)
@click.option("--cloud", help="SkyPilot infra: aws, gcp, azure, k8s, aws/us-east-1, ...")
@click.option(
    "--name", help="Job name; also the run's folder in the bucket.  [default: spade-PRESET]"
)
@click.option(
    "--env",
    "envs",
    multiple=True,
    metavar="KEY=VALUE",
    help="Extra environment variable for the task (repeatable).",
)
@click.option("--bucket", help="Checkpoint bucket name.  [default: $SPADE_BUCKET]")
@click.option("--spot", is_flag=True, help="Use spot instances (recovered after preemption).")
@click.option(
    "--managed/--unmanaged",
    default=True,
    show_default=True,
    help="Managed job (sky jobs launch: recovery, resume from the last checkpoint) "
    "or a plain cluster (sky launch).",
)
@click.option("--detach", is_flag=True, help="Return once submitted; do not stream logs.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="The spade-envs checkout to upload.  [default: this package's checkout]",
)
@click.option(
    "--sky-bin",
    type=click.Path(dir_okay=False),
    help="The sky executable.  [default: $SPADE_SKY_BIN, PATH, .venv-sky/bin/sky]",
)
@click.option("--dryrun", is_flag=True, help="Print the rendered task and the command only.")
@click.option(
    "--plan-model",
    help="The model the memory plan sizes (see `spade-envs plan --model`).  [default: model.spec]",
)
@click.option(
    "--launch-even-if-it-does-not-fit",
    "ignore_plan",
    is_flag=True,
    help="Launch although the memory plan says a GPU will run out of memory.",
)
def launch_command(
    preset: str,
    gpus: str | None,
    nodes: int | None,
    cloud: str | None,
    name: str | None,
    envs: tuple[str, ...],
    bucket: str | None,
    spot: bool,
    managed: bool,
    detach: bool,
    workdir: Path | None,
    sky_bin: str | None,
    dryrun: bool,
    plan_model: str | None,
    ignore_plan: bool,
) -> None:
    """Launch self-play training on cloud GPUs with SkyPilot.

    Renders the single-node or multi-node task file with your overrides into a temporary
    YAML and runs `sky jobs launch` on it (a managed job: after a preemption or failure
    it is restarted and resumes from the last checkpoint in the bucket). The shared
    registry comes from SPADE_REGISTRY_URL in your shell (PostgreSQL; sent as a secret).

    SkyPilot needs its own environment (it pins click differently from the Hugging Face
    stack): python3 -m venv .venv-sky && .venv-sky/bin/pip install skypilot==0.14.1

    \b
    The memory plan (`spade-envs plan`) runs first: a preset that will not fit on the
    GPUs asked for is refused with the numbers, unless you pass
    --launch-even-if-it-does-not-fit.

    \b
    Examples:
      spade-envs launch --preset gpu-8x --dryrun
      spade-envs launch --preset gpu-8x --gpus A100:8 --cloud gcp --bucket my-ckpts
      spade-envs launch --preset multinode --nodes 4 --spot --env SPADE_LOG=debug
    """
    from ..trainer.launch import SKY_INSTALL, LaunchConfig, launch, plan_launch

    with options_checked():  # the options, the preset and the checkout to upload
        config = LaunchConfig(
            preset=preset,
            gpus=gpus,
            nodes=nodes,
            cloud=cloud,
            name=name,
            envs=envs,
            bucket=bucket,
            spot=spot,
            managed=managed,
            detach=detach,
            workdir=workdir,
            sky_bin=sky_bin,
        )
        plan = plan_launch(config)
    _check_memory(preset, gpus, nodes, plan_model, ignore_plan, _train_overrides(envs))
    if dryrun:
        click.echo(f"# task file: {plan.source}")
        click.echo(f"# rendered to: {plan.task_path}")
        click.echo(plan.yaml_text, nl=False)
        click.echo(f"# command (not run):\n{plan.describe_command()}")
        if plan.runner is None:
            click.echo(f"note: SkyPilot was not found; install it with: {SKY_INSTALL}", err=True)
        return
    click.echo(f"spade-envs: {plan.describe_command()}", err=True)
    status = launch(plan)
    if status != 0:
        raise SystemExit(status)


def _train_overrides(envs: tuple[str, ...]) -> tuple[str, ...]:
    """The ``--set`` settings inside ``--env SPADE_TRAIN_ARGS=...``: the run trains with
    them, so the plan must see them."""
    import shlex

    out: list[str] = []
    for item in envs:
        name, _, value = item.partition("=")
        if name != "SPADE_TRAIN_ARGS":
            continue
        words = shlex.split(value)
        for i, word in enumerate(words):
            if word == "--set" and i + 1 < len(words):
                out.append(words[i + 1])
            elif word.startswith("--set="):
                out.append(word.removeprefix("--set="))
    return tuple(out)


def _check_memory(
    preset: str,
    gpus: str | None,
    nodes: int | None,
    model: str | None,
    ignore: bool,
    overrides: tuple[str, ...] = (),
) -> None:
    """Print the memory plan; refuse (exit 1) one that does not fit unless ``ignore``."""
    from ..error import SpadeError
    from ..trainer.memory_plan import UnknownAcceleratorError
    from ..trainer.sizing import plan_preset

    if gpus is not None and gpus.lower() == "none":
        return  # CPU nodes: nothing to size
    try:
        plan = plan_preset(preset, overrides, gpus=gpus, nodes=nodes, model=model)
    except UnknownAcceleratorError as exc:
        click.echo(f"spade-envs: memory not planned: {exc}", err=True)
        return
    except SpadeError as exc:
        if ignore:
            click.echo(f"spade-envs: no memory plan ({exc}); launching anyway", err=True)
            return
        raise SpadeError(
            f"{exc} (or pass --launch-even-if-it-does-not-fit to launch unplanned)"
        ) from None
    click.echo(plan.report(), err=True)
    if model is None and plan.memory.model.name == "smollm2":
        click.echo(
            "spade-envs: planned for SmolLM2, the preset's model; for another one pass "
            "--plan-model (a config.json, a model directory or a shape such as qwen3-4b).",
            err=True,
        )
    if plan.fits:
        return
    if ignore:
        click.echo(
            "spade-envs: THE PLAN DOES NOT FIT; launching anyway as asked "
            "(--launch-even-if-it-does-not-fit)",
            err=True,
        )
        return
    raise SpadeError(
        "Refusing to launch: the memory plan above does not fit on the GPUs asked for. "
        "Change the settings it suggests, or pass --launch-even-if-it-does-not-fit."
    )


LAUNCH_COMMANDS = (launch_command,)
