"""Errors and checked parameters of the browser's pages and API.

:class:`HTTPError` carries a status and a message a person can act on (the app's
exception handlers turn it into an HTML page or a JSON error); :class:`Params` checks
every query or form parameter and answers 400 with a clear message when one is wrong.
Routing, requests and responses are Starlette's.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..error import SpadeError, suggest

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import RedirectResponse

__all__ = ["HTTPError", "Params", "local_redirect", "parse_qs", "parse_slug", "query_of"]

# Control characters other than tab and newline never belong in a parameter.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class HTTPError(SpadeError):
    """An error answered with ``status`` and ``message`` (shown to the user, escaped).

    Args:
        status: The HTTP status (400 bad parameter, 403, 404, 405, 413, 503, ...).
        message: What was wrong and what to do about it.
        headers: Extra response headers (e.g. ``Allow`` for 405).
    """

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


def parse_qs(text: str) -> dict[str, list[str]]:
    """A query string or form body; undecodable bytes are an error, not replaced."""
    try:
        return urllib.parse.parse_qs(
            text, keep_blank_values=True, strict_parsing=False, errors="strict", max_num_fields=200
        )
    except UnicodeDecodeError:
        raise HTTPError(400, "The parameters are not valid UTF-8.") from None
    except ValueError as exc:
        raise HTTPError(400, f"Malformed parameters: {exc}.") from None


def parse_slug(slug: str, example: str) -> str:
    """``Name-v3`` (the last part of a page's or the API's address) as the ID
    ``spade/Name-v3``; 400 when it is not one, naming ``example`` (an address of that kind).
    """
    from ..registry.ids import parse_env_id

    ident = "spade/" + slug
    try:
        parse_env_id(ident)
    except SpadeError:
        raise HTTPError(
            400,
            f"{slug[:80]!r} is not an environment version; write it as Name-vN, as in {example}.",
        ) from None
    return ident


def local_redirect(location: str, status: int = 303) -> RedirectResponse:
    """A redirect to a path of this server (never to another site).

    Raises:
        ValueError: For a target that is not a path here (``//host``, a scheme, a backslash).
    """
    from starlette.responses import RedirectResponse

    if not location.startswith("/") or location.startswith("//") or "\\" in location:
        raise ValueError(f"redirects stay on this server; refused {location!r:.80}")
    return RedirectResponse(location, status_code=status)


def query_of(request: Request) -> dict[str, list[str]]:
    """The query parameters of ``request``, decoded strictly (bad UTF-8 is a 400)."""
    raw = request.scope.get("query_string", b"")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise HTTPError(
            400, "The address is not valid: its query has raw non-ASCII bytes."
        ) from None
    return parse_qs(text)


class Params:
    """Checked access to one request's parameters.

    Every getter raises :class:`HTTPError` 400 with a message naming the parameter and
    the values it accepts. An empty value (a form's "any" choice) counts as absent.
    :meth:`done` rejects parameters no getter asked for, suggesting close names, so a
    misspelt filter is an error rather than silently ignored.

    Args:
        values: Parameter names to their values (from the query string or a form).
        ignore: Names that may appear without being read (e.g. ``csrf``).
    """

    def __init__(self, values: dict[str, list[str]], ignore: Iterable[str] = ()):
        self._values = values
        self._seen: set[str] = set(ignore)

    def _one(self, name: str) -> str | None:
        self._seen.add(name)
        found = self._values.get(name)
        if not found:
            return None
        if len(found) > 1:
            raise HTTPError(400, f"Parameter {name!r} was given {len(found)} times; give it once.")
        value = found[0]
        return value if value.strip() else None

    def text(self, name: str, *, max_chars: int = 200, default: str = "") -> str:
        """Free text, stripped, with control characters refused (newlines and tabs kept)."""
        value = self._one(name)
        if value is None:
            return default
        value = value.strip()
        if len(value) > max_chars:
            raise HTTPError(
                400, f"{name} is {len(value)} characters long; at most {max_chars} are accepted."
            )
        if _CONTROL.search(value):
            raise HTTPError(400, f"{name} contains control characters; remove them.")
        return value

    def raw(self, name: str, *, max_chars: int, default: str = "") -> str:
        """Text kept exactly as sent (an action typed into a game), length-checked."""
        self._seen.add(name)
        found = self._values.get(name)
        if not found:
            return default
        if len(found) > 1:
            raise HTTPError(400, f"Parameter {name!r} was given {len(found)} times; give it once.")
        value = found[0]
        if len(value) > max_chars:
            raise HTTPError(
                400, f"{name} is {len(value)} characters long; at most {max_chars} are accepted."
            )
        if "\x00" in value:
            raise HTTPError(400, f"{name} contains a NUL character; remove it.")
        return value

    def choice(self, name: str, choices: Sequence[str], default: str | None = None) -> str | None:
        """One of ``choices`` (exact), else 400 with a close-match suggestion."""
        value = self._one(name)
        if value is None:
            return default
        if value not in choices:
            shown = ", ".join(choices) if len(choices) <= 30 else f"{len(choices)} values"
            raise HTTPError(
                400,
                f"{name} must be one of: {shown}; got {value!r}.{suggest(value, choices)}",
            )
        return value

    def integer(
        self, name: str, *, low: int, high: int | None = None, default: int | None = None
    ) -> int | None:
        """A whole number in ``[low, high]``."""
        value = self._one(name)
        if value is None:
            return default
        if not re.fullmatch(r"[+-]?\d{1,18}", value.strip()):
            raise HTTPError(400, f"{name} must be a whole number; got {value!r:.40}.")
        number = int(value)
        if number < low or (high is not None and number > high):
            upper = "" if high is None else f" and at most {high:,}"
            raise HTTPError(400, f"{name} must be at least {low:,}{upper}; got {number:,}.")
        return number

    def number(
        self, name: str, *, low: float, high: float, default: float | None = None
    ) -> float | None:
        """A finite decimal number in ``[low, high]``."""
        value = self._one(name)
        if value is None:
            return default
        try:
            number = float(value)
        except ValueError:
            raise HTTPError(
                400, f"{name} must be a number such as 0.25; got {value!r:.40}."
            ) from None
        if not math.isfinite(number) or not low <= number <= high:
            raise HTTPError(
                400, f"{name} must lie between {low:g} and {high:g}; got {value!r:.40}."
            )
        return number

    def done(self) -> None:
        """Raise 400 for any parameter that no getter read."""
        unknown = sorted(set(self._values) - self._seen)
        if unknown:
            name = unknown[0]
            raise HTTPError(
                400,
                f"Unknown parameter {name!r}.{suggest(name, sorted(self._seen))} "
                f"This page accepts: {', '.join(sorted(self._seen)) or 'no parameters'}.",
            )

    def passthrough(self) -> dict[str, Any]:
        """The parameters as given (first value each), for building links."""
        return {k: v[0] for k, v in self._values.items() if v and v[0].strip()}
