"""Requests, responses, errors and checked parameters for the browser's small HTTP layer.

The server is the standard library's ``ThreadingHTTPServer``; this module is what sits
between it and the pages: a parsed :class:`Request`, a :class:`Response` (bytes or a
stream), :class:`HTTPError` with a status and a message a person can act on, a
:class:`Router` of regular-expression routes, and :class:`Params`, which checks every
query or form parameter and answers 400 with a clear message when one is wrong.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from typing import Any

from ..error import SpadeError, suggest

__all__ = [
    "HTTPError",
    "Params",
    "Request",
    "Response",
    "Router",
    "parse_cookies",
]

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


@dataclass
class Request:
    """One parsed HTTP request.

    Attributes:
        method: ``GET``, ``HEAD`` or ``POST``.
        path: The decoded path, without the query string.
        query: Query parameters (each name to its list of values).
        headers: Header names in lower case to their values.
        cookies: Cookie names to values.
        form: Parsed ``application/x-www-form-urlencoded`` body (POST only).
        raw_path: The path as sent, for redirects back to the same page.
        csrf: This browser's CSRF value (set by the app; forms echo it).
        owner: Whose play sessions this request may see (the CSRF cookie, if any).
        trusted: Whether the host and token checks passed (error pages may say more).
    """

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    cookies: dict[str, str]
    form: dict[str, list[str]] = field(default_factory=dict)
    raw_path: str = "/"
    csrf: str = ""
    owner: str = ""
    trusted: bool = False

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name.lower(), default)


@dataclass
class Response:
    """What a page returns: a status, headers and a body (bytes or a stream of bytes).

    Attributes:
        body: The whole body, or an iterator of chunks (streamed; no Content-Length).
        status: HTTP status.
        content_type: The ``Content-Type`` header.
        headers: Further headers (``Content-Disposition``, ``Location``, ...).
        cookies: ``Set-Cookie`` header values.
    """

    body: bytes | Iterable[bytes] = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    cookies: list[str] = field(default_factory=list)

    @classmethod
    def html(cls, text: str, status: int = 200) -> Response:
        return cls(text.encode("utf-8"), status)

    @classmethod
    def redirect(cls, location: str, status: int = 303) -> Response:
        if not location.startswith("/") or location.startswith("//"):
            raise SpadeError(f"redirects stay on this server; got {location!r}")
        return cls(b"", status, headers={"Location": location})


Handler = Callable[..., Response]


class Router:
    """Routes ``(method, path)`` to handlers by anchored regular expressions.

    A pattern's named groups become keyword arguments of the handler. A path that
    matches a pattern but not its method answers 405 with the methods it allows.
    """

    def __init__(self) -> None:
        self._routes: list[tuple[re.Pattern[str], tuple[str, ...], Handler]] = []

    def add(self, pattern: str, handler: Handler, methods: Sequence[str] = ("GET",)) -> None:
        methods = tuple(methods)
        if "GET" in methods and "HEAD" not in methods:
            methods += ("HEAD",)
        self._routes.append((re.compile(pattern + r"\Z"), methods, handler))

    def resolve(self, method: str, path: str) -> tuple[Handler, dict[str, str]]:
        """The handler of ``path`` and its path arguments; 404 or 405 otherwise."""
        allowed: list[str] = []
        for pattern, methods, handler in self._routes:
            match = pattern.match(path)
            if match is None:
                continue
            if method in methods:
                return handler, match.groupdict()
            allowed.extend(m for m in methods if m not in allowed)
        if allowed:
            raise HTTPError(
                405,
                f"{method} is not allowed on {path}; use {' or '.join(allowed)}.",
                {"Allow": ", ".join(allowed)},
            )
        raise HTTPError(404, f"There is no page at {path}.")


def parse_cookies(header: str) -> dict[str, str]:
    """Cookie names to values; a malformed header counts as no cookies."""
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


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
