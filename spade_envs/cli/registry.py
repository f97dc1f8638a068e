"""The registry commands of ``spade-envs``: init, list, show, search, register, retire,
revalidate, stats.

They work on the registry at ``SPADE_REGISTRY_URL`` (a URL or a SQLite file path, read by
:func:`spade_envs.registry.resolve_url`; else a SQLite file in the user's data directory).
Commands that only read (list, show, search, stats, export, play of an ID, evaluate,
serve, ...) refuse a SQLite file that does not exist, naming close matches, instead of
creating an empty registry; those that write (register, import, generate, init) create it.
The per-user default is created on first use either way.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ..core.dialect import dialect_label
from ..core.metadata import KINDS, SKILLS
from .errors import SpadeCommand
from .options import ENV_ID, ORIGINS, STATUSES, SuggestChoice, check_value

__all__ = ["BUDGETS", "REGISTRY_COMMANDS", "open_registry", "require_registry"]

BUDGETS = ("fast", "default", "thorough")


def require_registry(location: str | None = None) -> None:
    """Refuse to read a registry that does not exist.

    Args:
        location: A URL or SQLite file path (``serve --registry``); None: the one
            ``SPADE_REGISTRY_URL`` names, else the per-user default.

    Raises:
        RegistryLocationError: It is a SQLite file that does not exist (the per-user
            default is exempt: its first use creates it); the message names close
            matches among the ``*.db`` files beside it.
    """
    import shlex

    from ..registry.urls import require_existing, resolve_url, sqlite_path

    url = resolve_url(location)
    path = sqlite_path(url) or ""
    require_existing(
        url,
        create_with=f"`spade-envs init {shlex.quote(path)}` (or a command that writes: "
        "`spade-envs register FILE`, `spade-envs import PATH`)",
    )


def open_registry(*, create: bool = False) -> Any:
    """The registry named by ``SPADE_REGISTRY_URL`` (through ``resolve_url``), else the
    per-user default; a fresh one is given the packaged seeds (once: see
    :mod:`spade_envs.registry.seeding`).

    Args:
        create: The command writes: create a SQLite registry that does not exist yet.
            False (commands that only read) refuses one, see :func:`require_registry`.
    """
    from ..registry import Registry

    if not create:
        require_registry()
    return Registry(seeds=True)


@click.command("init", cls=SpadeCommand)
@click.argument("location", required=False)
def init(location: str | None) -> None:
    """Create a registry (with the packaged seeds), or say what an existing one holds.

    LOCATION: a SQLite file path or a URL (default: SPADE_REGISTRY_URL, else the per-user
    file). Commands that only read (list, show, export, ...) refuse a SQLite file that
    does not exist, so a typo is an error rather than an empty registry: create a new
    one with init (register and import create it too).

    \b
    Examples:
      spade-envs init                      # the registry SPADE_REGISTRY_URL names
      spade-envs init ~/corpora/logic.db   # then: export SPADE_REGISTRY_URL=~/corpora/logic.db
    """
    import shlex

    from ..registry import Registry
    from ..registry.urls import default_url, resolve_url, sqlite_path

    url = resolve_url(location)
    path = sqlite_path(url)
    existed = path is None or Path(path).exists()
    registry = Registry(url, seeds=True)
    try:
        total = registry.count()
    finally:
        registry.close()
    if existed:
        click.echo(f"The registry at {url} exists: {total} environment version(s).")
    else:
        click.echo(f"Created the registry at {url} with {total} packaged seed(s).")
    if path is not None and url != default_url():
        click.echo(
            "Commands use it when SPADE_REGISTRY_URL names it: export "
            f"SPADE_REGISTRY_URL={shlex.quote(path)}"
        )


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class _SortChoice(SuggestChoice):
    """``--sort`` of ``list``: ``regret``, the old name of ``hint_gain``, still works (with
    a message on stderr naming the new one) so scripts written before the rename run."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """``hint_gain`` for ``regret`` (with a note), else the checked choice."""
        if value == "regret":
            click.echo(
                "spade-envs list: --sort regret is deprecated and will be removed: the "
                "registry ranks by the hint gain (mean return with the hint minus without "
                "it, not floored); use --sort hint_gain.",
                err=True,
            )
            return "hint_gain"
        return super().convert(value, param, ctx)


def _empty_registry_line(registry: Any) -> str:
    return (
        f"The registry at {registry.url} is empty: register a file with `spade-envs register "
        "FILE`, import a corpus with `spade-envs import PATH` or a suite with `spade-envs "
        "import --suite rlve`; `spade-envs rollout NumberGuess` registers a seed on first use."
    )


@click.command("list", cls=SpadeCommand)
@click.option("--skill", help="Only this skill (one of the skills in the registry).")
@click.option(
    "--kind", type=SuggestChoice(KINDS, "kind"), help="Only text, tool or game environments."
)
@click.option(
    "--status",
    type=SuggestChoice(STATUSES, "status"),
    help="Only this status (retired versions are listed only with --status retired or --all).",
)
@click.option("--origin", type=SuggestChoice(ORIGINS, "origin"))
@click.option(
    "--suite", help="Only versions imported from this suite (reasoning-gym, rlve, textarena)."
)
@click.option("--all", "show_all", is_flag=True, help="Also list retired versions.")
@click.option(
    "--sort",
    type=_SortChoice(["created", "hint_gain", "name"], "sort order"),
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
    show_all: bool,
    sort: str,
    limit: int,
    as_json: bool,
) -> None:
    """List registered environment versions (retired ones only with --all).

    \b
    Examples:
      spade-envs list --skill logic --status validated --sort hint_gain
      spade-envs list --suite rlve --status validated
      spade-envs list --all --sort name
    """
    if suite is not None:
        from ..suites.catalog import known_suite

        known_suite(suite)
    registry = open_registry()
    if skill is not None:
        stored = registry.counts().get("skill", {})
        accepted = sorted(stored) or list(SKILLS)
        where = " in this registry" if stored else ""
        if skill not in stored and skill not in SKILLS:
            check_value(skill, accepted, noun="skill", option="'--skill'", where=where)
    filters = {"skill": skill, "kind": kind, "origin": origin, "suite": suite}
    hidden = 0
    if status is None and not show_all:  # the registry leaves retired versions out: count them
        hidden = len(registry.list(**filters, status="retired", limit=1_000_000))
    records = registry.list(
        **filters, status=status, sort=sort, limit=limit, include_retired=show_all
    )
    # A full page may be a cut: say how many matched in all, so "5" never reads as "all".
    matched = (
        registry.count(**filters, status=status, include_retired=show_all)
        if len(records) >= limit
        else len(records)
    )
    quarantined = 0
    for r in records:
        if as_json:
            click.echo(json.dumps(r.to_dict(source=False), ensure_ascii=False))
        else:
            # A quarantined version stays listed (people must see it), marked with "!".
            quarantined += r.status == "quarantined"
            status = "!quarantined" if r.status == "quarantined" else r.status
            click.echo(
                f"{r.id:<36} {r.kind:<4} {r.skill:<9} {status:<9} {r.origin:<8} "
                f"{_short(r.description, 50)}"
            )
    shown = f"{len(records)} of {matched}" if matched > len(records) else f"{len(records)}"
    more = f" (--limit {matched} lists them all)" if matched > len(records) else ""
    if as_json:
        if matched > len(records):
            click.echo(f"{shown} matching version(s) listed{more}", err=True)
        if hidden:
            click.echo(f"{hidden} retired version(s) not listed (--all lists them)", err=True)
        return
    if not records and registry.count() == 0:
        click.echo(_empty_registry_line(registry))
        return
    note = f" ({hidden} retired version(s) hidden: --all lists them)" if hidden else ""
    click.echo(f"{shown} environment version(s){more}{note}")
    if quarantined:
        click.echo(
            f"! {quarantined} quarantined: a replay audit diverged, so they are out of pools, "
            "evaluation sets and memory; `spade-envs show ID` gives the evidence, `spade-envs "
            "revalidate ID` clears it."
        )


def _show_quarantine(evidence: Any, env_id: str) -> None:
    """The lines of ``show`` that say why a version is quarantined (the texts came from
    the environment: each is put on one line and shortened)."""
    from ..registry.records import one_line

    click.echo(f"{'quarantine':>11}: a replay audit diverged; out of pools, evaluation and memory")
    if evidence is None:
        click.echo(f"{'evidence':>11}: none readable is stored")
    else:
        where = "the reset (step 0)" if evidence.step == 0 else f"step {evidence.step}"
        click.echo(f"{'evidence':>11}: seed {evidence.seed}, {where}, {evidence.field} differs")
        click.echo(f"{'play saw':>11}: {one_line(evidence.played, 200)}")
        click.echo(f"{'replay saw':>11}: {one_line(evidence.replayed, 200)}")
        if evidence.detail:
            click.echo(f"{'detail':>11}: {one_line(evidence.detail, 200)}")
        if evidence.at:
            click.echo(f"{'recorded':>11}: {one_line(evidence.at, 40)}")
    click.echo(f"{'clear it':>11}: spade-envs revalidate {env_id}")


def _show_verdict(record: Any, reports: list[Any]) -> None:
    """The lines of ``show`` that say why a version is rejected or unproven: the failed
    checks of its latest stored report, or the reason validation could not prove it."""
    from ..registry.records import one_line

    latest = reports[-1].report if reports else None
    if record.status == "rejected":
        checks = latest.get("checks", []) if isinstance(latest, dict) else []
        failed = [
            c
            for c in checks
            if isinstance(c, dict) and not c.get("passed") and not c.get("skipped")
        ]
        for check in failed[:3]:
            reason = one_line(f"{check.get('name', '?')}: {check.get('reason', '')}", 300)
            click.echo(f"{'rejected':>11}: {reason}")
        if len(failed) > 3:
            click.echo(f"{'':>11}  and {len(failed) - 3} more failed check(s)")
        if not failed:
            click.echo(f"{'rejected':>11}: no stored report says why (revalidate it to see)")
    unproven = record.extra.get("unproven") or (
        latest.get("unproven") if isinstance(latest, dict) else ""
    )
    if record.status == "unvalidated" and isinstance(unproven, str) and unproven:
        click.echo(f"{'unproven':>11}: {one_line(unproven, 300)}")
    elif record.status == "unvalidated" and not reports:
        click.echo(f"{'unvalidated':>11}: never validated (`spade-envs revalidate {record.id}`)")


def _show_spade_stats(spade: Any) -> None:
    """SPADE's own statistics of a version imported from a SPADE pool (kept as SPADE's)."""
    from ..registry.records import one_line

    memory = spade.get("memory") if isinstance(spade, dict) else None
    if isinstance(spade, dict) and isinstance(spade.get("skill"), str) and spade["skill"]:
        where = f" ({one_line(str(spade.get('file', '')), 80)})" if spade.get("file") else ""
        click.echo(f"{'spade skill':>11}: {one_line(spade['skill'], 80)}{where}")
    if isinstance(memory, dict):
        try:
            win_rate, regret = float(memory["actor_win_rate"]), float(memory.get("regret") or 0)
        except (KeyError, TypeError, ValueError):
            return
        click.echo(
            f"{'spade stats':>11}: actor win rate {win_rate:.2f}, regret {regret:+.2f} (SPADE's "
            f"env_memory.json, rollout {memory.get('rollout_id', '?')}; not this registry's plays)"
        )


def _show_provenance(provenance: Any) -> None:
    """Where an imported version came from, as the file it was imported from said (its
    registry's ID, origin, status and play statistics; shown, not checked)."""
    from ..registry.records import one_line

    if not isinstance(provenance, dict) or not provenance:
        return
    said = ", ".join(
        f"{key} {one_line(str(provenance[key]), 60)}"
        for key in ("origin", "status", "run_id")
        if provenance.get(key)
    )
    text = f"exported as {one_line(str(provenance.get('id') or '?'), 80)}" + (
        f" ({said})" if said else ""
    )
    stats = [s for s in provenance.get("play_stats") or [] if isinstance(s, dict)]
    if stats:
        latest = stats[0]
        try:
            numbers = (
                f": latest win rate {float(latest['win_rate']):.2f}, "
                f"hint gain {float(latest['hint_gain']):+.2f}"
            )
        except (KeyError, TypeError, ValueError, OverflowError):
            numbers = ""
        text += f"; {len(stats)} play statistics there{numbers}"
    earlier = provenance.get("earlier")
    if isinstance(earlier, dict) and earlier.get("id"):
        text += f"; before that {one_line(str(earlier['id']), 80)}"
        if earlier.get("origin"):
            text += f" ({one_line(str(earlier['origin']), 40)})"
    click.echo(f"{'provenance':>11}: {text} (what the imported file said; not checked)")


def _show_plays(stats: list[Any], env_id: str) -> None:
    """The lines of ``show`` with this registry's play statistics, one per checkpoint; a
    version nobody played says so (and how to play it), so a status alone is not read
    as evidence of how it plays."""
    if not stats:
        click.echo(
            f"{'played':>11}: no play statistics stored (`spade-envs regret {env_id}` plays "
            "it with and without the hint and stores them)"
        )
    for s in stats:
        click.echo(
            f"{'played':>11}: {s.checkpoint}: hint gain {s.hint_gain:+.2f}, win rate "
            f"{s.win_rate:.2f}, mean return {s.mean_return_with_hint:.2f} with the hint, "
            f"{s.mean_return_without_hint:.2f} without ({s.plays_without_hint} plays without "
            f"hint, {s.plays_with_hint} with)"
        )


def _report_facts(report: Any) -> str:
    when = f", {report.created_at:%Y-%m-%d %H:%M}" if report.created_at is not None else ""
    return (
        f"budget {report.budget}, validator {report.validator_version}, "
        f"{report.duration_s:.1f} s{when}"
    )


def _show_validation(record: Any, reports: list[Any], *, failures_shown: bool) -> None:
    """The lines of ``show`` with the latest stored validation report (its verdict, its
    checks counted, the failed and skipped ones with their reasons) and the earlier
    reports; a version without one says so and how to get one.

    Args:
        failures_shown: :func:`_show_verdict` already printed the failed checks.
    """
    from ..registry.records import one_line

    if not reports:
        if record.status == "unvalidated":
            return  # _show_verdict said it was never validated, or why it is unproven
        why = (
            "a packaged seed: spade-envs' own test suite validates every seed"
            if record.origin == "seed"
            else "it was stored without one"
        )
        click.echo(
            f"{'validation':>11}: no report stored ({why}); `spade-envs revalidate "
            f"{record.id}` validates it and stores the report"
        )
        return
    latest = reports[-1]
    verdict = "passed" if latest.passed else "FAILED"
    click.echo(f"{'validation':>11}: latest report {verdict} ({_report_facts(latest)})")
    data = latest.report if isinstance(latest.report, dict) else {}
    checks = [c for c in data.get("checks", []) if isinstance(c, dict)]
    if checks:
        failed = [c for c in checks if not c.get("passed") and not c.get("skipped")]
        skipped = [c for c in checks if c.get("skipped")]
        passed = len(checks) - len(failed) - len(skipped)
        click.echo(f"{'checks':>11}: {passed} passed, {len(failed)} failed, {len(skipped)} skipped")
        groups = (
            ("FAIL", "failed", [] if failures_shown else failed),
            ("skip", "skipped", skipped),
        )
        for mark, word, group in groups:
            for check in group[:3]:
                reason = one_line(str(check.get("reason") or ""), 200)
                name = one_line(str(check.get("name", "?")), 40)
                click.echo(f"{'':>11}  {mark} {name}{': ' + reason if reason else ''}")
            if len(group) > 3:
                click.echo(f"{'':>11}  and {len(group) - 3} more {word} check(s)")
    for earlier in reversed(reports[:-1]):
        verdict = "passed" if earlier.passed else "FAILED"
        click.echo(f"{'earlier':>11}: {verdict} ({_report_facts(earlier)})")


@click.command("show", cls=SpadeCommand)
@click.argument("env_id", type=ENV_ID)
@click.option("--code", is_flag=True, help="Also print the source.")
def show(env_id: str, code: bool) -> None:
    """Show one registered version: metadata, play statistics, validation history.

    \b
    Example:
      spade-envs show spade/NumberGuess-v1 --code
    """
    from ..registry.records import one_line

    registry = open_registry()
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
            # Imported text (a hint, a description) cannot move the cursor or fake a line.
            text = value if isinstance(value, int) else one_line(str(value), 2000)
            click.echo(f"{key:>11}: {text}")
        if key == "kind":
            click.echo(f"{'dialect':>11}: {dialect_label(record.source)}")
    if record.status == "quarantined":
        _show_quarantine(registry.quarantine_evidence(env_id), record.id)
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
    reports = registry.validations(env_id)
    verdict_shown = not isinstance(suite, dict)
    if verdict_shown:
        _show_verdict(record, reports)
    _show_spade_stats(record.extra.get("spade"))
    _show_provenance(record.extra.get("provenance"))
    click.echo(f"{'gym.make':>11}: gym.make({record.id!r})")
    _show_plays(registry.play_stats(env_id), record.id)
    _show_validation(record, reports, failures_shown=verdict_shown and record.status == "rejected")
    if code:
        click.echo("")
        click.echo(record.source)


@click.command("search", cls=SpadeCommand)
@click.argument("text")
@click.option("-k", "k", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option(
    "--embedder",
    type=SuggestChoice(["auto", "minilm", "hashing"], "embedder"),
    default="auto",
    show_default=True,
    help="auto: MiniLM when installed ([memory] extra), else the dependency-free hashing one.",
)
@click.option("--index", type=SuggestChoice(["auto", "exact", "ivf"], "index"), default="auto")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line.")
def search(text: str, k: int, embedder: str, index: str, as_json: bool) -> None:
    """Semantic search: the K versions whose description and code are closest to TEXT.

    Versions not embedded yet are embedded first (with a progress bar).

    \b
    Example:
      spade-envs search "find a path through a maze" -k 5
    """
    from ..memory import Memory, MemoryConfig

    memory = Memory(open_registry(), MemoryConfig(embedder=embedder, index=index))
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


@click.command("register", cls=SpadeCommand)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--budget",
    type=SuggestChoice(BUDGETS, "budget"),
    default="default",
    show_default=True,
    help="Validation budget.",
)
@click.option(
    "--origin",
    type=SuggestChoice(["designer", "imported"], "origin"),
    default="imported",
    show_default=True,
)
def register(file: str, budget: str, origin: str) -> None:
    """Validate FILE in the sandbox and, if valid, register it as the next version.

    Identical code is not validated nor stored again: the command says which ID already
    holds it. The validation report is stored with the version. Exit code 1 when the
    file is rejected.

    \b
    Example:
      spade-envs register my_env.py
    """
    from ..runtime.imports import source_metadata
    from ..validation import Validator

    try:
        source = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"Cannot read {file}: {exc}") from exc
    registry = open_registry(create=True)
    same = _identical(registry, source)
    if same is not None:
        click.echo(f"already registered as {same.id} (identical source, status {same.status})")
        return
    try:
        early = source_metadata(source, origin=origin)
    except Exception:  # no class to name: the validator reports why
        early = None
    if early is not None:
        from ..registry.trust import check_seed_name

        check_seed_name(early.name, source)  # before spending a validation on it
    with Validator(budget, pool_size=2) as validator:
        report = validator.validate(source, filename=file)
    status = report.verdict()
    if status == "rejected":
        click.echo(report.summary())
        click.echo("Not registered: fix the failures above.")
        sys.exit(1)
    # The same metadata an import derives (max_turns by SPADE's loader semantics).
    meta = source_metadata(source, origin=origin)
    # An unproven SPADE game (no solution()) is stored unvalidated, with the reason.
    extra = {"unproven": report.unproven} if status == "unvalidated" else None
    if hasattr(registry, "register_with_outcome"):
        outcome = registry.register_with_outcome(
            source, meta, status=status, report=report, extra=extra
        )
        record, new = outcome.record, outcome.new
    else:  # the registry before Registry.register_with_outcome
        record, new = registry.register(source, meta, status=status, report=report), True
    if not new:  # registered by someone else while this one was validating
        click.echo(f"already registered as {record.id} (identical source)")
        return
    click.echo(f"registered {record.id} ({status}, budget {budget})")
    if status == "unvalidated":
        click.echo(f"   unproven: {report.unproven}")
        click.echo("   gym.make warns for it; add solution() and register again to validate.")


def _identical(registry: Any, source: str) -> Any:
    """The registered version whose source is exactly ``source``, or None."""
    import hashlib

    # The registry's identity of a version: the SHA-256 of its source (registry._rows).
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    return registry.by_sha256([digest]).get(digest)


@click.command("retire", cls=SpadeCommand)
@click.argument("env_id", type=ENV_ID)
def retire(env_id: str) -> None:
    """Retire a version: it stays readable but is no longer offered.

    \b
    Example:
      spade-envs retire spade/NumberGuess-v2
    """
    click.echo(f"retired {open_registry().retire(env_id).id}")


@click.command("revalidate", cls=SpadeCommand)
@click.argument("env_ids", nargs=-1, type=ENV_ID)
@click.option(
    "--status",
    type=SuggestChoice(STATUSES, "status"),
    help="Also every version with this status (e.g. unvalidated).",
)
@click.option(
    "--budget", type=SuggestChoice(BUDGETS, "budget"), default="default", show_default=True
)
def revalidate(env_ids: tuple[str, ...], status: str | None, budget: str) -> None:
    """Validate stored versions again; store each report and set its status from it.

    Passed versions become 'validated', failed ones 'rejected', unproven ones (a SPADE
    game without solution()) stay 'unvalidated' (retired ones keep their status). A
    quarantined version that passes is released: 'validated', its evidence kept as
    history. Exit code 1 when any was rejected.

    \b
    Examples:
      spade-envs revalidate --status unvalidated
      spade-envs revalidate --status quarantined
      spade-envs revalidate spade/OrbitGuess-v1 --budget thorough
    """
    from ..runtime.imports import validate_stored

    registry = open_registry()
    ids = list(env_ids)
    if status is not None:
        ids += [r.id for r in registry.iter_records(status=status) if r.id not in ids]
    if not ids:
        raise click.UsageError("Name versions to validate, or pass --status (e.g. unvalidated).")
    verdicts = validate_stored(registry, ids, budget=budget, progress=len(ids) > 1)
    for env_id, verdict in verdicts:
        click.echo(f"{env_id}: {'unproven (unvalidated)' if verdict == 'unvalidated' else verdict}")
    sys.exit(1 if any(verdict == "rejected" for _, verdict in verdicts) else 0)


@click.command("stats", cls=SpadeCommand)
def stats() -> None:
    """Counts of registered versions by kind, skill, origin and status.

    \b
    Example:
      spade-envs stats
    """
    registry = open_registry()
    total = registry.count()
    if total == 0:
        click.echo(_empty_registry_line(registry))
        return
    click.echo(f"{total} environment version(s) in the registry at {registry.url}")
    for field, counts in registry.counts().items():
        if counts:  # no suite imported: no "suite:" line
            click.echo(f"{field:>7}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


REGISTRY_COMMANDS = (init, list_registered, show, search, register, retire, revalidate, stats)
