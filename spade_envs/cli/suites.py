"""``spade-envs evaluate``: held-out evaluation of a model on suite environments."""

from __future__ import annotations

import json

import click

from .errors import SpadeCommand

__all__ = ["SUITE_COMMANDS"]


@click.command("evaluate", cls=SpadeCommand)
@click.option(
    "--model",
    "model_spec",
    default="smollm2",
    show_default=True,
    help="smollm2, a local Hugging Face model directory, openai:<base url>[#model] or vllm:<path>.",
)
@click.option(
    "--suite",
    "set_name",
    default="rg-hard",
    show_default=True,
    help="rg-hard (reasoning-gym's A.3 set, by SPADE's categories), rlve[:level], "
    "reasoning-gym[:level], textarena or seeds.",
)
@click.option("--episodes", type=click.IntRange(1, 10_000), default=8, show_default=True)
@click.option(
    "--max-turns",
    type=click.IntRange(0, 200),
    default=2,
    show_default=True,
    help="Turns per play (a suite task allows as many answers); 0: each environment to its "
    "own turn limit, 2 answers per suite task.",
)
@click.option("--temperature", type=click.FloatRange(0.0, 2.0), default=0.6, show_default=True)
@click.option("--max-tokens", type=click.IntRange(1, 32_768), default=512, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed.")
@click.option("--env-seed", type=int, default=0, show_default=True, help="Reset seed of play 0.")
@click.option(
    "--concurrency",
    type=click.IntRange(1, 4096),
    default=32,
    show_default=True,
    help="Plays live at once (the model's batch).",
)
@click.option("--tasks", help="Only these tasks (comma-separated suite task names).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the JSON here.")
def evaluate_command(
    model_spec: str,
    set_name: str,
    episodes: int,
    max_turns: int,
    temperature: float,
    max_tokens: int,
    seed: int,
    env_seed: int,
    concurrency: int,
    tasks: str | None,
    as_json: bool,
    out: str | None,
) -> None:
    """Evaluate a model on a held-out set: win rate ± standard error per category.

    Every environment is played EPISODES times, unhinted, in the sandbox; suite tasks
    allow MAX_TURNS answers ("Incorrect, try again" between them). Failed plays are
    counted by kind, never scored as losses; the environments' share of the wall time
    is printed.

    \b
    Examples:
      spade-envs import --suite reasoning-gym --levels hard
      spade-envs evaluate --model smollm2 --suite rg-hard
      spade-envs evaluate --suite rlve:3 --episodes 4 --json
      spade-envs evaluate --suite seeds --max-turns 8
    """
    from .. import llm
    from ..registry.shared import shared_registry
    from ..suites.evaluation import EVAL_SETS, eval_set, evaluate
    from .registry import require_registry

    if set_name.partition(":")[0] not in EVAL_SETS:
        eval_set(set_name, None)  # raises (close matches named) before a registry is read
    require_registry()  # it reads the suite's versions: a missing file is a typo
    registry = shared_registry()
    chosen = eval_set(set_name, registry)
    if tasks:
        chosen = chosen.only([t.strip() for t in tasks.split(",") if t.strip()])
    total = len(chosen.tasks) * episodes
    click.echo(
        f"{set_name}: {len(chosen.tasks)} environments x {episodes} episodes; loading "
        f"{model_spec} ...",
        err=True,
    )
    from .agent import _batch_kwargs, _Progress

    kwargs = _batch_kwargs({"model_spec": model_spec, "concurrency": concurrency})
    with llm.load_model(model_spec, **kwargs) as model, _Progress(total, "evaluating") as advance:
        result = evaluate(
            model,
            chosen,
            registry=registry,
            episodes=episodes,
            max_turns=max_turns or None,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            env_seed=env_seed,
            rollout={"max_concurrent": concurrency},
            progress=advance,
        )
    data = result.to_dict()
    if out:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
    click.echo(json.dumps(data, indent=1) if as_json else result.table())


SUITE_COMMANDS = (evaluate_command,)
