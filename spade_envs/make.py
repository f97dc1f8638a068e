"""``spade_envs.make``: an environment instance from a seed name or a file path (the
runtime's door, :func:`spade_envs.runtime.door.make`)."""

from __future__ import annotations

from .runtime.door import make, resolve

__all__ = ["make", "resolve"]
