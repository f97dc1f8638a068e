"""Where the registry is: the one resolver of registry URLs (no SQLAlchemy import).

Every entry point (the library's ``Registry()``, ``gym.make``, the CLI, the corpus
browser) turns what the user gave into a SQLAlchemy URL with :func:`resolve_url`.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_url", "resolve_url", "sqlite_path"]

#: The environment variable naming the registry (a URL, or a SQLite file path).
ENV_VAR = "SPADE_REGISTRY_URL"


def resolve_url(value: str | os.PathLike[str] | None = None) -> str:
    """The registry URL for ``value``.

    Args:
        value: A SQLAlchemy URL (``sqlite:///...``, ``postgresql+psycopg://...``), a
            SQLite file path (made absolute), or None: ``SPADE_REGISTRY_URL`` (itself a
            URL or a path), else ``registry.db`` in the user's data directory
            (``$XDG_DATA_HOME/spade-envs``, default ``~/.local/share/spade-envs``).

    Returns:
        A URL SQLAlchemy accepts.
    """
    if value is None or str(value) == "":
        value = os.environ.get(ENV_VAR) or None
        if value is None:
            base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
            return f"sqlite:///{base / 'spade-envs' / 'registry.db'}"
    text = os.fspath(value)
    if "://" in text:
        return text
    return f"sqlite:///{Path(text).expanduser().resolve()}"


def default_url() -> str:
    """``SPADE_REGISTRY_URL``, else a SQLite file in the user's data directory."""
    return resolve_url(None)


def sqlite_path(url: str) -> str | None:
    """The file of a ``sqlite:///`` URL, or None for anything else (``:memory:`` too)."""
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///") :].split("?", 1)[0]
    return path if path and path != ":memory:" else None
