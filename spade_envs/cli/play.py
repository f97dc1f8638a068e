"""``spade-envs play``: play a seed, an environment file or a registered version in the
terminal.

Registered versions (``spade/<Name>-v<N>``, or a bare name that is not a seed: its newest
version) and files run in the sandbox; only the packaged seeds run in this process by
default.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ..core.episodes import random_text
from ..core.game_env import GameSeatEnv
from ..core.terminal import terminal_safe
from ..core.text_game import TextGame
from ..core.wins import is_won
from ..make import resolve
from .envs import TRUST_HELP, is_file, read_source
from .errors import SpadeCommand
from .options import SuggestChoice

__all__ = ["PLAY_COMMANDS"]


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


@click.command("play", cls=SpadeCommand)
@click.argument("name")
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of the episode (default: a random one, printed so --seed replays it).",
)
@click.option(
    "--auto",
    type=SuggestChoice(["solution", "random", "empty"], "policy"),
    help="Play by itself: the reference solution, random text or empty actions.",
)
@click.option(
    "--hint", "show_hint", is_flag=True, help="Show the privileged hint before the first turn."
)
@click.option("--seat", type=int, default=0, show_default=True, help="Games: the seat you play.")
@click.option(
    "--opponent",
    type=SuggestChoice(["best", "random"], "opponent"),
    default="best",
    show_default=True,
    help="Games: who plays the other seats.",
)
@click.option(
    "--knob", "knob_pairs", multiple=True, metavar="KEY=VALUE", help="Set a difficulty knob."
)
@click.option(
    "--isolation",
    type=SuggestChoice(["auto", "sandbox", "none"], "isolation"),
    default="auto",
    show_default=True,
    help="auto: .py files and registry IDs run in the sandbox, shipped seeds in-process; "
    "sandbox forces the sandbox; none runs in this process, which for anything but a "
    "packaged seed's exact code also needs --trust-code.",
)
@click.option("--trust-code", is_flag=True, help="With --isolation none: " + TRUST_HELP)
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
    # No --seed: draw one here, not inside reset, so it can be printed and the same
    # episode replayed with --seed.
    drawn = seed is None
    if seed is None:
        seed = _random_seed()
    observation, _ = env.reset(seed=seed)
    interactive = auto is None and sys.stdin.isatty()
    seed_text = (
        f"seed {seed}, drawn at random: --seed {seed} replays it" if drawn else f"seed {seed}"
    )
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
                if drawn:  # a new random episode, as before, but with its seed said
                    seed = _random_seed()
                    click.echo(f"[seed {seed}: --seed {seed} replays it]")
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
            won = is_won(
                str(getattr(env, "win_rule", "return")),
                total=total,
                top=float(env.reward_range[1]),
                last_reward=float(reward),
                terminated=bool(terminated),
            )
            verdict = "WON" if won else "not won"
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
    from ..registry.ids import NAMESPACE

    a_file = not name.startswith(f"{NAMESPACE}/") and is_file(name)
    if name.startswith(f"{NAMESPACE}/") and Path(name).is_file():
        a_file = True  # ./spade/X.py-like paths that happen to exist
    registered = None if a_file else _registered_id(name)
    if registered is not None:
        from ..runtime import open_id
        from .registry import require_registry

        require_registry()  # a typo'd SPADE_REGISTRY_URL: say so, not "no such version"

        # A registry version is never run in this process unless --isolation none
        # --trust-code (or it is a packaged seed's exact code).
        mode = "none" if isolation == "none" else "sandbox"
        env = open_id(
            registered,
            isolation=mode,
            seat=seat,
            opponent=opponent,
            trust_code=trust_code,
            **knobs,
        )
        return _announce(env), registered
    if isolation == "sandbox" or (isolation == "auto" and a_file):
        from ..runtime import open_source
        from ..seeds import seed_class, seed_source

        if a_file:
            source, filename = read_source(name), name
        else:
            source = seed_source(name)
            filename = f"{seed_class(name).__module__.rsplit('.', 1)[-1]}.py"
        # Games come back as one seat (GameSeatEnv inside the worker).
        env = open_source(source, env_id=filename, knobs=knobs, seat=seat, opponent=opponent)
        return _announce(env), env.name
    if a_file:
        from ..runtime import open_source

        # Refused unless the file is a packaged seed's exact code or --trust-code is given.
        env = open_source(
            read_source(name),
            env_id=name,
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


def _registered_id(name: str) -> str | None:
    """The registry ID to play for NAME: NAME itself when it is an ID, the newest
    version of a registered name that is not a seed, else None (a seed or a file).

    Raises:
        UnknownEnvironmentError: NAME is neither a seed nor registered (close matches
            among the seeds and the registered names are suggested).
    """
    from ..registry.ids import NAMESPACE
    from ..seeds import seed_classes

    if name.startswith(f"{NAMESPACE}/"):
        return name
    seeds = seed_classes()
    if name in seeds:
        return None
    from ..error import SpadeError, UnknownEnvironmentError, close_matches
    from ..registry.shared import shared_registry
    from .registry import require_registry

    try:
        require_registry()
    except SpadeError:
        # No registry to look in: a name close to a seed's is that seed mistyped (the
        # likelier slip); otherwise the missing registry is what to fix.
        if close_matches(name, seeds):
            raise UnknownEnvironmentError(name, seeds, what="environment") from None
        raise
    registry = shared_registry()
    versions = registry.versions(name)
    if versions:
        return versions[-1]
    raise UnknownEnvironmentError(name, [*seeds, *registry.names()], what="environment")


def _announce(env: Any) -> Any:
    """Say which sandbox layers hold ``env`` (nothing for an in-process env)."""
    layers = getattr(env, "isolation", None)
    if isinstance(layers, dict):
        click.secho(
            f"[sandboxed: {', '.join(k for k, v in layers.items() if v is True)}]", fg="green"
        )
    return env


def _random_seed() -> int:
    """A fresh episode seed, short enough to type back in with ``--seed``."""
    import secrets

    return secrets.randbelow(1_000_000)


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


PLAY_COMMANDS = (play,)
