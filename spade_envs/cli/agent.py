"""``spade-envs rollout`` and ``spade-envs regret``: the Reasoning Agent from the command line."""

from __future__ import annotations

import collections
import json
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import click

from .errors import SpadeCommand
from .options import SuggestChoice

__all__ = ["AGENT_COMMANDS"]


def _play_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options both commands share (how plays are run)."""
    options = [
        click.argument("env_ids", nargs=-1, required=True),
        click.option(
            "--model",
            "model_spec",
            default="smollm2",
            show_default=True,
            help="smollm2, a local Hugging Face model directory, openai:<base url>[#model] "
            "or vllm:<path>.",
        ),
        click.option("--plays", type=click.IntRange(1, 100_000), default=8, show_default=True),
        click.option("--out", type=click.Path(dir_okay=False), help="Save trajectories (JSONL)."),
        click.option(
            "--max-tokens", type=click.IntRange(1, 32_768), default=256, show_default=True
        ),
        click.option(
            "--temperature", type=click.FloatRange(0.0, 2.0), default=0.7, show_default=True
        ),
        click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed."),
        click.option(
            "--env-seed", type=int, default=0, show_default=True, help="Reset seed of play 0."
        ),
        click.option("--max-turns", type=click.IntRange(1, 200), help="Cap on turns per play."),
        click.option(
            "--concurrency",
            type=click.IntRange(1, 4096),
            default=32,
            show_default=True,
            help="Plays live at once (the model's batch; one sandbox worker each).",
        ),
        click.option(
            "--isolation",
            type=SuggestChoice(["sandbox", "none"], "isolation"),
            default="sandbox",
            show_default=True,
            help="'none' runs environment code in this process, unsandboxed: only the "
            "packaged seeds, unless --trust-code.",
        ),
        click.option(
            "--trust-code",
            is_flag=True,
            help="DANGEROUS: with --isolation none, also run code that is not a packaged seed "
            "(designer-written, imported) in this process, as you, with no sandbox. Only "
            "for code you wrote or reviewed.",
        ),
        click.option(
            "--opponent",
            type=SuggestChoice(["best", "random", "self"], "opponent"),
            default="best",
            show_default=True,
            help="Games: a fixed opponent, or the model in every seat.",
        ),
        click.option(
            "--hint-source",
            type=SuggestChoice(["env", "written"], "hint source"),
            default="env",
            show_default=True,
            help="env: the environment's hint(); written: the model-written hint in the registry.",
        ),
        click.option(
            "--step-timeout", type=click.FloatRange(0.01), default=10.0, show_default=True
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _batch_kwargs(kwargs: dict[str, Any]) -> dict[str, int]:
    """Let the model take every live play in one call: ``--concurrency`` is the batch.

    A local transformers model otherwise batches 8 at a time (32 plays became 4 calls in
    a row per turn); an OpenAI-compatible client sends that many requests at once; vLLM
    schedules its own batches.
    """
    spec = str(kwargs["model_spec"]).strip()
    if spec.startswith("vllm:"):
        return {}
    if spec.startswith("openai:"):
        return {"max_concurrency": kwargs["concurrency"]}
    return {"batch_size": kwargs["concurrency"]}


def _config(kwargs: dict[str, Any]) -> Any:
    from ..agent import RolloutConfig

    return RolloutConfig(
        isolation=kwargs["isolation"],
        trust_code=kwargs["trust_code"],
        step_timeout=kwargs["step_timeout"],
        max_concurrent=kwargs["concurrency"],
        max_turns=kwargs["max_turns"],
        temperature=kwargs["temperature"],
        max_tokens=kwargs["max_tokens"],
        seed=kwargs["seed"],
        env_seed=kwargs["env_seed"],
        hint_source=kwargs["hint_source"],
        opponent=kwargs["opponent"],
    )


class _Progress:
    """Progress on standard error, advanced by each finished episode: a bar on a terminal,
    and a line at every tenth of the work otherwise (a log file gets no bar redraws, and
    click's bar prints nothing there until the end)."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.done, self.shown = total, label, 0, 0
        self.started = time.monotonic()
        self.bar = (
            click.progressbar(length=total, label=label, file=sys.stderr)
            if sys.stderr.isatty()
            else None
        )

    def __enter__(self) -> Callable[[Any], None]:
        if self.bar is not None:
            self.bar.__enter__()
            return lambda _episode: self.bar.update(1)
        click.echo(f"{self.label}: 0/{self.total} episodes", err=True)
        return self._line

    def _line(self, _episode: Any) -> None:
        self.done += 1
        tenth = self.done * 10 // max(self.total, 1)
        if tenth > self.shown or self.done == self.total:
            self.shown = tenth
            elapsed = time.monotonic() - self.started
            click.echo(
                f"{self.label}: {self.done}/{self.total} episodes ({elapsed:.0f} s)", err=True
            )

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


def _check_trust(kwargs: dict[str, Any], targets: list[Any]) -> None:
    """Refuse unsandboxed non-seed code before a model is loaded; say loudly when trusted."""
    if kwargs["isolation"] != "none":
        if kwargs["trust_code"]:
            click.echo("note: --trust-code has no effect without --isolation none.", err=True)
        return
    from ..sandbox.env import require_trust

    for target in targets:
        require_trust(target.source, kwargs["trust_code"], target.env_id)
    if kwargs["trust_code"]:
        click.echo(
            "WARNING: --trust-code: environment code runs in this process with your rights "
            "and no sandbox.",
            err=True,
        )


def _fail_if_nothing_played(failures: Any, where: str) -> None:
    """Exit non-zero, saying why, when every play failed."""
    from ..agent import AllPlaysFailedError

    if failures.all_failed:
        raise click.ClickException(str(AllPlaysFailedError(failures, where)))


def _summary(episodes: list[Any]) -> str:
    """One row per environment and hint mode; returns and win rates of the plays that
    finished (``n/a`` when none did), every outcome counted, and the failures in all."""
    from ..agent import FailureCounts, play_failure

    groups: dict[tuple[str, bool], list[Any]] = collections.defaultdict(list)
    for episode in episodes:
        groups[(episode.env_id, episode.hint)].append(episode)
    head = f"{'env':<32} {'hint':>4} {'plays':>5} {'return':>7} {'win rate':>8}  outcomes"
    lines = [head, "-" * len(head)]
    for (env_id, hint), plays in groups.items():
        finished = [e for e in plays if play_failure(e) is None]
        mean = sum(e.episode_return for e in finished) / len(finished) if finished else None
        wins = sum(bool(e.won) for e in finished) / len(finished) if finished else None
        outcomes = collections.Counter(e.outcome for e in plays)
        listed = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        mean_text = "n/a" if mean is None else f"{mean:.3f}"
        wins_text = "n/a" if wins is None else f"{wins:.2f}"
        lines.append(
            f"{env_id:<32} {'yes' if hint else 'no':>4} {len(plays):>5} {mean_text:>7} "
            f"{wins_text:>8}  {listed}"
        )
    failures = FailureCounts.of(episodes)
    if failures.failed:
        lines.append(f"failed plays: {failures.summary()} of {failures.plays}")
        lines.append(f"first failure: {failures.first_error}")
    return "\n".join(lines)


@click.command("rollout", cls=SpadeCommand)
@_play_options
@click.option("--hint", is_flag=True, help="Every play sees the hint in its first observation.")
def rollout_command(**kwargs: Any) -> None:
    """Play registered environments with a model; print returns, save trajectories.

    ENV_IDS are gym IDs (spade/NumberGuess-v1) or names (NumberGuess: the newest
    version); seeds are registered on first use. All plays run at once, with one
    batched model call per turn. Failed plays are counted by outcome (env_error,
    timeout, sandbox_crashed, model_error); when every play failed the command exits
    with status 1 and the first failure's message.

    \b
    Examples:
      spade-envs rollout NumberGuess Nim --model smollm2 --plays 4 --out traj.jsonl
      spade-envs rollout spade/SupplierLookup-v1 --plays 8 --hint --max-tokens 128
    """
    from .. import llm
    from ..agent import resolve_envs, save_jsonl
    from ..agent.rollout import RolloutEngine, matched_specs
    from ..registry.shared import shared_registry

    config = _config(kwargs)
    registry = shared_registry()
    targets = resolve_envs(kwargs["env_ids"], registry)
    _check_trust(kwargs, targets)
    specs = matched_specs(targets, kwargs["plays"], hint=kwargs["hint"], env_seed=config.env_seed)
    click.echo(f"loading {kwargs['model_spec']} ...", err=True)
    with llm.load_model(kwargs["model_spec"], **_batch_kwargs(kwargs)) as model:
        engine = RolloutEngine(model, config, registry=registry)
        with _Progress(len(specs), "playing") as advance:
            episodes = engine.run(specs, targets, progress=advance)
    click.echo(_summary(episodes))
    stats = engine.stats
    click.echo(
        f"{stats.episodes} episodes, {stats.turns} turns, {stats.generated_tokens} tokens in "
        f"{stats.wall_seconds:.1f} s (model {stats.model_seconds:.1f} s, "
        f"environments {stats.env_seconds:.1f} s)"
    )
    if kwargs["out"]:
        count = save_jsonl(episodes, kwargs["out"])
        click.echo(f"saved {count} trajectories to {kwargs['out']}")
    _fail_if_nothing_played(stats.failures, "of this rollout")


@click.command("regret", cls=SpadeCommand)
@_play_options
@click.option(
    "--timeout-penalty",
    type=click.FloatRange(0.0),
    default=0.5,
    show_default=True,
    help="Subtracted from regret times the share of plays whose environment hung or crashed.",
)
@click.option("--checkpoint", help="Name to store the statistics under (default: the model's).")
@click.option(
    "--record/--no-record",
    default=True,
    show_default=True,
    help="Write the results to the registry's play statistics.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the rows as JSON lines (the unfloored difference is 'hint_gain', called "
    "'raw_regret' before; 'regret' is the floored reward).",
)
def regret_command(**kwargs: Any) -> None:
    """Estimate each environment's regret: K plays with the hint, K without, matched.

    Prints env, mean return with and without the hint, the hint gain (with minus
    without, not floored) ± its standard error, the regret (the gain floored at 0, less
    the penalty for failed plays: the designer's reward), win rate (unhinted), the blend
    reward and how many plays each side rests on; stores the returns and the hint gain
    in the registry's play statistics for the model (the checkpoint). Failed
    plays are counted by outcome and left out of the means; when every play failed the
    command exits with status 1 and the first failure's message.

    \b
    Examples:
      spade-envs regret NumberGuess Mastermind Nim --model smollm2 --plays 8
      spade-envs regret spade/MyEnv-v2 --model openai:http://127.0.0.1:8000 --out plays.jsonl
    """
    from .. import llm
    from ..agent import RegretConfig, estimate_regret, resolve_envs, save_jsonl
    from ..registry.shared import shared_registry

    config = RegretConfig(
        plays=kwargs["plays"],
        rollout=_config(kwargs),
        timeout_penalty=kwargs["timeout_penalty"],
        checkpoint=kwargs["checkpoint"],
        record=kwargs["record"],
    )
    registry = shared_registry()
    _check_trust(kwargs, resolve_envs(kwargs["env_ids"], registry))
    total = 2 * kwargs["plays"] * len(kwargs["env_ids"])
    click.echo(f"loading {kwargs['model_spec']} ...", err=True)
    with llm.load_model(kwargs["model_spec"], **_batch_kwargs(kwargs)) as model:
        with _Progress(total, "playing") as advance:
            report = estimate_regret(
                model, kwargs["env_ids"], config, registry=registry, progress=advance
            )
    if kwargs["as_json"]:
        for row in report.rows:
            data = row.to_dict()
            # NaN is not JSON: a missing standard error is written as null.
            data["stderr"] = None if math.isnan(row.stderr) else row.stderr
            click.echo(json.dumps(data))
    else:
        click.echo(report.table())
    failures = report.failures
    if failures.failed:
        click.echo(f"first failure: {failures.first_error}", err=True)
    if config.record:
        checkpoint = report.rows[0].checkpoint if report.rows else ""
        stored = sum(1 for r in report.rows if r.n_with_hint or r.n_without_hint)
        click.echo(
            f"play statistics stored for checkpoint {checkpoint!r} "
            f"({stored} of {len(report.rows)} environments had finished plays)",
            err=True,
        )
    if kwargs["out"]:
        count = save_jsonl(report.episodes, kwargs["out"])
        click.echo(f"saved {count} trajectories to {kwargs['out']}")
    _fail_if_nothing_played(failures, "of this regret estimate")


AGENT_COMMANDS = (rollout_command, regret_command)
