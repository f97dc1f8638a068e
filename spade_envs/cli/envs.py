"""The ``spade-envs`` command: a thin layer over the library.

Every command has help text with an example; errors from the library are shown
as one clear line and exit code 2 (usage) rather than a traceback.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import click

from .cli_agent import AGENT_COMMANDS
from .cli_corpus import CORPUS_COMMANDS
from .cli_designer import DESIGNER_COMMANDS
from .cli_launch import LAUNCH_COMMANDS
from .cli_suites import SUITE_COMMANDS
from .cli_trainer import TRAINER_COMMANDS
from .cli_web import WEB_COMMANDS
from .core.episodes import random_text
from .core.game_env import GameSeatEnv
from .core.metadata import KINDS, SKILLS, describe
from .core.terminal import terminal_safe
from .core.text_game import TextGame
from .error import SpadeError
from .make import resolve
from .seeds import seed_classes

__all__ = ["main"]


class _SpadeGroup(click.Group):
    """Turns a ``SpadeError`` into a clean usage error instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SpadeError as exc:
            raise click.UsageError(str(exc), ctx) from exc


@click.group(cls=_SpadeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="spade-envs")
def main() -> None:
    """spade-envs: synthesized text environments for language-model agents.

    \b
    Examples:
      spade-envs list-seeds --skill logic
      spade-envs play NumberGuess --seed 3 --auto solution
    """


@main.command("list-seeds")
@click.option("--skill", type=click.Choice(SKILLS), help="Only environments of this skill.")
@click.option("--kind", type=click.Choice(KINDS), help="Only text, tool or game environments.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of a table.")
def list_seeds(skill: str | None, kind: str | None, as_json: bool) -> None:
    """List the seed environments shipped with the package.

    \b
    Example:
      spade-envs list-seeds --kind tool
    """
    metas = [describe(cls) for cls in seed_classes().values()]
    metas = [
        m for m in metas if (skill is None or m.skill == skill) and (kind is None or m.kind == kind)
    ]
    if as_json:
        for meta in metas:
            click.echo(json.dumps(meta.to_dict()))
        return
    width = max([len(m.name) for m in metas] + [4])
    click.echo(f"{'name':<{width}}  kind  skill     turns  description")
    for m in metas:
        summary = textwrap.shorten(m.description, 70, placeholder="...")
        click.echo(f"{m.name:<{width}}  {m.kind:<4}  {m.skill:<8}  {m.max_turns:>5}  {summary}")
    click.echo(f"{len(metas)} environment(s)")


_TRUST_HELP = (
    "DANGER: run code that is not a packaged seed in THIS process, as you, with no "
    "sandbox (it can read your files, keys and network). Only for code you wrote or "
    "reviewed yourself."
)


def _is_file(name: str) -> bool:
    return name.endswith(".py") or "/" in name or "\\" in name


def _read_source(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"Cannot read {path}: {exc}") from exc


@main.command("info")
@click.argument("name")
@click.option("--source", is_flag=True, help="Also print the environment's source code.")
@click.option(
    "--trust-code",
    is_flag=True,
    help="For a .py file that is not a seed: load it in this process to show its knobs and "
    "tools too. " + _TRUST_HELP,
)
def info(name: str, source: bool, trust_code: bool) -> None:
    """Show what is known about one environment (NAME: a seed name or a .py path).

    A file is read without running it (name, kind, skill, description, max_turns from
    its source), unless it is a packaged seed's code or --trust-code is given.

    \b
    Example:
      spade-envs info Mastermind --source
    """
    from .seeds import is_seed_source

    text = _read_source(name) if _is_file(name) else None
    if text is not None and not (trust_code or is_seed_source(text)):
        from .validation.static import static_metadata

        meta = static_metadata(text, origin="imported")
        for key in ("name", "kind", "skill", "description", "max_turns"):
            click.echo(f"{key:>12}: {terminal_safe(str(getattr(meta, key)))}")
        click.echo(f"{'':>12}  (read without running it; --trust-code loads it for knobs/tools)")
        if source:
            click.echo("")
            click.echo(terminal_safe(text))
        return
    cls = resolve(name)
    meta = describe(cls)
    for key, value in meta.to_dict().items():
        click.echo(f"{key:>12}: {value}")
    if source:
        import inspect

        click.echo("")
        click.echo(text if text is not None else inspect.getsource(sys.modules[cls.__module__]))


@main.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report(s) as JSON.")
@click.option(
    "--budget",
    type=click.Choice(["fast", "default", "thorough"]),
    default="default",
    show_default=True,
    help="How hard to look.",
)
def validate(files: tuple[str, ...], as_json: bool, budget: str) -> None:
    """Validate environment files: static checks, then every dynamic check in the sandbox.

    Exit code 0 when every file is valid, 1 when any is rejected, 2 on usage errors.
    Several files are validated in parallel, one per core.

    \b
    Examples:
      spade-envs validate my_env.py
      spade-envs validate generated/*.py --budget fast --json
    """
    from .validation import validate_many

    sources = []
    for path in files:
        try:
            sources.append(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise click.UsageError(f"Cannot read {path}: {exc}") from exc
    reports = validate_many(sources, budget=budget, progress=len(files) > 1 and not as_json)
    for path, report in zip(files, reports):
        if as_json:
            click.echo(report.to_json())
        else:
            click.echo(f"{path}: {report.summary()}")
    sys.exit(0 if all(r.passed for r in reports) else 1)


for _command in (
    *CORPUS_COMMANDS, *DESIGNER_COMMANDS, *AGENT_COMMANDS, *WEB_COMMANDS, *SUITE_COMMANDS
):
    main.add_command(_command)
for _command in LAUNCH_COMMANDS:
    main.add_command(_command)
for _command in TRAINER_COMMANDS:
    main.add_command(_command)


@main.command("sandbox-info")
def sandbox_info() -> None:
    """Show which sandbox layers this machine provides, and start one worker to prove it.

    \b
    Example:
      spade-envs sandbox-info
    """
    from .sandbox import SandboxConfig, Worker, capabilities

    caps = capabilities()
    click.echo(f"bubblewrap: {'yes' if caps.bubblewrap else 'NO  (' + caps.bubblewrap_error + ')'}")
    click.echo(f"seccomp:    {'yes' if caps.seccomp else 'NO  (' + caps.seccomp_error + ')'}")
    click.echo(f"root:       {'yes (each worker drops to its own uid)' if caps.root else 'no'}")
    worker = Worker(SandboxConfig())
    try:
        layers = ", ".join(f"{k}={v}" for k, v in worker.layers.items())
        click.echo(f"worker:     started in {worker.start_seconds * 1000:.0f} ms with {layers}")
    finally:
        worker.kill()


def _parse_knobs(pairs: tuple[str, ...]) -> dict[str, Any]:
    knobs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(
                f"{pair!r} is not KEY=VALUE (e.g. --knob upper=50).", param_hint="--knob"
            )
        try:
            knobs[key] = json.loads(raw)
        except ValueError:
            knobs[key] = raw
    return knobs


@main.command("play")
@click.argument("name")
@click.option("--seed", type=int, default=None, help="Seed of the episode (default: random).")
@click.option(
    "--auto",
    type=click.Choice(["solution", "random", "empty"]),
    help="Play by itself: the reference solution, random text or empty actions.",
)
@click.option(
    "--hint", "show_hint", is_flag=True, help="Show the privileged hint before the first turn."
)
@click.option("--seat", type=int, default=0, show_default=True, help="Games: the seat you play.")
@click.option(
    "--opponent",
    type=click.Choice(["best", "random"]),
    default="best",
    show_default=True,
    help="Games: who plays the other seats.",
)
@click.option(
    "--knob", "knob_pairs", multiple=True, metavar="KEY=VALUE", help="Set a difficulty knob."
)
@click.option(
    "--isolation",
    type=click.Choice(["auto", "sandbox", "none"]),
    default="auto",
    show_default=True,
    help="auto: .py files and registry IDs run in the sandbox, shipped seeds in-process; "
    "sandbox forces the sandbox; none runs in this process, which for anything but a "
    "packaged seed's exact code also needs --trust-code.",
)
@click.option("--trust-code", is_flag=True, help="With --isolation none: " + _TRUST_HELP)
def play(
    name: str,
    seed: int | None,
    auto: str | None,
    show_hint: bool,
    seat: int,
    opponent: str,
    knob_pairs: tuple[str, ...],
    isolation: str,
    trust_code: bool,
) -> None:
    """Play an environment in the terminal (NAME: a seed name, a .py path or a registry ID).

    Type an action per line. Commands: :hint shows the hint, :solution shows the
    reference solution, :reset starts over, :quit ends. With --auto (or with actions
    piped on standard input) it plays without asking.

    \b
    Examples:
      spade-envs play NumberGuess                 # interactive
      spade-envs play Nim --seed 1 --auto solution
      printf '50\\n75\\n' | spade-envs play NumberGuess --seed 3
      spade-envs play ./my_env.py --auto solution   # sandboxed
      spade-envs play spade/MyEnv-v2 --seed 1       # from the registry, sandboxed
    """
    env, title = _open_for_play(
        name, _parse_knobs(knob_pairs), seat, opponent, isolation, trust_code
    )
    observation, _ = env.reset(seed=seed)
    interactive = auto is None and sys.stdin.isatty()
    seed_text = "a random seed" if seed is None else f"seed {seed}"
    click.secho(
        f"== {terminal_safe(title)} ({seed_text}), {env.max_turns} turns at most", bold=True
    )
    # Everything the environment wrote goes through terminal_safe: no escape sequences.
    click.echo(terminal_safe(observation))
    if show_hint:
        click.secho(f"[hint] {terminal_safe(env.hint())}", fg="yellow")
    actions = _auto_actions(env, auto, seed) if auto else None
    total, turn = 0.0, 0
    while True:
        if actions is not None:
            action = actions[turn] if turn < len(actions) else ""
            click.secho(f"> {terminal_safe(action)}", fg="cyan")
        else:
            line = _read_line(interactive)
            if line is None or line.strip() == ":quit":
                click.echo("Stopped.")
                return
            command = line.strip()
            if command == ":hint":
                click.secho(f"[hint] {terminal_safe(env.hint())}", fg="yellow")
                continue
            if command == ":solution":
                click.secho(f"[solution] {terminal_safe(' | '.join(env.solution()))}", fg="yellow")
                continue
            if command == ":reset":
                observation, _ = env.reset(seed=seed)
                total, turn = 0.0, 0
                click.echo(terminal_safe(observation))
                continue
            if command in (":help", ":?"):
                click.echo("Commands: :hint :solution :reset :quit — anything else is your action.")
                continue
            action = line.rstrip("\n")
        observation, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        turn += 1
        click.echo(f"[turn {turn}] reward {float(reward):g}")
        click.echo(terminal_safe(observation))
        if terminated or truncated:
            verdict = "WON" if total >= env.reward_range[1] - 1e-9 else "not won"
            why = "terminated" if terminated else "out of turns"
            click.secho(f"== episode over ({why}): return {total:g}, {verdict}", bold=True)
            return


def _open_for_play(
    name: str,
    knobs: dict[str, Any],
    seat: int,
    opponent: str,
    isolation: str,
    trust_code: bool = False,
) -> tuple[Any, str]:
    """The env to play (games: one seat of it) and its display name.

    Raises:
        UntrustedCodeError: ``isolation="none"`` for a file or registry ID that is not a
            packaged seed's exact code, without ``trust_code``.
    """
    from .registry.ids import NAMESPACE

    is_id = name.startswith(f"{NAMESPACE}/") and not Path(name).exists()
    is_file = not is_id and _is_file(name)
    if is_id:
        from .registry.gym_ids import make_env

        mode = "none" if isolation == "none" else "sandbox"
        env = make_env(
            name, isolation=mode, seat=seat, opponent=opponent, trust_code=trust_code, **knobs
        )
        return _announce(env), name
    if isolation == "sandbox" or (isolation == "auto" and is_file):
        from .sandbox import open_file, open_seed

        opener = open_file if is_file else open_seed
        # Games come back as one seat (GameSeatEnv inside the worker).
        env = opener(name, knobs=knobs, seat=seat, opponent=opponent)
        return _announce(env), env.name
    if is_file:
        from .sandbox import open_env

        # Refused unless the file is a packaged seed's exact code or --trust-code is given.
        env = open_env(
            _read_source(name),
            filename=name,
            knobs=knobs,
            seat=seat,
            opponent=opponent,
            isolation="none",
            trust_code=trust_code,
        )
        game = getattr(env, "game", env)
        return env, type(game).__name__
    env = resolve(name)(**knobs)  # a packaged seed, by name: trusted
    if isinstance(env, TextGame):
        return GameSeatEnv(env, seat=seat, opponent=opponent), type(env).__name__
    return env, type(env).__name__


def _announce(env: Any) -> Any:
    """Say which sandbox layers hold ``env`` (nothing for an in-process env)."""
    layers = getattr(env, "isolation", None)
    if isinstance(layers, dict):
        click.secho(
            f"[sandboxed: {', '.join(k for k, v in layers.items() if v is True)}]", fg="green"
        )
    return env


def _auto_actions(env: Any, auto: str, seed: int | None) -> list[str]:
    if auto == "solution":
        return env.solution()
    if auto == "empty":
        return [""] * env.max_turns
    policy = random_text(seed or 0)
    return [policy("", t) for t in range(env.max_turns)]


def _read_line(interactive: bool) -> str | None:
    if interactive:
        try:
            return click.prompt(">", prompt_suffix=" ", default="", show_default=False)
        except (EOFError, click.Abort):
            return None
    line = sys.stdin.readline()
    return line if line else None
