"""Where packages exported before the runtime existed look for their entry point.

``spade-envs export --format package`` used to write ``from spade_envs.registry.gym_ids
import build_env`` into the packages it made; those packages are installed in users'
environments and cannot be re-written. :func:`build_env` keeps them working by handing
over to the runtime's door (:func:`spade_envs.runtime.open_source`), which is where
environments are opened now; nothing else in the package uses this module. It is the one
import of the runtime from ``registry/``, made only when such a package opens an
environment (``tests/runtime/test_door.py`` allows exactly this one).
"""

from __future__ import annotations

from typing import Any

__all__ = ["build_env"]


def build_env(
    source: str,
    kind: str,
    *,
    filename: str,
    isolation: str = "sandbox",
    seat: int = 0,
    opponent: str = "best",
    render_mode: str | None = None,
    trust_code: bool = False,
    **knobs: Any,
) -> Any:
    """The old entry point of exported packages: :func:`spade_envs.runtime.open_source`."""
    from ..runtime.door import open_source

    del kind  # the loaded class decides whether it is a game
    return open_source(
        source,
        env_id=filename,
        knobs=knobs,
        seat=seat,
        opponent=opponent,
        isolation=isolation,
        render_mode=render_mode,
        trust_code=trust_code,
    )
