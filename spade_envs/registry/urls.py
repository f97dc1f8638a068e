"""Where the registry is: the one resolver of registry URLs (no SQLAlchemy import).

Every entry point (the library's ``Registry()``, ``gym.make``, the CLI, the corpus
browser) turns what the user gave into a SQLAlchemy URL with :func:`resolve_url`, and
:func:`prepare_location` checks a SQLite file's directory before the database is opened:
the per-user data directory is created on purpose, any other missing directory is an
error (a typo'd path would otherwise become a new, empty registry somewhere unexpected).
:func:`require_existing` goes one step further for commands that only read a registry:
a SQLite file that does not exist is an error there too (naming close matches), so a
typo'd file name does not read as an empty registry.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..error import SpadeError

__all__ = [
    "ENV_VAR",
    "RegistryLocationError",
    "data_dir_url",
    "default_url",
    "prepare_location",
    "require_existing",
    "resolve_url",
    "sqlite_path",
]

#: The environment variable naming the registry (a URL, or a SQLite file path).
ENV_VAR = "SPADE_REGISTRY_URL"

#: URL schemes that name PostgreSQL without a driver; they mean psycopg (version 3), the
#: driver the ``[postgres]`` extra installs (SQLAlchemy's default would be psycopg2).
_BARE_POSTGRES = ("postgresql://", "postgres://")


class RegistryLocationError(SpadeError):
    """The registry's location cannot be used (e.g. its directory does not exist)."""


def data_dir_url() -> str:
    """The per-user default registry: ``registry.db`` in ``$XDG_DATA_HOME/spade-envs``
    (default ``~/.local/share/spade-envs``); its directory is created when missing."""
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{(base / 'spade-envs' / 'registry.db').expanduser().resolve()}"


def resolve_url(value: str | os.PathLike[str] | None = None) -> str:
    """The registry URL for ``value``.

    Args:
        value: A SQLAlchemy URL (``sqlite:///...``, ``postgresql+psycopg://...``), a
            SQLite file path (``/data/reg.db``, ``reg.db``, ``~/reg.db``; made absolute),
            or None: ``SPADE_REGISTRY_URL`` (itself a URL or a path), else
            :func:`data_dir_url`. A SQLite URL's path is made absolute too (``~``
            expanded), and ``postgresql://``/``postgres://`` without a driver mean
            ``postgresql+psycopg://`` (the ``[postgres]`` extra's driver).

    Returns:
        A URL SQLAlchemy accepts.

    Example:
        ``resolve_url("~/reg.db") == f"sqlite:///{Path.home()}/reg.db"``
    """
    if value is None or str(value) == "":
        value = os.environ.get(ENV_VAR) or None
        if value is None:
            return data_dir_url()
    text = os.fspath(value).strip()
    for bare in _BARE_POSTGRES:
        if text.startswith(bare):
            return "postgresql+psycopg://" + text[len(bare) :]
    if text.startswith("sqlite:///"):
        path, sep, query = text[len("sqlite:///") :].partition("?")
        if path and path != ":memory:" and not path.startswith("file:"):
            return f"sqlite:///{_absolute(path)}{sep}{query}"
        return text
    if "://" in text:
        return text
    return f"sqlite:///{_absolute(text)}"


def _absolute(path: str) -> Path:
    return Path(path).expanduser().resolve()


def default_url() -> str:
    """``SPADE_REGISTRY_URL``, else a SQLite file in the user's data directory."""
    return resolve_url(None)


def sqlite_path(url: str) -> str | None:
    """The file of a ``sqlite:///`` URL, or None for anything else (``:memory:`` too)."""
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///") :].split("?", 1)[0]
    return path if path and path != ":memory:" else None


def prepare_location(url: str) -> None:
    """Check that a SQLite registry's directory exists; create only the default one.

    Args:
        url: A URL from :func:`resolve_url`. Anything but a ``sqlite:///`` file passes.

    Raises:
        RegistryLocationError: The file's directory does not exist (and is not the
            per-user data directory), or is not a directory, or the data directory
            cannot be created.
    """
    path = sqlite_path(url)
    if path is None or path.startswith("file:"):
        return
    parent = Path(path).parent
    if parent.is_dir():
        return
    if url == data_dir_url():
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RegistryLocationError(
                f"Cannot create the registry directory {parent}: {exc}. Set {ENV_VAR} to a "
                "writable location (a file path such as ~/spade/registry.db, or a URL)."
            ) from exc
        return
    if parent.exists():
        raise RegistryLocationError(
            f"Cannot open the registry {path}: {parent} is not a directory. Choose another "
            f"path ({ENV_VAR}, or `spade-envs serve --registry`)."
        )
    raise RegistryLocationError(
        f"Cannot open the registry {path}: the directory {parent} does not exist. Create it "
        f"first (mkdir -p '{parent}') or choose another path ({ENV_VAR}, or `serve --registry`); "
        "a missing directory is not created, so a typo does not start a new, empty registry."
    )


def require_existing(url: str, *, create_with: str = "") -> None:
    """Check that a registry a command only reads already exists.

    Opening a SQLite file that does not exist creates an empty registry, which is right
    for the first write but misleading for a read: ``spade-envs list`` on a typo'd
    ``SPADE_REGISTRY_URL`` would say "0 environment version(s)". The per-user default
    (:func:`data_dir_url`) is exempt: its first use creates it on purpose.

    Args:
        url: A URL from :func:`resolve_url`. Anything but a ``sqlite:///`` file passes
            (a server database exists or fails to connect on its own).
        create_with: How to create it instead (a command), for the message.

    Raises:
        RegistryLocationError: The SQLite file does not exist; the message names it and
            any ``*.db`` files in the same directory whose names are close.
    """
    path = sqlite_path(url)
    if path is None or path.startswith("file:") or url == data_dir_url():
        return
    file = Path(path)
    if file.exists():
        return
    prepare_location(url)  # a missing directory: its own, more precise message
    close = _close_registries(file)
    if close:
        hint = f" Did you mean {', '.join(repr(str(c)) for c in close)}?"
    else:
        others = sorted(p.name for p in _registry_files(file.parent))
        hint = (
            f" {file.parent} holds {_listed(others)}."
            if others
            else f" {file.parent} holds no *.db file."
        )
    create = (
        create_with or "a command that writes (spade-envs register FILE, spade-envs import PATH)"
    )
    raise RegistryLocationError(
        f"There is no registry at {file}: the file does not exist.{hint} Check {ENV_VAR} "
        f"(or the path you gave); to start a new registry there, run {create}. A missing "
        "file is not created by a command that only reads, so a typo does not show an "
        "empty registry."
    )


def _registry_files(directory: Path) -> list[Path]:
    """The ``*.db`` files of ``directory`` (none when it cannot be read)."""
    try:
        return [p for p in directory.glob("*.db") if p.is_file()]
    except OSError:
        return []


def _close_registries(file: Path) -> list[Path]:
    """Existing files beside ``file`` whose names are close to its name, closest first:
    the ``*.db`` files, and those with ``file``'s own suffix (``reg.sqlite``)."""
    from ..error import close_matches

    candidates = {p.name: p for p in _registry_files(file.parent)}
    if file.suffix and file.suffix != ".db":
        try:
            candidates.update(
                (p.name, p) for p in file.parent.glob(f"*{file.suffix}") if p.is_file()
            )
        except OSError:
            pass
    return [candidates[name] for name in close_matches(file.name, candidates)]


def _listed(names: list[str], most: int = 5) -> str:
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"
