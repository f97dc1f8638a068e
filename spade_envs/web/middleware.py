"""The ASGI middleware every request passes before a page or an API call runs.

In order: the method and the path are checked; the :class:`~spade_envs.web.security.Guard`
checks the ``Host`` header and the token (a first visit with ``?token=`` is redirected
to the same address without it, with the token now in a cookie); a bookmark from
before "regret" was renamed is redirected; the browser's CSRF value is read or made;
an API write's body is read (at most :data:`MAX_BODY`) and must be JSON from this
origin. Every response then gets the security headers. A page POST is checked by its
route, after routing (so a POST to a GET page is a 405): :func:`read_form` wants HTML
form data carrying the CSRF value.

What a page needs from here travels in ``request.state``: ``csrf`` (this browser's CSRF
value), ``owner`` (whose play sessions it may see) and ``form`` (the parsed form of a
page POST, set by its route).
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from .params import HTTPError, local_redirect, parse_qs, query_of
from .search import renamed_query
from .security import SECURITY_HEADERS, Guard

__all__ = [
    "API_PREFIX",
    "MAX_BODY",
    "GuardMiddleware",
    "browser_owner",
    "is_api",
    "read_body",
    "read_form",
]

log = logging.getLogger("spade_envs.web")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: Largest POST body read (a play action is at most 4,000 characters).
MAX_BODY = 64 * 1024
#: Where the JSON API lives; errors there are JSON, not pages.
API_PREFIX = "/api/"
_PAGE_METHODS = ("GET", "HEAD", "POST")
_API_METHODS = ("GET", "HEAD", "POST", "DELETE")


def is_api(path: str) -> bool:
    """Whether ``path`` belongs to the JSON API (or its description)."""
    return path.startswith(API_PREFIX) or path == "/openapi.json"


class GuardMiddleware:
    """Checks, then the app, then the headers (see the module's docstring).

    Args:
        app: The ASGI application behind it.
        guard: Returns the server's current guard (it knows the port only once bound).
        on_error: Builds the response of a refused request: ``(request, status, message,
            trusted) -> Response`` (an error page, or JSON under the API).
        on_crash: Builds the response of an unexpected exception (a 500 that logs it), so
            that it too carries the security headers.
    """

    def __init__(
        self,
        app: Any,
        guard: Callable[[], Guard],
        on_error: Callable[[Request, int, str, bool], Response],
        on_crash: Callable[[Request, BaseException], Response],
    ) -> None:
        self.app = app
        self.guard = guard
        self.on_error = on_error
        self.on_crash = on_crash

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        set_cookies: list[str] = []
        no_store = not scope["path"].startswith("/static/")
        started = False

        async def send_with_headers(message: MutableMapping[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
                if no_store and "cache-control" not in headers:
                    headers["Cache-Control"] = "no-store"
                for cookie in set_cookies:
                    headers.append("Set-Cookie", cookie)
            await send(message)

        request = Request(scope, receive)
        trusted = False
        try:
            early, receive = await self._check(request, scope, receive, set_cookies)
            trusted = True
        except HTTPError as exc:
            early = self.on_error(request, exc.status, exc.message, trusted)
            early.headers.update(exc.headers)
        if early is not None:
            await early(scope, receive, send_with_headers)
            return
        try:
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:
            if started:
                raise  # mid-stream: nothing better to send than a cut connection
            await self.on_crash(request, exc)(scope, receive, send_with_headers)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket (the OpenEnv endpoints) passes the same host, origin and token
        checks as a request; browsers send WebSockets across sites without CORS, so the
        ``Origin`` check is what keeps another site's page from opening sessions here.
        A refused one is closed before it is accepted (the client sees HTTP 403)."""
        connection = HTTPConnection(scope)
        guard = self.guard()
        try:
            guard.check_host(connection)
            if connection.headers.get("origin", "") == "null":
                # A sandboxed iframe or a file:// page: no site of ours sends it.
                raise HTTPError(403, "A WebSocket from an opaque origin is refused.")
            guard.check_origin(connection)
            if not guard.token_ok(connection):
                raise HTTPError(401, "token required")
        except HTTPError:
            await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)

    async def _check(
        self, request: Request, scope: Scope, receive: Receive, set_cookies: list[str]
    ) -> tuple[Response | None, Receive]:
        """Raise :class:`HTTPError` for a refused request; return an early response
        (a redirect) or None, and the ``receive`` the app should read the body from."""
        method = scope["method"]
        path = scope["path"]
        api = is_api(path)
        allowed = _API_METHODS if api else _PAGE_METHODS
        if method not in allowed:
            raise HTTPError(405, f"{method} is not supported.", {"Allow": ", ".join(allowed)})
        raw_path = scope.get("raw_path") or path.encode()
        if not raw_path.startswith(b"/"):
            raise HTTPError(400, "Malformed request target: it must start with '/'.")
        try:
            decoded = urllib.parse.unquote(raw_path.decode("ascii"), errors="strict")
        except UnicodeDecodeError:
            raise HTTPError(400, "The address is not valid UTF-8.") from None
        if (
            "\x00" in decoded
            or "\\" in decoded
            or decoded.startswith("//")
            or any(part in (".", "..") for part in decoded.split("/"))
        ):
            raise HTTPError(
                400, f"Malformed path {decoded!r:.80}: no '.', '..', '//' or backslashes."
            )
        guard = self.guard()
        guard.check_host(request)
        query = query_of(request)
        if guard.token_in_query(query):
            rest = {k: v for k, v in query.items() if k != "token"}
            target = urllib.parse.quote(path) + (
                "?" + urllib.parse.urlencode(rest, doseq=True) if rest else ""
            )
            set_cookies.append(guard.token_cookie())
            return local_redirect(target), receive
        if not guard.token_ok(request):
            raise HTTPError(
                401,
                "This server needs its access token: open the address `spade-envs serve` printed "
                "(it ends in ?token=...), or send the header Authorization: Bearer <token>.",
            )
        if method in ("GET", "HEAD") and not api:
            renamed = renamed_query(query)
            if renamed is not None:
                # A link or bookmark from before "regret" became "hint_gain": the same
                # list under the new names, for good (301), rather than a 400.
                target = f"{urllib.parse.quote(path)}?{urllib.parse.urlencode(renamed, doseq=True)}"
                return local_redirect(target, 301), receive
        csrf, set_cookie = guard.csrf_value(request)
        if set_cookie:
            set_cookies.append(set_cookie)
        state = scope.setdefault("state", {})
        # A browser's sessions belong to its (well-formed) CSRF value, under a prefix that
        # no cookie can forge into the API's owner.
        state.update(csrf=csrf, owner=browser_owner(csrf), form={})
        if api and method in ("POST", "DELETE"):
            body = await read_body(request)
            guard.check_origin(request)
            kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if method == "POST" and kind != "application/json":
                raise HTTPError(
                    415,
                    "API requests with a body must send it as JSON "
                    "(Content-Type: application/json).",
                )
            state["owner"] = "api"
            receive = _replay(body)
        return None, receive


async def read_body(request: Request) -> bytes:
    """The request body, at most :data:`MAX_BODY` bytes (else 413)."""
    length = request.headers.get("content-length")
    if length is not None:
        if not length.strip().isdigit():
            raise HTTPError(400, "Content-Length is not a number.")
        if int(length) > MAX_BODY:
            raise HTTPError(413, f"The request body is over {MAX_BODY // 1024} KB.")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise HTTPError(413, f"The request body is over {MAX_BODY // 1024} KB.")
        chunks.append(chunk)
    return b"".join(chunks)


def browser_owner(csrf: str) -> str:
    """The play-session owner of the browser whose CSRF value is ``csrf``."""
    return "browser:" + csrf


async def read_form(request: Request, guard: Guard) -> tuple[dict[str, list[str]], str]:
    """A page POST's form, checked: HTML form data, this origin, the CSRF value.

    Returns:
        The form and the browser's CSRF value (whose play sessions it may touch).
    """
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise HTTPError(
            400, "POST bodies must be HTML form data (application/x-www-form-urlencoded)."
        )
    body = await read_body(request)
    try:
        form = parse_qs(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise HTTPError(400, "The form is not valid UTF-8.") from None
    return form, browser_owner(guard.check_post(request, form))


def _replay(body: bytes) -> Receive:
    """A ``receive`` that hands the app the body this middleware already read."""
    sent = False

    async def receive() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive
