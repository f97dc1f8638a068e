"""The HTTP server around an :class:`~spade_envs.web.app.App`: uvicorn on a bound socket.

:func:`make_server` binds the socket first (so port 0 resolves to a real port, printed
and known to the Host check before the first request) and returns a
:class:`BrowserServer`; :meth:`BrowserServer.serve_forever` runs uvicorn on it (in any
thread), :meth:`BrowserServer.shutdown` asks it to stop and waits. :func:`serve` is what
``spade-envs serve`` runs.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import time
import urllib.parse
from typing import Any, TextIO

from ..error import SpadeError
from . import highlight
from .app import App
from .config import ServeConfig
from .security import Guard

__all__ = ["BrowserServer", "make_server", "serve"]

log = logging.getLogger("spade_envs.web")


class BrowserServer:
    """One :class:`App` served by uvicorn on a socket bound at construction.

    Attributes:
        app: The application state.
        port: The port it listens on.
        url: Its address (``http://127.0.0.1:<port>/``).
    """

    def __init__(self, app: App):
        host = app.config.host.strip("[]")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((host, app.config.port))
            self.socket.listen(128)
        except OSError:
            self.socket.close()
            raise
        self.socket.set_inheritable(True)
        self.app = app
        self.port = int(self.socket.getsockname()[1])
        app.guard = Guard(app.config.host, self.port, app.config.token)
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}/"
        self._uvicorn: Any = None
        self._stopped = threading.Event()
        self._janitor_stop = threading.Event()
        self._janitor = threading.Thread(target=self._reap, name="spade-web-janitor", daemon=True)
        self._janitor.start()
        self._closed = False

    def _reap(self) -> None:
        while not self._janitor_stop.wait(10.0):
            try:
                self.app.sessions.reap()
            except Exception:  # keep reaping whatever one session did
                log.exception("reaping play sessions")

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Serve until :meth:`shutdown` (or Ctrl+C in the main thread).

        Args:
            poll_interval: Kept for the ``socketserver`` signature; uvicorn polls itself.
        """
        import uvicorn

        config = uvicorn.Config(
            self.app.asgi,
            log_level="warning",
            access_log=not self.app.config.quiet,
            lifespan="off",
            server_header=False,
            date_header=True,
            timeout_keep_alive=5,
            # OpenEnv frames carry one action (at most a few thousand characters).
            ws_max_size=1 << 20,
        )
        self._uvicorn = uvicorn.Server(config)
        self.app.vectors.start_embedding()  # every version gets a vector, now and as they come
        try:
            self._uvicorn.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Ask the server to stop and wait (at most ``timeout`` seconds) until it has."""
        deadline = time.monotonic() + timeout
        while self._uvicorn is None and time.monotonic() < deadline:
            time.sleep(0.01)  # serve_forever is still starting in its thread
        if self._uvicorn is None:
            return
        self._uvicorn.should_exit = True
        self._stopped.wait(max(0.0, deadline - time.monotonic()))

    def server_close(self) -> None:
        """Close the socket, the play sessions and the registry (once)."""
        if self._closed:
            return
        self._closed = True
        self._janitor_stop.set()
        self.socket.close()
        self.app.close()


def make_server(config: ServeConfig, registry: Any = None, sandbox: Any = None) -> BrowserServer:
    """Bind a server for ``config`` (not yet serving; call ``serve_forever``)."""
    try:
        app = App(config, registry=registry, sandbox=sandbox)
    except ImportError as exc:
        raise SpadeError(
            f"The corpus browser needs its web stack ({exc.name or exc}): "
            "pip install 'spade-envs[web]'."
        ) from exc
    try:
        return BrowserServer(app)
    except OSError as exc:
        app.close()
        raise SpadeError(
            f"Cannot listen on {config.host}:{config.port}: {exc.strerror or exc}. Pick another "
            "--port (0 chooses a free one)."
        ) from exc


def one_blas_thread() -> bool:
    """Let each matrix product of this process run on one thread (where threadpoolctl,
    which ships with the usual numpy stacks, is installed); True when it was set.

    A page's products are small (the neighbours of one version, a semantic query: a few
    milliseconds), and requests already run in parallel on threads of their own. A BLAS
    that splits each product over every core keeps its idle threads spinning for the
    next one, and on a machine whose cores are busy (sandbox workers of example
    episodes, other requests) that spinning takes the CPU from the threads that serve
    pages: measured on two busy cores, one thread made an environment page's first view
    twice as fast (its highlighting too, which uses no BLAS at all).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    try:
        threadpool_limits(limits=1, user_api="blas")
    except Exception:  # an unusual BLAS: its own threading, as before
        log.debug("could not limit the BLAS threads", exc_info=True)
        return False
    return True


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

    one_blas_thread()
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
    threading.Thread(target=highlight.warm, name="spade-web-highlight", daemon=True).start()
    say(
        err,
        f"{len(snap):,} versions and {len(app.vectors):,} embeddings loaded in "
        f"{time.perf_counter() - started:.1f} s",
    )
    url = server.url
    if config.token:
        url += "?token=" + urllib.parse.quote(config.token)
    say(out, f"Serving the corpus browser at {url}")
    openenv = f"{server.url}api/v1/openenv/<Name>-v<N>"
    if config.token:  # OpenEnv's client takes only a URL: the token rides as its password
        openenv = openenv.replace("://", "://spade:<token>@", 1)
    say(err, f"OpenEnv clients: base_url {openenv}")
    say(err, "Press Ctrl+C to stop.")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        say(err, "Stopped.")
        server.server_close()
