"""The corpus browser's configuration: one documented dataclass, checked when made."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..error import SpadeError
from ..registry.urls import resolve_url, sqlite_path
from .security import is_loopback

__all__ = ["ServeConfig", "registry_url"]

_TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]{16,256}")


def registry_url(value: str | None) -> str | None:
    """A registry URL from a URL or a SQLite file path, by the registry's one resolver
    (:func:`spade_envs.registry.urls.resolve_url`); None stays None (the default registry)."""
    return None if value is None else resolve_url(value)


@dataclass(frozen=True)
class ServeConfig:
    """How ``spade-envs serve`` runs.

    Attributes:
        host: Address to listen on. Loopback (``127.0.0.1``, the default) is reachable
            only from this machine; any other address requires ``token``.
        port: Port to listen on; 0 picks a free one (printed at start).
        token: Access token every request must carry (header, cookie or ``?token=``);
            16 to 256 URL-safe characters. Required off loopback.
        registry_url: Registry URL or SQLite path; None uses ``SPADE_REGISTRY_URL`` or
            the default file.
        runs_dir: A directory of self-play run directories (each with ``metrics.jsonl``)
            for the Runs page; None shows none.
        embedder: Embedder of the semantic search: ``auto`` (the stored embeddings'
            own), ``hashing`` or ``minilm``.
        max_play_sessions: Play sessions (sandboxed environments) open at once.
        play_idle_s: A play session without a request for this long is closed.
        play_max_s: A play session is closed this long after it started.
        play_call_s: Seconds one environment call of a play session (reset, step, hint,
            solution) may take. Past it the session is ended with a clear error (504)
            and its sandbox worker killed; the sandbox's call timeout is capped at it.
        play_start_s: Seconds opening a play session (a sandbox worker loading the code,
            then the first reset) may take; the sandbox's load timeout is capped at it.
        play_calls_per_client: Environment calls one client (a browser's cookie, or the
            address of an API client) may have running at once; one more answers 429
            at once, without waiting.
        play_calls_total: Environment calls running at once across all clients: the
            size of the play thread pool, which is separate from the one serving pages.
        refresh_s: Lists and counts follow the registry within about this many seconds.
        map_points: Most points drawn on the map (a seeded sample of the filtered set).
        seed: Seed of the map's sample and of the approximate novelty clustering.
        quiet: Do not log each request to standard error.
    """

    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    registry_url: str | None = None
    runs_dir: str | None = None
    embedder: str = "auto"
    max_play_sessions: int = 8
    play_idle_s: float = 600.0
    play_max_s: float = 3600.0
    play_call_s: float = 5.0
    play_start_s: float = 30.0
    play_calls_per_client: int = 4
    play_calls_total: int = 16
    refresh_s: float = 5.0
    map_points: int = 2000
    seed: int = 0
    quiet: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.host, str) or not self.host.strip():
            raise SpadeError("host must be an address such as 127.0.0.1.")
        if not isinstance(self.port, int) or not 0 <= self.port <= 65535:
            raise SpadeError(
                f"port must be between 0 and 65535 (0: any free port); got {self.port!r}."
            )
        if self.token is not None and not _TOKEN.fullmatch(self.token):
            raise SpadeError(
                "token must be 16 to 256 URL-safe characters (letters, digits, . _ ~ + / = -); "
                "make one with: python -c 'import secrets; print(secrets.token_urlsafe())'."
            )
        if self.token is None and not is_loopback(self.host):
            raise SpadeError(
                f"Refusing to listen on {self.host} without a token: anyone who can reach it "
                "could read the corpus and run environments. Pass --token (or set "
                "SPADE_WEB_TOKEN), or listen on 127.0.0.1."
            )
        url = registry_url(self.registry_url)
        path = sqlite_path(url) if url is not None else None
        if path is not None and not Path(path).is_file() and not Path(path).parent.is_dir():
            raise SpadeError(
                f"There is no directory {Path(path).parent} for the registry {path}: check the "
                "path, or create the directory (a new registry starts with the seeds)."
            )
        if self.runs_dir is not None and not Path(self.runs_dir).is_dir():
            raise SpadeError(f"runs_dir {self.runs_dir!r} is not a directory.")
        if self.embedder not in ("auto", "hashing", "minilm"):
            raise SpadeError(f"embedder must be auto, hashing or minilm; got {self.embedder!r}.")
        for name in ("max_play_sessions", "map_points"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 100_000:
                raise SpadeError(f"{name} must be a whole number from 1 to 100,000; got {value!r}.")
        for name in ("play_calls_per_client", "play_calls_total"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 1000:
                raise SpadeError(f"{name} must be a whole number from 1 to 1,000; got {value!r}.")
        if self.play_calls_per_client > self.play_calls_total:
            raise SpadeError(
                f"play_calls_per_client ({self.play_calls_per_client}) cannot exceed "
                f"play_calls_total ({self.play_calls_total})."
            )
        for name in ("play_idle_s", "play_max_s", "refresh_s", "play_call_s", "play_start_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0:
                raise SpadeError(f"{name} must be a positive number of seconds; got {value!r}.")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise SpadeError(f"seed must be a whole number >= 0; got {self.seed!r}.")

    def to_dict(self) -> dict[str, Any]:
        """The settings, with the token hidden."""
        from dataclasses import asdict

        data = asdict(self)
        data["token"] = "***" if self.token else None
        return data
