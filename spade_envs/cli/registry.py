"""The corpus commands of ``spade-envs``: browse, search, register, retire, export, import,
revalidate.

They work on the registry at ``SPADE_REGISTRY_URL`` (else a SQLite file in the
user's data directory); ``cli.py`` adds them to the main command group, which turns
library errors into one clear line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from .core.metadata import KINDS

__all__ = ["CORPUS_COMMANDS"]

_STATUSES = ("candidate", "validated", "rejected", "retired", "unvalidated")
_BUDGETS = ("fast", "default", "thorough")
_ORIGINS = ("seed", "designer", "imported")


def _registry() -> Any:
    from .registry import Registry

    return Registry()


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class _SortChoice(click.Choice):
    """``--sort`` of ``list``: ``regret``, the old name of ``hint_gain``, still works (with
    a message on stderr naming the new one) so scripts written before the rename run."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "regret":
            click.echo(
                "spade-envs list: --sort regret is deprecated and will be removed: the "
                "registry ranks by the hint gain (mean return with the hint minus without "
                "it, not floored); use --sort hint_gain.",
                err=True,
            )
            return "hint_gain"
        return super().convert(value, param, ctx)


@click.command("list")
@click.option("--skill", help="Only this skill.")
@click.option("--kind", type=click.Choice(KINDS), help="Only text, tool or game environments.")
@click.option("--status", type=click.Choice(_STATUSES))
@click.option("--origin", type=click.Choice(_ORIGINS))
@click.option("--suite", help="Only versions imported from this suite (reasoning-gym, rlve).")
@click.option(
    "--sort",
    type=_SortChoice(["created", "hint_gain", "name"]),
    default="created",
    show_default=True,
    help="created: newest first; hint_gain: highest hint gain (mean return with the hint "
    "minus without it) of any checkpoint first.",
)
@click.option("--limit", type=click.IntRange(1, 1_000_000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line.")
def list_registered(
    skill: str | None,
    kind: str | None,
    status: str | None,
    origin: str | None,
    suite: str | None,
    sort: str,
    limit: int,
    as_json: bool,
) -> None:
    """List registered environment versions.

    \b
    Examples:
      spade-envs list --skill logic --status validated --sort hint_gain
      spade-envs list --suite rlve --status validated
    """
    if suite is not None:
        from .suites.catalog import known_suite

        known_suite(suite)
    registry = _registry()
    records = registry.list(
        skill=skill, kind=kind, status=status, origin=origin, sort=sort, limit=limit,
        suite=suite,
    )
    for r in records:
        if as_json:
            click.echo(json.dumps(r.to_dict(source=False), ensure_ascii=False))
        else:
            click.echo(
                f"{r.id:<36} {r.kind:<4} {r.skill:<9} {r.status:<9} {r.origin:<8} "
                f"{_short(r.description, 50)}"
            )
    if not as_json:
        click.echo(f"{len(records)} environment version(s)")


@click.command("show")
@click.argument("env_id")
@click.option("--code", is_flag=True, help="Also print the source.")
def show(env_id: str, code: bool) -> None:
    """Show one registered version: metadata, play statistics, validation history.

    \b
    Example:
      spade-envs show spade/NumberGuess-v1 --code
    """
    registry = _registry()
    record = registry.get(env_id)
    for key in (
        "id",
        "kind",
        "skill",
        "status",
        "origin",
        "max_turns",
        "sha256",
        "parents",
        "model",
        "created_at",
        "description",
        "hint",
    ):
        value = getattr(record, key)
        if value not in ("", (), None):
            click.echo(f"{key:>11}: {value}")
    suite = record.extra.get("suite") if record.suite else None
    if isinstance(suite, dict):
        click.echo(
            f"{'suite':>11}: {suite.get('id')} {suite.get('version')} task "
            f"{suite.get('task')} level {suite.get('level')} ({suite.get('licence')}, "
            f"{suite.get('homepage')})"
        )
        for key in ("unproven", "rejected"):
            if suite.get(key):
                click.echo(f"{key:>11}: {suite[key]}")
    click.echo(f"{'gym.make':>11}: gym.make({record.id!r})")
    for stats in registry.play_stats(env_id):
        click.echo(
            f"{'played':>11}: {stats.checkpoint}: hint gain {stats.hint_gain:+.2f}, win rate "
            f"{stats.win_rate:.2f} ({stats.plays_without_hint} plays without hint, "
            f"{stats.plays_with_hint} with)"
        )
    for report in registry.validations(env_id):
        verdict = "passed" if report.passed else "FAILED"
        click.echo(
            f"{'validated':>11}: {verdict} (budget {report.budget}, validator "
            f"{report.validator_version}, {report.duration_s:.1f} s)"
        )
    if code:
        click.echo("")
        click.echo(record.source)


@click.command("search")
@click.argument("text")
@click.option("-k", "k", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option(
    "--embedder",
    type=click.Choice(["auto", "minilm", "hashing"]),
    default="auto",
    show_default=True,
    help="auto: MiniLM when installed ([memory] extra), else the dependency-free hashing one.",
)
@click.option("--index", type=click.Choice(["auto", "exact", "ivf"]), default="auto")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line.")
def search(text: str, k: int, embedder: str, index: str, as_json: bool) -> None:
    """Semantic search: the K versions whose description and code are closest to TEXT.

    Versions not embedded yet are embedded first (with a progress bar).

    \b
    Example:
      spade-envs search "find a path through a maze" -k 5
    """
    from .memory import Memory, MemoryConfig

    memory = Memory(_registry(), MemoryConfig(embedder=embedder, index=index))
    missing = memory.missing()
    if missing > 0:
        with click.progressbar(
            length=missing, label=f"embedding with {memory.embedder.name}", file=sys.stderr
        ) as bar:
            seen = [0]

            def advance(done: int, _total: int) -> None:
                bar.update(done - seen[0])
                seen[0] = done

            memory.sync(progress=advance)
    hits = memory.search(text, k=k)
    for hit in hits:
        r = hit.record
        if as_json:
            click.echo(json.dumps({"score": round(hit.score, 4), **r.to_dict(source=False)}))
        else:
            click.echo(f"{hit.score:5.3f}  {r.id:<36} {r.skill:<9} {_short(r.description, 60)}")
    if not hits and not as_json:
        click.echo("The registry is empty: register or import environments first.")


@click.command("register")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--budget",
    type=click.Choice(["fast", "default", "thorough"]),
    default="default",
    show_default=True,
    help="Validation budget.",
)
@click.option(
    "--origin", type=click.Choice(["designer", "imported"]), default="imported", show_default=True
)
def register(file: str, budget: str, origin: str) -> None:
    """Validate FILE in the sandbox and, if valid, register it as the next version.

    Identical code returns the existing ID. The validation report is stored with
    the version. Exit code 1 when the file is rejected.

    \b
    Example:
      spade-envs register my_env.py
    """
    from .validation import Validator
    from .validation.static import static_metadata

    try:
        source = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"Cannot read {file}: {exc}") from exc
    try:
        early = static_metadata(source, origin=origin)
    except Exception:  # no class to name: the validator reports why
        early = None
    if early is not None:
        from .registry.trust import check_seed_name

        check_seed_name(early.name, source)  # before spending a validation on it
    with Validator(budget, pool_size=2) as validator:
        report = validator.validate(source, filename=file)
    if not report.passed:
        click.echo(report.summary())
        click.echo("Not registered: fix the failures above.")
        sys.exit(1)
    meta = static_metadata(source, origin=origin)
    record = _registry().register(source, meta, status="validated", report=report)
    click.echo(f"registered {record.id} (validated, budget {budget})")


@click.command("retire")
@click.argument("env_id")
def retire(env_id: str) -> None:
    """Retire a version: it stays readable but is no longer offered.

    \b
    Example:
      spade-envs retire spade/NumberGuess-v2
    """
    click.echo(f"retired {_registry().retire(env_id).id}")


@click.command("export")
@click.argument("out", type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "parquet", "package"]),
    default="jsonl",
    show_default=True,
    help="package: a directory that pip installs and registers its environments with gymnasium.",
)
@click.option("--status", type=click.Choice(_STATUSES), help="Only versions with this status.")
def export(out: str, fmt: str, status: str | None) -> None:
    """Export registered versions (code and metadata) to OUT.

    \b
    Examples:
      spade-envs export corpus.jsonl
      spade-envs export corpus.parquet --format parquet
      spade-envs export my_corpus --format package --status validated
    """
    from .registry.formats import export_corpus

    count = export_corpus(_registry(), out, fmt, status=status)
    click.echo(f"exported {count} environment version(s) to {out}")


@click.command("import")
@click.argument("path", type=click.Path(), required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "parquet", "package", "spade-pool"]),
    help="Default: guessed from PATH. spade-pool: a directory of game_*.py files written "
    "by the SPADE code.",
)
@click.option(
    "--suite",
    help="Import an external suite instead of a file: reasoning-gym or rlve "
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
    type=click.Choice(_BUDGETS),
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
    sandbox in parallel: passed ones are stored 'validated', failed ones 'rejected'
    (with the report; `spade-envs show ID` says why). Identical code is skipped. A
    malformed file imports nothing; versions that cannot be stored (no environment
    class, a seed's name on other code, in a spade-pool also links, FIFOs and devices)
    are listed and skipped.

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
    from .registry.formats import import_corpus

    if path is None:
        raise click.UsageError("Pass the PATH of a corpus to import, or --suite NAME.")
    if not Path(path).exists():
        raise click.UsageError(f"{path} does not exist.")
    result = import_corpus(
        _registry(), path, fmt, validate=not no_validate, budget=budget or "default",
        progress=True,
    )
    for problem in result.problems:
        click.echo(f"skipped: {problem}", err=True)
    click.echo(result.summary())
    if no_validate and result.imported:
        click.echo("not validated: run `spade-envs revalidate --status unvalidated` to validate.")


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
    from .suites import parse_levels, task_names
    from .suites.importer import import_suite

    if path is not None:
        raise click.UsageError("Pass either a PATH or --suite, not both.")
    if no_validate:
        raise click.UsageError("--suite always validates: suite environments are gated too.")
    if list_tasks:
        for name in task_names(suite):
            click.echo(name)
        return
    chosen = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    result = import_suite(
        _registry(), suite, tasks=chosen, levels=parse_levels(levels), budget=budget
    )
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=1))
    else:
        click.echo(result.summary())
    if result.interrupted:
        click.echo("interrupted: what finished is registered; run the same command to go on.")
        sys.exit(130)


@click.command("revalidate")
@click.argument("env_ids", nargs=-1)
@click.option(
    "--status",
    type=click.Choice(_STATUSES),
    help="Also every version with this status (e.g. unvalidated).",
)
@click.option("--budget", type=click.Choice(_BUDGETS), default="default", show_default=True)
def revalidate(env_ids: tuple[str, ...], status: str | None, budget: str) -> None:
    """Validate stored versions again; store each report and set its status from it.

    Passed versions become 'validated', failed ones 'rejected' (retired ones keep
    their status). Exit code 1 when any was rejected.

    \b
    Examples:
      spade-envs revalidate --status unvalidated
      spade-envs revalidate spade/OrbitGuess-v1 --budget thorough
    """
    from .registry import validate_stored

    registry = _registry()
    ids = list(env_ids)
    if status is not None:
        ids += [r.id for r in registry.iter_records(status=status) if r.id not in ids]
    if not ids:
        raise click.UsageError("Name versions to validate, or pass --status (e.g. unvalidated).")
    verdicts = validate_stored(registry, ids, budget=budget, progress=len(ids) > 1)
    for env_id, passed in verdicts:
        click.echo(f"{env_id}: {'validated' if passed else 'rejected'}")
    sys.exit(0 if all(passed for _, passed in verdicts) else 1)


@click.command("stats")
def stats() -> None:
    """Counts of registered versions by kind, skill, origin and status.

    \b
    Example:
      spade-envs stats
    """
    registry = _registry()
    click.echo(f"{registry.count()} environment version(s)")
    for field, counts in registry.counts().items():
        click.echo(f"{field:>7}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


CORPUS_COMMANDS = (
    list_registered,
    show,
    search,
    register,
    retire,
    export,
    import_,
    revalidate,
    stats,
)
