"""The corpus browser: browse, search, inspect, play and export environments in a browser.

Started by ``spade-envs serve``: a FastAPI (Starlette) application served by uvicorn,
with pages rendered by Jinja2 (autoescaped; inline SVG charts, no script or style
inline, nothing fetched from elsewhere) and a JSON API under ``/api/v1`` described at
``/openapi.json``. Listens on 127.0.0.1 by default; any other address needs a token.
Read-only except play sessions, which run environments only in the sandbox.

Pages: the overview (``/``), the list with filters, search and export (``/envs``), one
environment (``/env/<Name>-v<N>``), playing it (``/env/<Name>-v<N>/play``), the map of
embeddings (``/map``) and self-play runs (``/runs``).

Importing this package is light; the server's modules load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .app import App
    from .config import ServeConfig
    from .server import BrowserServer, make_server, serve

_LAZY = {
    "App": "app",
    "BrowserServer": "server",
    "make_server": "server",
    "serve": "server",
    "ServeConfig": "config",
}


__getattr__ = lazy_exports(__name__, _LAZY, globals())


__all__ = ["App", "BrowserServer", "ServeConfig", "make_server", "serve"]
