"""``spade-envs export`` and ``spade-envs import``: registered versions to and from files
(JSONL, Parquet, an installable package, a SPADE pool) and external suites."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import registry as registry_commands
from .errors import SpadeCommand
from .options import ENV_ID, ORIGINS, STATUSES, SuggestChoice
from .registry import BUDGETS

#: Kinds of environment (``spade_envs.core.metadata.KINDS``).
KINDS = ("text", "tool", "game")
#: How many versions an export lists by name that it did not write.
_LISTED = 20

__all__ = ["CORPUS_COMMANDS"]

#: What ``import`` reads (``spade_envs.registry.formats.IMPORT_FORMATS``, without SQLAlchemy).
IMPORT_FORMATS = ("jsonl", "parquet", "package", "spade-pool")
#: What ``export`` writes (``spade_envs.registry.formats.EXPORT_FORMATS``).
EXPORT_FORMATS = ("jsonl", "parquet", "package", "spade-pool", "verifiers")


@click.command("export", cls=SpadeCommand)
@click.argument("out", type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=SuggestChoice(EXPORT_FORMATS, "format"),
    default="jsonl",
    show_default=True,
    help="package: a directory that pip installs and registers its environments with "
    "gymnasium. verifiers: such a package that is also a verifiers (0.4) environment "
    "(vf-eval spade-verifiers-<name>). spade-pool: a SPADE run folder (spade_games/ with "
    "env_memory.json and hints "
    "in spade_games_cache/) that the SPADE code trains on.",
)
@click.option(
    "--status", type=SuggestChoice(STATUSES, "status"), help="Only versions with this status."
)
@click.option("--skill", help="Only versions of this skill family (math, logic, ...).")
@click.option("--kind", type=SuggestChoice(KINDS, "kind"), help="Only text, tool or game ones.")
@click.option("--origin", type=SuggestChoice(ORIGINS, "origin"), help="Only this origin.")
@click.option("--suite", help="Only versions imported from this suite (rlve, reasoning-gym, ...).")
@click.option(
    "--id",
    "ids",
    multiple=True,
    type=ENV_ID,
    help="Only this version (repeat for more); the other filters still apply.",
)
def export(
    out: str,
    fmt: str,
    status: str | None,
    skill: str | None,
    kind: str | None,
    origin: str | None,
    suite: str | None,
    ids: tuple[str, ...],
) -> None:
    """Export registered versions (code and metadata) to OUT.

    JSONL and Parquet exports carry each version's origin, lineage, status and play
    statistics; an import keeps them as provenance (`show` prints it) and decides status
    and origin itself.

    With --format spade-pool, versions the SPADE code's loader could not load
    (multi-agent games, classes not named *Env, spade-envs' own protocol classes) are
    listed and left out.

    \b
    Examples:
      spade-envs export corpus.jsonl
      spade-envs export corpus.parquet --format parquet
      spade-envs export my_corpus --format package --status validated
      spade-envs export ./spade_run --format spade-pool --status validated --skill math
      spade-envs export ./games --format verifiers --status validated
    """
    from ..registry.formats import export_corpus

    problems: list[str] = []
    count = export_corpus(
        registry_commands.open_registry(),
        out,
        fmt,
        status=status,
        skill=skill,
        kind=kind,
        origin=origin,
        suite=suite,
        ids=list(ids) or None,
        problems=problems,
    )
    for problem in problems[:_LISTED]:
        click.echo(f"skipped: {problem}", err=True)
    if len(problems) > _LISTED:
        click.echo(f"skipped: and {len(problems) - _LISTED} more version(s)", err=True)
    click.echo(f"exported {count} environment version(s) to {out}")
    if fmt == "verifiers":
        from ..registry.package_export import find_manifest

        manifest = find_manifest(Path(out))
        dist = manifest.parent.name.replace("_", "-") if manifest else "?"
        click.echo(
            f"install it beside verifiers 0.4 (pip install {out}), then: vf-eval {dist} "
            "-m MODEL --client.base-url URL/v1 --no-push"
        )
    if fmt == "spade-pool":
        click.echo(
            f"SPADE reads it with --spade-games-dir {Path(out) / 'spade_games'} "
            f"--spade-cache-dir {Path(out) / 'spade_games_cache'}"
        )


@click.command("import", cls=SpadeCommand)
@click.argument("path", type=click.Path(), required=False)
@click.option(
    "--format",
    "fmt",
    type=SuggestChoice(IMPORT_FORMATS, "format"),
    help="Default: guessed from PATH. spade-pool: a directory of game_*.py files written "
    "by the SPADE code (a run's spade_games/ with its spade_games_cache/ beside it, or the "
    "published static corpus with its manifest.jsonl).",
)
@click.option(
    "--suite",
    help="Import an external suite instead of a file: reasoning-gym, rlve or textarena "
    "(needs `pip install 'spade-envs[suites]'`).",
)
@click.option("--tasks", help="With --suite: comma-separated task names (default: all).")
@click.option(
    "--levels",
    help="With --suite: comma-separated levels (default 0); reasoning-gym also has 'hard' "
    "(the A.3 configurations).",
)
@click.option("--list-tasks", is_flag=True, help="With --suite: list its tasks and exit.")
@click.option(
    "--budget",
    type=SuggestChoice(BUDGETS, "budget"),
    default=None,
    help="Validation budget for the imported versions [default: default; fast for --suite].",
)
@click.option(
    "--no-validate",
    is_flag=True,
    help="Do not validate: store the versions 'unvalidated' (gym.make then warns; "
    "`spade-envs revalidate` validates them later). Not for --suite.",
)
@click.option("--json", "as_json", is_flag=True, help="With --suite: the result as JSON.")
def import_(
    path: str | None,
    fmt: str | None,
    suite: str | None,
    tasks: str | None,
    levels: str | None,
    list_tasks: bool,
    budget: str | None,
    no_validate: bool,
    as_json: bool,
) -> None:
    """Import environments: each new version is validated, then registered.

    Nothing in the file is trusted: status, kind, skill and max_turns are not read
    from it (they come from each source), and every new version is validated in the
    sandbox in parallel and registered as soon as its verdict is in, each in its own
    transaction: passed ones are stored 'validated', failed ones 'rejected' (with the
    report; `spade-envs show ID` says why), ones validation could not prove
    'unvalidated' with the reason. Identical code is skipped, so running an interrupted
    import again continues it. A malformed file imports nothing; versions that cannot
    be stored (no environment class, a seed's name on other code, in a spade-pool also
    links, FIFOs and devices) are listed and skipped. A SPADE pool's env_memory.json
    statistics are kept as SPADE's (`spade-envs show` prints them); a missing or
    malformed one, or manifest, is reported and the games are imported without it.

    With --suite, every task at every level becomes an environment (spade/RgChainSumL0-v1,
    spade/RlveCRTL3-v1): the suite's gold answer must win in the sandbox on every tested
    seed, trivial answers must lose. Tasks whose suite stores no answer to replay are
    stored 'unvalidated' with the reason. Re-running continues an interrupted import.

    \b
    Examples:
      spade-envs import corpus.jsonl
      spade-envs import ./spare_games --format spade-pool --budget fast
      spade-envs import big.parquet --no-validate
      spade-envs import --suite reasoning-gym --tasks chain_sum,maze --levels 0,3,hard
      spade-envs import --suite rlve --levels 0,3
    """
    if suite is not None:
        budget = budget or "fast"
        _import_suite(path, suite, tasks, levels, list_tasks, budget, no_validate, as_json)
        return
    if tasks or levels or list_tasks:
        raise click.UsageError("--tasks, --levels and --list-tasks go with --suite.")
    from ..runtime.imports import import_corpus

    if path is None:
        raise click.UsageError("Pass the PATH of a corpus to import, or --suite NAME.")
    if not Path(path).exists():
        raise click.BadParameter(f"{path} does not exist.", param_hint="PATH")
    fmt = fmt or _guess_format(path)
    result = import_corpus(
        registry_commands.open_registry(create=True),
        path,
        fmt,
        validate=not no_validate,
        budget=budget or "default",
        progress=True,
    )
    for problem in result.problems:
        click.echo(f"skipped: {problem}", err=True)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(result.summary())
    if no_validate and result.imported:
        click.echo("not validated: run `spade-envs revalidate --status unvalidated` to validate.")
    if result.interrupted:
        click.echo("interrupted: what finished is registered; run the same command to go on.")
        sys.exit(130)


def _guess_format(path: str) -> str:
    """The import format of ``path`` (its suffix or layout); a usage error naming the
    accepted formats when it cannot be told."""
    from ..error import SpadeError
    from ..registry.formats import detect_format

    try:
        return detect_format(path)
    except SpadeError as exc:
        accepted = ", ".join(IMPORT_FORMATS)
        if Path(path).is_dir():
            message = (
                f"Cannot tell the format of the directory {path}: it holds neither a package "
                f"export (manifest.json) nor a SPADE pool (game_*.py). Use one of {accepted} "
                "with --format."
            )
        else:
            suffix = Path(path).suffix.lstrip(".") or "(no suffix)"
            message = (
                f"Unknown format {suffix!r} (the suffix of {path}): use one of {accepted} "
                "(.jsonl and .parquet are recognized by name; otherwise pass --format)."
            )
        raise click.BadParameter(message, param_hint="PATH") from exc


def _import_suite(
    path: str | None,
    suite: str,
    tasks: str | None,
    levels: str | None,
    list_tasks: bool,
    budget: str,
    no_validate: bool,
    as_json: bool,
) -> None:
    from ..suites import parse_levels, task_names
    from ..suites.importer import import_suite

    if path is not None:
        raise click.UsageError("Pass either a PATH or --suite, not both.")
    if no_validate:
        raise click.UsageError("--suite always validates: suite environments are gated too.")
    if list_tasks:
        for name in task_names(suite):
            click.echo(name)
        return
    chosen = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    registry = registry_commands.open_registry(create=True)
    result = import_suite(registry, suite, tasks=chosen, levels=parse_levels(levels), budget=budget)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=1))
    else:
        click.echo(result.summary())
    if result.interrupted:
        click.echo("interrupted: what finished is registered; run the same command to go on.")
        sys.exit(130)


CORPUS_COMMANDS = (export, import_)
