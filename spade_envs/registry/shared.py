"""The process-wide registry that user-facing entry points open (``gym.make``, the CLI's
defaults, rollouts without an explicit registry)."""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["shared_registry"]


@functools.lru_cache(maxsize=4)
def _registry_for(url: str) -> Any:
    from .store import Registry

    return Registry(url, seeds=True)


def shared_registry() -> Any:
    """The :class:`~spade_envs.registry.Registry` at :func:`~spade_envs.registry.urls.default_url`,
    opened once per URL, with the packaged seeds (it serves user-facing entry points)."""
    from .urls import default_url

    return _registry_for(default_url())
