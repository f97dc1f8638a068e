"""``spade-envs train`` and ``spade-envs report``: the self-play trainer from the command line.

``python -m spade_envs.trainer`` runs the same ``train`` command (what ``torchrun`` starts).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..error import SpadeError
from .errors import SpadeCommand
from .options import SuggestChoice

__all__ = ["TRAINER_COMMANDS", "plan_command", "report_command", "train_command"]


def _echo_err(line: str) -> None:
    click.echo(line, err=True)


@click.command("train", cls=SpadeCommand)
@click.option(
    "--preset",
    default="cpu-tiny",
    show_default=True,
    help="A preset name (cpu-tiny, cpu-small, cpu-test, gpu-8x, multinode) or a .toml file.",
)
@click.option(
    "--run-dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Where config.toml, metrics.jsonl, tensorboard/, checkpoints/ and registry.db go.",
)
@click.option(
    "--resume",
    type=SuggestChoice(["auto", "never", "always"], "resume mode"),
    default="auto",
    show_default=True,
    help="auto: continue from the newest checkpoint if there is one; never: refuse a run "
    "directory that holds a run; always: a checkpoint must exist.",
)
@click.option("--iterations", type=click.IntRange(1), help="Run this many iterations in all.")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a setting, e.g. --set designer.documents=4 --set grpo.learning_rate=1e-5 "
    "(repeatable; values are TOML, a bare word is a string).",
)
def train_command(
    preset: str, run_dir: str, resume: str, iterations: int | None, overrides: tuple[str, ...]
) -> None:
    """Self-play training: the model designs environments, plays them, learns from both.

    Each iteration prints one line per stage (design, play, update, eval, checkpoint),
    with the failed plays counted by outcome; at the end a table of every iteration. An
    iteration where every play failed stops the run with status 1 and the first
    failure's message. Kill it at any time: with --resume auto the
    same command continues from the newest checkpoint and reaches the same state.
    Under torchrun each process trains on its share (rank 0 writes).

    \b
    Examples:
      spade-envs train --preset cpu-tiny --run-dir runs/demo
      spade-envs train --preset cpu-tiny --run-dir runs/pool --set mode=fixed-pool
      spade-envs train --preset cpu-tiny --run-dir runs/demo --iterations 4   # continue
      torchrun --nproc_per_node=8 -m spade_envs.trainer --preset gpu-8x --run-dir runs/gpu
    """
    from ..trainer.config_io import load_config
    from ..trainer.distributed import init_distributed, shutdown
    from ..trainer.loop import SelfPlayTrainer
    from ..trainer.metrics import read_metrics
    from ..trainer.report import closing_summary, summary_table, synthesized, write_synthesized

    extra = [f"iterations={iterations}"] if iterations is not None else []
    try:  # --preset and --set are what the user typed: their errors are usage errors
        config = load_config(preset, [*overrides, *extra])
    except SpadeError as exc:
        raise click.UsageError(str(exc)) from exc
    dist = None
    try:
        dist = init_distributed()
        trainer = SelfPlayTrainer(config, run_dir, resume=resume, dist=dist, log=_echo_err)
        trainer.run()
        if dist.is_main:
            records = read_metrics(run_dir)
            envs = synthesized(trainer.parts.registry, trainer.parts.run_id)
            write_synthesized(envs, Path(run_dir))
            click.echo(summary_table(records))
            click.echo(closing_summary(records, envs, Path(run_dir)))
            click.echo(
                f"run directory: {run_dir} (metrics.jsonl, synthesized.json, tensorboard/, "
                f"config.toml); checkpoints: {trainer.parts.checkpoints}"
            )
    finally:  # a failed run (every play failed, ...) is an error of exit code 1
        if dist is not None:
            shutdown()


@click.command("report", cls=SpadeCommand)
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--out", type=click.Path(file_okay=False), help="Default: RUN_DIR/plots.")
def report_command(run_dir: str, out: str | None) -> None:
    """Draw a training run's curves as PNG files and print its summary table.

    Plots returns (with and without the hint, held-out evaluation), regret, designer
    yield, losses, tokens per second, the time split of each iteration and the failed
    plays of each iteration by outcome.

    \b
    Examples:
      spade-envs report runs/demo
      spade-envs report runs/demo --out /tmp/plots
    """
    from ..trainer.metrics import read_metrics
    from ..trainer.report import before_after, draw_report, summary_table

    paths = draw_report(run_dir, out)  # a run directory without metrics: exit code 1
    records = read_metrics(run_dir)
    click.echo(summary_table(records))
    closing = before_after(records)
    if closing:
        click.echo(closing)
    folder = Path(out) if out else Path(run_dir) / "plots"
    click.echo(f"wrote {len(paths)} plots to {folder}: " + ", ".join(p.name for p in paths))


@click.command("plan", cls=SpadeCommand)
@click.option("--preset", required=True, help="A preset name (gpu-8x, multinode, ...) or a .toml.")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a setting, as for train (e.g. --set grpo.micro_batch=2).",
)
@click.option(
    "--model",
    help="The model to size: a directory with config.json, a config.json, or a bundled "
    "shape (qwen3-4b, qwen3-8b, qwen3-14b, qwen3-32b, llama-3.1-8b, ...).  "
    "[default: model.spec]",
)
@click.option("--gpus", help="GPUs per node as NAME[:COUNT].  [default: H100:8]")
@click.option(
    "--nodes",
    type=int,
    help="Number of nodes.  [default: 2 for multinode and multinode-pool, else 1]",
)
@click.option(
    "--sharding",
    type=SuggestChoice(["ddp", "fsdp"], "sharding"),
    help="Plan replicated (ddp) or sharded (fsdp) weights.  [default: grpo.sharding]",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan_command(
    preset: str,
    overrides: tuple[str, ...],
    model: str | None,
    gpus: str | None,
    nodes: int | None,
    sharding: str | None,
    as_json: bool,
) -> None:
    """Will a preset fit on its GPUs? Memory per GPU, before anything starts.

    Reads the model's config.json (no weights) and prints, per GPU: weights, gradients,
    optimizer state, the reference copy, activations, logits, vLLM's reservation and
    overhead, the peak, and whether it fits; then the largest micro-batch and sequence
    that fit. Exits 1 with what to change when it does not fit.

    \b
    Examples:
      spade-envs plan --preset gpu-8x --model qwen3-4b
      spade-envs plan --preset multinode --model qwen3-32b --nodes 4 --gpus H200:8
      spade-envs plan --preset gpu-8x --model /models/Qwen3-8B --set grpo.micro_batch=1
    """
    import json

    from ..trainer.sizing import plan_preset

    try:
        plan = plan_preset(
            preset, overrides, gpus=gpus, nodes=nodes, model=model, sharding=sharding
        )
    except SpadeError as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(json.dumps(plan.to_dict(), indent=1) if as_json else plan.report())
    if not plan.fits:
        raise SystemExit(1)


TRAINER_COMMANDS = (train_command, report_command, plan_command)


def main() -> None:
    """``python -m spade_envs.trainer``: the train command on its own."""
    train_command(prog_name=f"{Path(sys.executable).name} -m spade_envs.trainer")
