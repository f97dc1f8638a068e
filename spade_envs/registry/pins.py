"""Pinned versions: what the integrations (TRL, verifiers, OpenEnv) train and serve.

Every integration takes ``spade/<Name>-v<N>`` and records the version's source hash with
what it writes, so a trajectory always names the exact code that produced it. A bare
name (``NumberGuess``) is accepted too, and resolved here to its newest *validated*
version; the :class:`Pin` says so, and the caller shows it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..error import SpadeError, UnknownEnvironmentError
from .ids import NAMESPACE, env_id, parse_env_id

__all__ = ["Pin", "Query", "pin", "require_validated"]

_SLUG = re.compile(r"(?P<name>[A-Za-z0-9]+)-v(?P<version>[1-9][0-9]{0,8})")
_NAME = re.compile(r"[A-Za-z0-9]{1,64}")


@dataclass(frozen=True)
class Pin:
    """One stored version, as an integration plays it.

    Attributes:
        env_id: ``spade/<Name>-v<N>``.
        sha256: The SHA-256 of its source (recorded with every trajectory).
        status: Its registry status when it was pinned.
        asked: What the caller gave (an ID, ``Name-vN`` or a bare name).
    """

    env_id: str
    sha256: str
    status: str
    asked: str

    @property
    def resolved(self) -> bool:
        """Whether a bare name was resolved to a version (the caller should say which)."""
        return "-v" not in self.asked

    def note(self) -> str:
        """What to tell a user who gave a bare name ("" for a pinned ID)."""
        if not self.resolved:
            return ""
        return (
            f"{self.asked} resolved to {self.env_id} (its newest validated version, "
            f"sha256 {self.sha256[:12]}); pass {self.env_id} to pin it."
        )


@dataclass(frozen=True)
class Query:
    """A selection of stored versions, for an integration to train on or serve: every
    filter given must match.

    Attributes:
        skill: Only this skill family (``math``, ``logic``, ...).
        kind: Only ``text``, ``tool`` or ``game`` versions.
        origin: Only ``seed``, ``designer`` or ``imported`` ones.
        status: Only versions with this status (``validated``; anything else is refused
            by the integrations unless they are asked to allow it).
        newest_only: Only the newest matching version of each name.
        limit: At most this many (by name, then version).
    """

    skill: str | None = None
    kind: str | None = None
    origin: str | None = None
    status: str = "validated"
    newest_only: bool = True
    limit: int | None = None

    def ids(self, registry: Any) -> list[str]:
        """The matching versions' IDs; SpadeError when none matches (with the query)."""
        from ..core.metadata import KINDS, ORIGINS
        from .formats import select_records

        for value, allowed, what in ((self.kind, KINDS, "kind"), (self.origin, ORIGINS, "origin")):
            if value is not None and value not in allowed:
                raise SpadeError(f"{what} must be one of {', '.join(allowed)}; got {value!r}.")
        if self.limit is not None and self.limit < 1:
            raise SpadeError(f"limit must be at least 1, got {self.limit}.")
        records = select_records(
            registry, status=self.status, skill=self.skill, kind=self.kind, origin=self.origin
        )
        newest: dict[str, Any] = {}
        chosen = []
        for record in records:
            if self.newest_only:
                if record.name not in newest or record.version > newest[record.name].version:
                    newest[record.name] = record
            else:
                chosen.append(record)
        if self.newest_only:
            chosen = list(newest.values())
        ids = [r.id for r in sorted(chosen, key=lambda r: (r.name, r.version))]
        if self.limit is not None:
            ids = ids[: self.limit]
        if not ids:
            raise SpadeError(
                f"No stored version matches {self} (`spade-envs list` shows what there is)."
            )
        return ids


def pin(registry: Any, ident: str, *, allow_unvalidated: bool = False) -> Pin:
    """The stored version ``ident`` names.

    Args:
        registry: An open :class:`~spade_envs.registry.Registry`.
        ident: ``spade/<Name>-v<N>``, ``<Name>-v<N>`` or a bare ``<Name>`` (its newest
            validated version).
        allow_unvalidated: Also pin a version that is not ``validated`` (a candidate,
            rejected, retired or quarantined one): only when the caller asked by name.

    Raises:
        SpadeError: ``ident`` has none of those forms, the name has no validated
            version (the message lists the versions there are), or the version is not
            validated and ``allow_unvalidated`` is False.
        UnknownEnvironmentError: No such name or version (close matches suggested).
    """
    text = ident.strip() if isinstance(ident, str) else ""
    bare = text.removeprefix(f"{NAMESPACE}/")
    if _SLUG.fullmatch(bare):
        target = f"{NAMESPACE}/{bare}"
        parse_env_id(target)
    elif _NAME.fullmatch(bare):
        target = _newest_validated(registry, bare)
    else:
        raise SpadeError(
            f"{ident!r} names no environment: give spade/<Name>-v<N> (pinned), <Name>-v<N> "
            "or a bare <Name> (its newest validated version)."
        )
    record = registry.get(target)
    require_validated(record, allow_unvalidated=allow_unvalidated)
    return Pin(env_id=record.id, sha256=record.sha256, status=record.status, asked=text)


def _newest_validated(registry: Any, name: str) -> str:
    versions = registry.versions(name)
    if not versions:
        raise UnknownEnvironmentError(name, registry.names(), what="registered environment")
    validated = [v for v in versions if registry.get(v).status == "validated"]
    if not validated:
        listed = ", ".join(f"{v} ({registry.get(v).status})" for v in versions[-5:])
        raise SpadeError(
            f"{name} has no validated version to resolve to ({listed}); pin one by its ID "
            "if you mean to play it anyway."
        )
    newest = max(parse_env_id(v)[1] for v in validated)
    return env_id(name, newest)


def require_validated(record: Any, *, allow_unvalidated: bool = False, again: bool = False) -> None:
    """Refuse a version that is not ``validated`` (unless ``allow_unvalidated``).

    Integrations call it when they pin a version and again (``again=True``) before each
    episode, so a version rejected, retired or quarantined meanwhile is not played.

    Raises:
        SpadeError: The version's status is not ``validated``.
    """
    if record.status == "validated" or allow_unvalidated:
        return
    state = " now, no longer validated" if again else ", not validated"
    raise SpadeError(
        f"{record.id} is {record.status}{state}: integrations train and serve validated "
        "versions only. Pin a validated version (`spade-envs list --status validated`), or "
        "pass allow_unvalidated=True if you mean to play it anyway."
    )
