"""The browser application: its state, its routes and its error answers.

:class:`App` owns the registry connection, the catalog, the stored vectors, the play
sessions and the runs directory. :meth:`App.asgi` is the FastAPI application around it:
the pages (server-rendered by Jinja2, left out of the OpenAPI description), the JSON API
under ``/api/v1`` (:mod:`~spade_envs.web.api`), ``/openapi.json``, the static files, all
behind :class:`~spade_envs.web.middleware.GuardMiddleware`. Errors become pages (or JSON
under the API) with the right status: 400 for a bad parameter, 404 for an unknown
environment with close matches, 500 without a traceback.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.staticfiles import StaticFiles

from ..error import SpadeError, UnknownEnvironmentError, suggest
from . import pages, pages_env, pages_runs
from .catalog import Catalog
from .config import ServeConfig, registry_url
from .examples import ExampleEpisodes
from .middleware import GuardMiddleware, is_api, read_form
from .openenv import OpenEnvServer
from .openenv import router as openenv_router
from .params import HTTPError
from .play import PlaySessions
from .play_runner import PlayLimits, PlayRunner
from .render import templates
from .runs import RunsDir
from .search import Searcher
from .security import Guard
from .vectors import Vectors

__all__ = ["App"]

log = logging.getLogger("spade_envs.web")

_TITLES = {400: "Bad request", 401: "Token required", 403: "Forbidden", 404: "Not found",
           405: "Method not allowed", 413: "Too large", 415: "Unsupported media type",
           500: "Server error", 501: "Not available", 503: "Busy", 410: "Session ended",
           429: "Too many requests", 504: "Environment timed out"}  # fmt: skip

#: Page routes: (path, handler, methods). A handler is ``(app, request, **path) -> Response``.
_PAGES: tuple[tuple[str, Callable[..., Response], tuple[str, ...]], ...] = (
    ("/", pages.overview_page, ("GET",)),
    ("/envs", pages.list_page, ("GET",)),
    ("/export", pages.export_page, ("GET",)),
    ("/map", pages.map_page, ("GET",)),
    ("/runs", pages_runs.runs_page, ("GET",)),
    ("/runs/{name:run}", pages_runs.run_page, ("GET",)),
    ("/env/spade/{rest:spadeform}", pages_env.spade_form, ("GET",)),
    ("/env/{slug:slug}", pages_env.env_page, ("GET",)),
    ("/env/{slug:slug}/source.py", pages_env.source_download, ("GET",)),
    ("/env/{slug:slug}/diff", pages_env.diff_page, ("GET",)),
    ("/env/{slug:slug}/package.zip", pages_env.package_download, ("GET",)),
    ("/env/{slug:slug}/play", pages_env.play_form, ("GET",)),
    ("/play", pages_env.play_start, ("POST",)),
    ("/play/{sid:sid}", pages_env.play_view, ("GET",)),
    ("/play/{sid:sid}", pages_env.play_action, ("POST",)),
)


def _register_convertors() -> None:
    """Path parameters with the shapes the pages accept (anything else is a 404)."""
    from starlette.convertors import CONVERTOR_TYPES, StringConvertor

    shapes = {
        "slug": "[A-Za-z0-9]+-v[0-9]+",
        # A page of a version named as spade/Name-vN: the slug and one of its subpages.
        "spadeform": "[A-Za-z0-9]+-v[0-9]+(?:/(?:source\\.py|diff|package\\.zip|play))?",
        "run": "[A-Za-z0-9.][A-Za-z0-9._-]{0,127}",
        "sid": "[A-Za-z0-9_-]{1,64}",
    }
    for name, pattern in shapes.items():
        if name not in CONVERTOR_TYPES:
            convertor = type(f"{name.title()}Convertor", (StringConvertor,), {"regex": pattern})
            CONVERTOR_TYPES[name] = convertor()


class App:
    """Everything one browser server serves: the registry, its catalog and vectors, the
    play sessions, the example episodes of the environment cards and the runs directory.

    Args:
        config: The server's settings.
        registry: An open registry (default: the one ``config.registry_url`` names).
        sandbox: Sandbox limits of play sessions (default ``SandboxConfig()``).
    """

    def __init__(self, config: ServeConfig, registry: Any = None, sandbox: Any = None):
        from ..registry import Registry

        self.config = config
        self.registry = (  # a registry it opens gets the packaged seeds once
            registry
            if registry is not None
            else Registry(registry_url(config.registry_url), seeds=True)
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
            call_s=config.play_call_s,
            start_s=config.play_start_s,
        )
        # Environment calls of play sessions: threads of their own, deadlines, caps.
        self.play = PlayRunner(
            self.sessions,
            PlayLimits(
                call_s=config.play_call_s,
                start_s=config.play_start_s,
                per_client=config.play_calls_per_client,
                total=config.play_calls_total,
            ),
        )
        # OpenEnv clients: each connection may hold one play session; twice as many
        # connections as sessions lets a client reconnect while its old socket closes.
        self.openenv = OpenEnvServer(
            max_connections=2 * config.max_play_sessions, idle_s=config.play_idle_s
        )
        self.examples = ExampleEpisodes(sandbox)
        self.runs = RunsDir(config.runs_dir)
        self.guard = Guard(config.host, config.port, config.token)
        self.started = time.time()
        self.asgi = self._build_asgi()

    # ----- rendering ----------------------------------------------------------------------
    def footer(self) -> dict[str, Any]:
        """What the footer of every trusted page shows."""
        snap = self.catalog.snapshot()
        progress = self.vectors.embedding_progress()
        embedding = ""
        if progress.error:
            embedding = f"embedding failed: {progress.error}"
        elif progress.embedded < progress.total:
            embedding = f"embedded {progress.embedded:,} of {progress.total:,}"
        return {
            "registry": self.registry.engine.url.render_as_string(hide_password=True),
            "versions": len(snap),
            "age": max(0.0, time.time() - snap.refreshed_at),
            "error": self.catalog.error,
            "embedding": embedding,
        }

    def render(
        self,
        template: str,
        title: str,
        *,
        active: str = "",
        query: str = "",
        refresh_s: int | None = None,
        status: int = 200,
        **context: Any,
    ) -> HTMLResponse:
        """A whole page from ``template`` (which extends ``base.html``)."""
        html = (
            templates()
            .get_template(template)
            .render(
                title=title,
                active=active,
                query=query,
                refresh_s=refresh_s,
                footer=self.footer(),
                app=self,
                **context,
            )
        )
        return HTMLResponse(html, status_code=status)

    def error_response(
        self, request: Request, status: int, message: str, trusted: bool = True
    ) -> Response:
        """An error page, or JSON under the API; ``trusted`` False (before the host and
        token checks passed) leaves out the footer, which names the registry."""
        if is_api(request.url.path):
            return JSONResponse(
                {"error": {"status": status, "message": message}}, status_code=status
            )
        title = _TITLES.get(status, "Error")
        footer: dict[str, Any] | None = None
        if trusted:
            try:
                footer = self.footer()
            except Exception:  # the catalog itself may be what failed
                footer = None
        html = (
            templates()
            .get_template("error.html")
            .render(
                title=title, message=message, active="", query="", refresh_s=None, footer=footer
            )
        )
        return HTMLResponse(html, status_code=status)

    # ----- the application ----------------------------------------------------------------
    def _page_route(self, path: str, handler: Callable[..., Response], methods: tuple[str, ...]):
        async def endpoint(request: Request) -> Response:
            if request.method == "POST":
                form, owner = await read_form(request, self.guard)
                request.state.form, request.state.owner = form, owner
            if inspect.iscoroutinefunction(handler):  # the play POSTs: they never block
                return await handler(self, request, **request.path_params)
            return await run_in_threadpool(handler, self, request, **request.path_params)

        endpoint.__name__ = handler.__name__
        return Route(path, endpoint, methods=list(methods), include_in_schema=False)

    def _build_asgi(self) -> FastAPI:
        from . import api

        _register_convertors()
        asgi = FastAPI(
            title="spade-envs corpus API",
            version="1",
            description=(
                "The environment corpus of a spade-envs registry: list, search, inspect, "
                "export and play environment versions. Pages for people live at the same "
                "server's other paths."
            ),
            openapi_url="/openapi.json",
            docs_url=None,
            redoc_url=None,
        )
        asgi.state.spade = self
        for path, handler, methods in _PAGES:
            asgi.router.routes.append(self._page_route(path, handler, methods))
        asgi.add_api_route("/healthz", self._health, methods=["GET"], include_in_schema=False)
        asgi.include_router(api.router)
        asgi.include_router(openenv_router)
        asgi.mount("/static", StaticFiles(packages=[("spade_envs.web", "static")]), "static")
        asgi.add_exception_handler(SpadeError, self._on_exception)
        asgi.add_exception_handler(StarletteHTTPException, self._on_exception)
        asgi.add_exception_handler(RequestValidationError, self._on_exception)
        asgi.add_middleware(
            GuardMiddleware,
            guard=lambda: self.guard,
            on_error=self.error_response,
            on_crash=self.crash_response,
        )
        return asgi

    def _health(self) -> PlainTextResponse:
        snap = self.catalog.snapshot()
        return PlainTextResponse(f"ok {len(snap)} versions, {len(self.sessions)} play sessions\n")

    async def _on_exception(self, request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPError):
            response = self.error_response(request, exc.status, exc.message)
            response.headers.update(exc.headers)
            return response
        if isinstance(exc, UnknownEnvironmentError):
            where = (
                "the list at /api/v1/envs"
                if is_api(request.url.path)
                else ("the Environments page")
            )
            hint = suggest(exc.name, exc.known)
            return self.error_response(
                request,
                404,
                f"{exc.name!r} is not in this registry.{hint} Search for it on {where}.",
            )
        if isinstance(exc, SpadeError):
            return self.error_response(request, 400, str(exc))
        if isinstance(exc, RequestValidationError):
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error.get('loc', ()))}: {error.get('msg', '')}"
                for error in exc.errors()
            )
            return self.error_response(request, 400, f"Bad request: {problems[:500]}.")
        if isinstance(exc, StarletteHTTPException):
            message = {
                404: f"There is no page at {request.url.path}.",
                405: f"{request.method} is not supported here.",
            }.get(exc.status_code, str(exc.detail))
            response = self.error_response(request, exc.status_code, message)
            response.headers.update(exc.headers or {})
            if "allow" in response.headers:  # Starlette's order is a set's: make it stable
                allowed = {m.strip() for m in response.headers["allow"].split(",")}
                order = ("GET", "HEAD", "POST", "DELETE")
                response.headers["allow"] = ", ".join(m for m in order if m in allowed)
            return response
        return self.crash_response(request, exc)

    def crash_response(self, request: Request, exc: BaseException) -> Response:
        """A 500 for an unexpected error: logged with its traceback, shown without it."""
        log.error("error serving %s %s", request.method, request.url.path, exc_info=exc)
        return self.error_response(
            request, 500, "Something went wrong on the server; the log has the details."
        )

    def close(self) -> None:
        """Stop the background embedding, close the play sessions, the example player
        and the registry."""
        self.vectors.stop_embedding()
        self.examples.close()
        self.play.close()
        self.sessions.close_all()
        self.registry.close()
