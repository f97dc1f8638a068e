"""The commands on seeds and environment files: ``list-seeds``, ``info``, ``validate``,
``sandbox-info``."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import click

from ..core.metadata import KINDS, SKILLS, describe
from ..core.pyparse import parse_source
from ..core.terminal import terminal_safe
from ..make import resolve
from ..seeds import seed_classes
from .errors import SpadeCommand
from .options import SuggestChoice

__all__ = ["ENV_COMMANDS", "TRUST_HELP", "is_file", "read_source"]


@click.command("list-seeds", cls=SpadeCommand)
@click.option(
    "--skill", type=SuggestChoice(SKILLS, "skill"), help="Only environments of this skill."
)
@click.option(
    "--kind", type=SuggestChoice(KINDS, "kind"), help="Only text, tool or game environments."
)
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


TRUST_HELP = (
    "DANGER: run code that is not a packaged seed in THIS process, as you, with no "
    "sandbox (it can read your files, keys and network). Only for code you wrote or "
    "reviewed yourself."
)


def is_file(name: str) -> bool:
    """Whether NAME names a file (``.py`` or a path) rather than a seed or an ID."""
    return name.endswith(".py") or "/" in name or "\\" in name


def read_source(path: str) -> str:
    """The text of ``path``; a usage error (exit 2) when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"Cannot read {path}: {exc}") from exc


@click.command("info", cls=SpadeCommand)
@click.argument("name")
@click.option("--source", is_flag=True, help="Also print the environment's source code.")
@click.option(
    "--trust-code",
    is_flag=True,
    help="For a .py file that is not a seed: load it in this process to show its knobs and "
    "tools too. " + TRUST_HELP,
)
def info(name: str, source: bool, trust_code: bool) -> None:
    """Show what is known about one environment (NAME: a seed name or a .py path).

    A file is read without running it (name, kind, skill, description, max_turns from
    its source), unless it is a packaged seed's code or --trust-code is given.

    \b
    Example:
      spade-envs info Mastermind --source
    """
    from ..registry.ids import NAMESPACE
    from ..seeds import is_seed_source

    if name.startswith(f"{NAMESPACE}/") and not Path(name).exists():
        raise click.BadParameter(
            f"{name} is a registry ID: `spade-envs show {name}` shows a registered version "
            "(info takes a seed name or a .py file).",
            param_hint="NAME",
        )
    text = read_source(name) if is_file(name) else None
    if text is not None and not (trust_code or is_seed_source(text)):
        from ..validation.static import static_metadata

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


@click.command("validate", cls=SpadeCommand)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report(s) as JSON.")
@click.option(
    "--budget",
    type=SuggestChoice(["fast", "default", "thorough"], "budget"),
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
    from ..validation import validate_many

    sources = []
    for path in files:
        try:
            sources.append(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise click.UsageError(f"Cannot read {path}: {exc}") from exc
    reports = validate_many(sources, budget=budget, progress=len(files) > 1 and not as_json)
    for path, source, report in zip(files, sources, reports):
        if as_json:
            click.echo(report.to_json())
        else:
            click.echo(_summary(path, source, report))
    sys.exit(0 if all(r.passed for r in reports) else 1)


def _summary(path: str, source: str, report: Any) -> str:
    """``report``'s summary for ``path``; a file that does not parse is headlined by its
    syntax error (line, column, message and the line itself), not by the environment
    class that could not be found because of it."""
    summary = report.summary()
    syntax = next(
        (c for c in report.checks if c.name == "syntax" and not c.passed and not c.skipped), None
    )
    if syntax is None:
        return f"{path}: {summary}"
    checks = summary.split("\n", 1)[1] if "\n" in summary else ""
    return f"{_syntax_headline(path, source, syntax.reason)}\n{checks}".rstrip("\n")


def _syntax_headline(path: str, source: str, reason: str) -> str:
    """``PATH: REJECTED: syntax error at line L, column C: MESSAGE`` and the offending line with a
    caret under the column; the validator's ``reason`` when Python parses it after all."""
    try:
        parse_source(source, filename=path)
    except SyntaxError as exc:
        line = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        head = f"{path}: REJECTED: syntax error at {line}: {exc.msg}"
        text = (exc.text or "").rstrip("\n")
        if not text.strip():
            return terminal_safe(head)
        shown = text.lstrip()
        caret = ""
        if exc.offset and exc.offset > len(text) - len(shown):
            caret = "\n    " + " " * (exc.offset - 1 - (len(text) - len(shown))) + "^"
        return terminal_safe(f"{head}\n    {shown}") + caret
    except ValueError as exc:  # e.g. a NUL byte: Python refuses the text before parsing
        return terminal_safe(f"{path}: REJECTED: cannot parse the file: {exc}")
    return terminal_safe(f"{path}: REJECTED: syntax error: {reason}")


@click.command("sandbox-info", cls=SpadeCommand)
def sandbox_info() -> None:
    """Show which sandbox layers this machine provides, and start one worker to prove it.

    \b
    Example:
      spade-envs sandbox-info
    """
    from ..sandbox import SandboxConfig, Worker, capabilities

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


ENV_COMMANDS = (list_seeds, info, validate, sandbox_info)
