"""The ``spade-envs serve`` command: the corpus browser (``spade_envs.web``).

``cli.py`` adds it to the main command group, which turns library errors into one
clear line. The web package is imported only when the command runs.
"""

from __future__ import annotations

import click

from .errors import SpadeCommand, options_checked
from .options import SuggestChoice

__all__ = ["WEB_COMMANDS"]


@click.command("serve", cls=SpadeCommand)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; anything but loopback needs --token.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="0 picks a free port.",
)
@click.option(
    "--token",
    envvar="SPADE_WEB_TOKEN",
    help="Access token every request must carry (16+ URL-safe characters; also SPADE_WEB_TOKEN). "
    "Required off loopback.",
)
@click.option(
    "--registry", "registry", help="Registry URL or SQLite file (default: SPADE_REGISTRY_URL)."
)
@click.option(
    "--runs",
    "runs_dir",
    type=click.Path(file_okay=False, exists=True),
    help="Directory of self-play runs (each a directory with metrics.jsonl).",
)
@click.option(
    "--embedder",
    type=SuggestChoice(["auto", "hashing", "minilm"], "embedder"),
    default="auto",
    show_default=True,
    help="Embedder of the semantic search; auto uses the one the stored embeddings came from.",
)
@click.option("--max-play-sessions", type=click.IntRange(1, 1000), default=8, show_default=True)
@click.option(
    "--play-idle",
    type=click.FloatRange(1, 86_400),
    default=600.0,
    show_default=True,
    help="Seconds before an idle play session closes.",
)
@click.option("--quiet", is_flag=True, help="Do not log every request.")
def serve(
    host: str,
    port: int,
    token: str | None,
    registry: str | None,
    runs_dir: str | None,
    embedder: str,
    max_play_sessions: int,
    play_idle: float,
    quiet: bool,
) -> None:
    """Browse, search, inspect, play and export the registry in a web browser.

    Read-only except play sessions, which run environments in the sandbox. Prints the
    address to open (with ?token=... when a token is set).

    \b
    Examples:
      spade-envs serve                               # http://127.0.0.1:8765/
      spade-envs serve --runs runs/ --port 0         # a free port, with self-play curves
      SPADE_WEB_TOKEN=$(python -c 'import secrets; print(secrets.token_urlsafe())') \\
        spade-envs serve --host 0.0.0.0              # reachable from elsewhere, token required
    """
    from ..web.config import ServeConfig
    from ..web.server import serve as run

    with options_checked():  # host, token, --registry (a URL or a SQLite path), ...
        config = ServeConfig(
            host=host,
            port=port,
            token=token,
            registry_url=registry,
            runs_dir=runs_dir,
            embedder=embedder,
            max_play_sessions=max_play_sessions,
            play_idle_s=play_idle,
            quiet=quiet,
        )
    from .registry import require_registry

    # The browser only reads the registry: a SQLite file that does not exist is a typo
    # (a new one would show just the seeds), not a registry to create.
    require_registry(config.registry_url)
    run(config)


WEB_COMMANDS = (serve,)
