"""Option types of ``spade-envs``: values are checked where the command line takes them.

A choice that is not one of the accepted values is a usage error (exit 2) that lists
them and suggests the closest (``--skill logik``: "Did you mean 'logic'?").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import click

from ..error import suggest

__all__ = ["ENV_ID", "ORIGINS", "STATUSES", "SuggestChoice", "check_value", "unknown_value"]

#: Statuses of registered versions (``spade_envs.registry.STATUSES``, without SQLAlchemy).
STATUSES = ("candidate", "validated", "rejected", "retired", "unvalidated", "quarantined")
#: Where a version came from.
ORIGINS = ("seed", "designer", "imported")


def unknown_value(noun: str, value: str, accepted: Iterable[str], where: str = "") -> str:
    """``Unknown format 'xml'. Use one of jsonl, parquet.``; with ``where`` (``" in this
    registry"``): ``Unknown skill 'logik'. Did you mean 'logic'? Skills in this registry: ...``."""
    accepted = list(accepted)
    listed = ", ".join(accepted) if accepted else "none"
    head = f"Unknown {noun} {value!r}.{suggest(value, accepted)}"
    if not where:
        return f"{head} Use one of {listed}."
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{head} {plural[0].upper()}{plural[1:]}{where}: {listed}."


def check_value(
    value: str | None, accepted: Iterable[str], *, noun: str, option: str, where: str = ""
) -> None:
    """Raise a usage error naming ``option`` when ``value`` is not None nor accepted."""
    accepted = list(accepted)
    if value is not None and value not in accepted:
        raise click.BadParameter(unknown_value(noun, value, accepted, where), param_hint=option)


class SuggestChoice(click.Choice):
    """A :class:`click.Choice` whose error names the value, suggests the closest choice
    and lists them all: ``Unknown format 'xml'. Use one of jsonl, parquet, package.``

    Args:
        choices: The accepted values.
        noun: What a value is (``skill``, ``format``), for the message.
    """

    def __init__(self, choices: Sequence[str], noun: str, case_sensitive: bool = True) -> None:
        super().__init__(list(choices), case_sensitive=case_sensitive)
        self.noun = noun

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The accepted value for ``value``; otherwise a usage error with suggestions."""
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            self.fail(unknown_value(self.noun, str(value), map(str, self.choices)), param, ctx)


class EnvIdParam(click.ParamType):
    """A registry ID, ``spade/<Name>-v<N>``: a malformed one is a usage error (exit 2);
    whether it is registered is the command's business (exit 1 when it is not)."""

    name = "ENV_ID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """``value`` when it parses as an environment ID."""
        from ..error import SpadeError
        from ..registry.ids import parse_env_id

        try:
            parse_env_id(str(value))
        except SpadeError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


ENV_ID = EnvIdParam()
