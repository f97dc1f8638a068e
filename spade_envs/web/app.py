"""The browser application: routes, the request cycle and the HTTP server around it.

:class:`App` owns the registry connection, the catalog, the stored vectors, the play
sessions and the runs directory, and turns a :class:`~spade_envs.web.http.Request` into
a :class:`~spade_envs.web.http.Response`: host and token checks, CSRF on POST, routing,
then errors as pages (400 for a bad parameter, 404 for an unknown environment with
close matches, 500 without a traceback). :func:`make_server` binds a
``ThreadingHTTPServer`` (one thread per request) and :func:`serve` runs it.
"""

from __future__ import annotations

import importlib.resources
import logging
import socket
import sys
import threading
import time
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO

from ..error import SpadeError, UnknownEnvironmentError, suggest
from . import pages, pages_env, pages_runs
from .catalog import Catalog
from .config import ServeConfig, registry_url
from .html import esc, layout
from .http import HTTPError, Request, Response, Router, parse_cookies, parse_qs
from .play import PlaySessions
from .runs import RunsDir
from .search import Searcher, renamed_query
from .security import SECURITY_HEADERS, Guard
from .vectors import Vectors

__all__ = ["App", "BrowserServer", "make_server", "serve"]

log = logging.getLogger("spade_envs.web")

#: Largest POST body read (a play action is at most 4,000 characters).
MAX_BODY = 64 * 1024
_STATIC_TYPES = {"css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8"}


class App:
    """Everything one browser server serves.

    Args:
        config: The server's settings.
        registry: An open registry (default: the one ``config.registry_url`` names).
        sandbox: Sandbox limits of play sessions (default ``SandboxConfig()``).
    """

    def __init__(self, config: ServeConfig, registry: Any = None, sandbox: Any = None):
        from ..registry import Registry

        self.config = config
        self.registry = (
            registry if registry is not None else Registry(registry_url(config.registry_url))
        )
        self.catalog = Catalog(self.registry, refresh_s=config.refresh_s)
        self.vectors = Vectors(
            self.registry, embedder=config.embedder, seed=config.seed, refresh_s=config.refresh_s
        )
        self.searcher = Searcher(self.vectors)
        self.sessions = PlaySessions(
            self.registry,
            max_sessions=config.max_play_sessions,
            idle_s=config.play_idle_s,
            max_age_s=config.play_max_s,
            sandbox=sandbox,
        )
        self.runs = RunsDir(config.runs_dir)
        self.guard = Guard(config.host, config.port, config.token)
        self.started = time.time()
        self.static = {
            name: (importlib.resources.files(__package__) / "static" / name).read_bytes()
            for name in ("style.css", "app.js")
        }
        self.router = Router()
        add = self.router.add
        add(r"/", pages.overview_page)
        add(r"/envs", pages.list_page)
        add(r"/export", pages.export_page)
        add(r"/map", pages.map_page)
        add(r"/runs", pages_runs.runs_page)
        add(r"/runs/(?P<name>[A-Za-z0-9.][A-Za-z0-9._-]{0,127})", pages_runs.run_page)
        add(r"/env/(?P<slug>[A-Za-z0-9]+-v[0-9]+)", pages_env.env_page)
        add(r"/env/(?P<slug>[A-Za-z0-9]+-v[0-9]+)/source\.py", pages_env.source_download)
        add(r"/env/(?P<slug>[A-Za-z0-9]+-v[0-9]+)/play", pages_env.play_form)
        add(r"/play", pages_env.play_start, methods=("POST",))
        add(r"/play/(?P<sid>[A-Za-z0-9_-]{1,64})", pages_env.play_view)
        add(r"/play/(?P<sid>[A-Za-z0-9_-]{1,64})", pages_env.play_action, methods=("POST",))
        add(r"/static/(?P<name>[a-z]+\.(?:css|js))", self._static)
        add(r"/healthz", self._health)

    # ----- pages --------------------------------------------------------------------------
    def page(
        self,
        title: str,
        body: str,
        *,
        active: str = "",
        query: str = "",
        refresh_s: int | None = None,
    ) -> Response:
        """A whole HTML page around ``body`` (already escaped), with the footer."""
        snap = self.catalog.snapshot()
        age = max(0.0, time.time() - snap.refreshed_at)
        footer = (
            f"registry <code>{esc(self.registry.engine.url.render_as_string(hide_password=True))}"
            "</code>"
            f" · {len(snap):,} versions · lists refreshed {age:.0f} s ago"
        )
        if self.catalog.error:
            footer += f' · <span class="error">{esc(self.catalog.error)}</span>'
        return Response.html(
            layout(title, body, active=active, footer=footer, query=query, refresh_s=refresh_s)
        )

    def _static(self, request: Request, name: str) -> Response:
        data = self.static.get(name)
        if data is None:
            raise HTTPError(404, f"There is no static file {name!r}.")
        return Response(
            data,
            content_type=_STATIC_TYPES[name.rsplit(".", 1)[1]],
            headers={"Cache-Control": "max-age=300"},
        )

    def _health(self, request: Request) -> Response:
        snap = self.catalog.snapshot()
        text = f"ok {len(snap)} versions, {len(self.sessions)} play sessions\n"
        return Response(text.encode(), content_type="text/plain; charset=utf-8")

    def _error_page(self, status: int, message: str, trusted: bool = True) -> Response:
        """An error page; ``trusted`` False (before the host and token checks passed)
        leaves out the footer, which names the registry."""
        titles = {400: "Bad request", 401: "Token required", 403: "Forbidden", 404: "Not found",
                  405: "Method not allowed", 413: "Too large", 500: "Server error",
                  501: "Not available", 503: "Busy"}  # fmt: skip
        title = titles.get(status, "Error")
        body = (
            f'<h1>{esc(title)}</h1><p class="error" id="error">{esc(message)}</p>'
            '<p><a href="/">Overview</a></p>'
        )
        try:
            response = self.page(title, body) if trusted else Response.html(layout(title, body))
        except Exception:  # the catalog itself may be what failed
            response = Response.html(layout(title, body))
        response.status = status
        return response

    # ----- the request cycle --------------------------------------------------------------
    def dispatch(self, request: Request) -> Response:
        """Checks, route, page; errors become pages with the right status."""
        try:
            return self._dispatch(request)
        except HTTPError as exc:
            response = self._error_page(exc.status, exc.message, trusted=request.trusted)
            response.headers.update(exc.headers)
            return response
        except UnknownEnvironmentError as exc:
            hint = suggest(exc.name, exc.known)
            return self._error_page(
                404,
                f"{exc.name!r} is not in this registry.{hint} Search for it on the "
                "Environments page.",
            )
        except SpadeError as exc:
            return self._error_page(400, str(exc))
        except Exception:
            log.error(
                "error serving %s %s\n%s", request.method, request.path, traceback.format_exc()
            )
            return self._error_page(
                500, "Something went wrong on the server; the log has the details."
            )

    def _dispatch(self, request: Request) -> Response:
        guard = self.guard
        guard.check_host(request)
        if guard.token_in_query(request):
            rest = {k: v for k, v in request.query.items() if k != "token"}
            target = urllib.parse.quote(request.path) + (
                "?" + urllib.parse.urlencode(rest, doseq=True) if rest else ""
            )
            response = Response.redirect(target)
            response.cookies.append(guard.token_cookie())
            return response
        if not guard.token_ok(request):
            raise HTTPError(
                401,
                "This server needs its access token: open the address `spade-envs serve` printed "
                "(it ends in ?token=...), or send the header Authorization: Bearer <token>.",
            )
        request.trusted = True
        renamed = renamed_query(request.query) if request.method in ("GET", "HEAD") else None
        if renamed is not None:
            # A link or bookmark from before "regret" became "hint_gain": send the browser
            # to the same list under the new names, for good (301), rather than a 400.
            query = urllib.parse.urlencode(renamed, doseq=True)
            return Response.redirect(f"{urllib.parse.quote(request.path)}?{query}", status=301)
        csrf, set_cookie = guard.csrf_value(request)
        request.csrf = csrf
        request.owner = request.cookies.get("spade_csrf", "")
        handler, args = self.router.resolve(request.method, request.path)
        if request.method == "POST":
            request.owner = guard.check_post(request)
        bound = getattr(handler, "__self__", None) is self
        response = handler(request, **args) if bound else handler(self, request, **args)
        if set_cookie:
            response.cookies.append(set_cookie)
        return response

    def close(self) -> None:
        self.sessions.close_all()
        self.registry.close()


class _Handler(BaseHTTPRequestHandler):
    server: BrowserServer
    server_version = "spade-envs"
    sys_version = ""
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        self._serve("GET")

    def do_HEAD(self) -> None:
        self._serve("HEAD")

    def do_POST(self) -> None:
        self._serve("POST")

    def _not_allowed(self) -> None:
        self._serve(self.command)

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed

    def _parse(self, method: str) -> Request:
        split = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(split.path, errors="strict")
        if "\x00" in path or "\\" in path or any(part in (".", "..") for part in path.split("/")):
            raise HTTPError(400, f"Malformed path {path!r:.80}: no '.', '..' or backslashes.")
        headers = {k.lower(): v for k, v in self.headers.items()}
        form: dict[str, list[str]] = {}
        if method == "POST":
            try:
                length = int(headers.get("content-length", "0"))
            except ValueError:
                raise HTTPError(400, "Content-Length is not a number.") from None
            if length > MAX_BODY:
                raise HTTPError(413, f"The request body is over {MAX_BODY // 1024} KB.")
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/x-www-form-urlencoded":
                raise HTTPError(
                    400, "POST bodies must be HTML form data (application/x-www-form-urlencoded)."
                )
            body = self.rfile.read(length) if length > 0 else b""
            try:
                form = parse_qs(body.decode("utf-8"))
            except UnicodeDecodeError:
                raise HTTPError(400, "The form is not valid UTF-8.") from None
        return Request(
            method=method,
            path=path,
            query=parse_qs(split.query),
            headers=headers,
            cookies=parse_cookies(headers.get("cookie", "")),
            form=form,
            raw_path=self.path,
        )

    def _serve(self, method: str) -> None:
        app = self.server.app
        try:
            if method not in ("GET", "HEAD", "POST"):
                raise HTTPError(405, f"{method} is not supported.", {"Allow": "GET, HEAD, POST"})
            if not self.path.startswith("/"):
                raise HTTPError(400, "Malformed request target: it must start with '/'.")
            request = self._parse(method)
        except HTTPError as exc:
            response = app._error_page(exc.status, exc.message, trusted=False)
            response.headers.update(exc.headers)
        except UnicodeDecodeError:
            response = app._error_page(400, "The address is not valid UTF-8.", trusted=False)
        else:
            response = app.dispatch(request)
        self._send(response, head=method == "HEAD")

    def _send(self, response: Response, head: bool) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        headers = dict(response.headers)
        headers.setdefault("Cache-Control", "no-store")
        for name, value in headers.items():
            self.send_header(name, value)
        for cookie in response.cookies:
            self.send_header("Set-Cookie", cookie)
        body = response.body
        if isinstance(body, bytes):
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)
            return
        self.end_headers()  # a stream: HTTP/1.0 ends it by closing the connection
        try:
            if not head:
                for chunk in body:
                    self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away mid-download
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.app.config.quiet:
            sys.stderr.write(f"[{self.log_date_time_string()}] {format % args}\n")


class BrowserServer(ThreadingHTTPServer):
    """A ``ThreadingHTTPServer`` bound to one :class:`App`; ``url`` is where it listens."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, app: App):
        host = app.config.host
        if ":" in host.strip("[]"):
            self.address_family = socket.AF_INET6
        super().__init__((host.strip("[]"), app.config.port), _Handler)
        self.app = app
        self.port = int(self.server_address[1])
        app.guard = Guard(host, self.port, app.config.token)
        shown = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
        self.url = f"http://{shown}:{self.port}/"
        self._janitor_stop = threading.Event()
        self._janitor = threading.Thread(target=self._reap, name="spade-web-janitor", daemon=True)
        self._janitor.start()

    def _reap(self) -> None:
        while not self._janitor_stop.wait(10.0):
            try:
                self.app.sessions.reap()
            except Exception:  # keep reaping whatever one session did
                log.exception("reaping play sessions")

    def server_close(self) -> None:
        self._janitor_stop.set()
        super().server_close()
        self.app.close()


def make_server(config: ServeConfig, registry: Any = None, sandbox: Any = None) -> BrowserServer:
    """Bind a server for ``config`` (not yet serving; call ``serve_forever``)."""
    try:
        return BrowserServer(App(config, registry=registry, sandbox=sandbox))
    except OSError as exc:
        raise SpadeError(
            f"Cannot listen on {config.host}:{config.port}: {exc.strerror or exc}. Pick another "
            "--port (0 chooses a free one)."
        ) from exc


def serve(config: ServeConfig, *, out: TextIO | None = None, err: TextIO | None = None) -> None:
    """Load the catalog, bind, print the address and serve until interrupted.

    Args:
        config: The server's settings.
        out: Where the address is printed (default standard output).
        err: Where progress is printed (default standard error).
    """
    out = out or sys.stdout
    err = err or sys.stderr

    def say(stream: TextIO, text: str) -> None:
        stream.write(text + "\n")
        stream.flush()

    server = make_server(config)
    app = server.app
    started = time.perf_counter()
    say(err, "Reading the registry...")
    snap = app.catalog.refresh(
        progress=lambda n: say(err, f"  {n:,} versions") if n % 50_000 < 5000 else None
    )
    app.vectors.refresh(force=True)
    app.vectors.novelty()  # starts computing in the background
    threading.Thread(target=app.vectors.warm, name="spade-web-embedder", daemon=True).start()
    say(
        err,
        f"{len(snap):,} versions and {len(app.vectors):,} embeddings loaded in "
        f"{time.perf_counter() - started:.1f} s",
    )
    url = server.url
    if config.token:
        url += "?token=" + urllib.parse.quote(config.token)
    say(out, f"Serving the corpus browser at {url}")
    say(err, "Press Ctrl+C to stop.")
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        say(err, "Stopped.")
    finally:
        server.server_close()
