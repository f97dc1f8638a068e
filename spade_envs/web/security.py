"""What every request passes before a page runs: host, token and CSRF checks, and headers.

- **Host**: on a loopback address the ``Host`` header must name that address (or
  ``localhost``), so a web page elsewhere cannot reach the server through DNS
  rebinding.
- **Token**: when the server has one (always, off loopback), every request must carry
  it: ``Authorization: Bearer <token>``, or the ``spade_token`` cookie, which a first
  visit to ``/?token=<token>`` sets (HttpOnly, SameSite=Strict) before redirecting to
  the same page without the token in its address. Compared in constant time.
- **CSRF**: the only writes are play sessions, by POST; each page form must carry the
  ``spade_csrf`` cookie's value as its ``csrf`` form field (double submit). The JSON API
  takes only ``application/json`` bodies, which a page elsewhere cannot send without a
  CORS preflight that this server never answers. An ``Origin`` header, when sent, must
  be this server.
- **Headers**: a Content-Security-Policy that allows no inline script or style and
  nothing from elsewhere, ``nosniff``, no framing, no referrer, no caching of pages.
"""

from __future__ import annotations

import base64
import ipaddress
import re
import secrets
import urllib.parse
from typing import TYPE_CHECKING

from .params import HTTPError

if TYPE_CHECKING:
    from starlette.requests import HTTPConnection, Request

__all__ = [
    "CSRF_COOKIE",
    "SECURITY_HEADERS",
    "TOKEN_COOKIE",
    "Guard",
    "is_loopback",
]

TOKEN_COOKIE = "spade_token"
#: What a CSRF value this server made looks like (``secrets.token_urlsafe``).
_CSRF_SHAPE = re.compile(r"[A-Za-z0-9_-]{20,100}")
CSRF_COOKIE = "spade_csrf"

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) only listens on this machine."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Guard:
    """The checks of one server.

    Args:
        host: The address the server listens on.
        port: Its port (the real one, after binding port 0).
        token: The access token, or None (allowed on loopback only; checked earlier).
    """

    def __init__(self, host: str, port: int, token: str | None):
        self.host = host
        self.port = port
        self.token = token
        self.loopback = is_loopback(host)
        names = {host.lower(), "localhost", "127.0.0.1", "[::1]"} if self.loopback else set()
        self.allowed_hosts = {f"{name}:{port}" for name in names} | (
            {name for name in names} if port == 80 else set()
        )

    def check_host(self, request: HTTPConnection) -> None:
        """403 for a ``Host`` header that is not this loopback server (DNS rebinding)."""
        if not self.loopback:
            return  # reachable under names we cannot know: the token protects it
        host = request.headers.get("host", "").lower()
        if host not in self.allowed_hosts:
            raise HTTPError(
                403,
                f"Unexpected Host header {host!r}: this server answers only as "
                f"http://127.0.0.1:{self.port}/ or http://localhost:{self.port}/.",
            )

    def token_ok(self, request: HTTPConnection) -> bool:
        """Whether the request carries the token (always true without one)."""
        if self.token is None:
            return True
        offered = ""
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            offered = auth[7:].strip()
        elif auth.lower().startswith("basic "):
            # http://user:TOKEN@host/...: how clients that take only a URL (OpenEnv's,
            # whose WebSocket sends the URL's user info as Basic auth) carry the token.
            offered = _basic_password(auth[6:].strip())
        else:
            offered = request.cookies.get(TOKEN_COOKIE, "")
        return bool(offered) and secrets.compare_digest(offered.encode(), self.token.encode())

    def token_in_query(self, query: dict[str, list[str]]) -> bool:
        """Whether ``?token=`` carries the right token (then a cookie is set)."""
        if self.token is None:
            return False
        values = query.get("token") or [""]
        return len(values) == 1 and secrets.compare_digest(values[0].encode(), self.token.encode())

    def token_cookie(self) -> str:
        return f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"

    @staticmethod
    def csrf_value(request: Request) -> tuple[str, str | None]:
        """This browser's CSRF value and, when it has none yet, the cookie that sets one."""
        value = request.cookies.get(CSRF_COOKIE, "")
        if _CSRF_SHAPE.fullmatch(value):
            return value, None
        value = secrets.token_urlsafe(24)
        return value, f"{CSRF_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict"

    @staticmethod
    def check_origin(request: HTTPConnection) -> None:
        """403 for a write whose ``Origin`` header names another site."""
        origin = request.headers.get("origin", "")
        if origin and origin != "null":
            parsed = urllib.parse.urlsplit(origin)
            if parsed.netloc.lower() != request.headers.get("host", "").lower():
                raise HTTPError(403, f"Cross-origin request from {origin!r} refused.")

    def check_post(self, request: Request, form: dict[str, list[str]]) -> str:
        """403 unless a form POST carries the CSRF cookie's value and comes from this origin.

        Returns:
            The browser's CSRF value (which also identifies whose play session it is).
        """
        self.check_origin(request)
        cookie = request.cookies.get(CSRF_COOKIE, "")
        sent = (form.get("csrf") or [""])[0]
        if not _CSRF_SHAPE.fullmatch(cookie) or not secrets.compare_digest(
            cookie.encode(), sent.encode()
        ):
            raise HTTPError(
                403,
                "This form has expired or did not come from this site (CSRF check failed); "
                "reload the page and try again.",
            )
        return cookie


def _basic_password(encoded: str) -> str:
    """The password of a Basic ``Authorization`` value ("" when malformed)."""
    try:
        decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return ""
    return decoded.partition(":")[2]
