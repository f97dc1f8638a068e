"""``gym.make("spade/<Name>-v<N>")``: registered environments as Gymnasium IDs.

Registering every stored version with Gymnasium at import time would make
``import spade_envs`` slow on a large corpus. Instead, :func:`install` (run by
``import spade_envs``) wraps Gymnasium's spec lookup: the first time a ``spade/`` ID
is asked for, its specs are added from the SQL registry, then Gymnasium carries on
as usual, so its own errors (with close-match suggestions and the versions that
exist) still apply. A seed environment is registered on first use.

The spec's entry point rebuilds the environment from its ID, so subprocess workers
of ``AsyncVectorEnv``/``make_vec`` can recreate it (runtime registrations are lost
there). Environments run in the sandbox unless ``isolation="none"`` is passed.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from .ids import NAMESPACE

__all__ = ["build_env", "install", "make_env", "shared_registry"]

_ENTRY_POINT = "spade_envs.registry.gym_ids:make_env"


@functools.lru_cache(maxsize=4)
def _registry_for(url: str) -> Any:
    from .store import Registry

    return Registry(url)


def shared_registry() -> Any:
    """The process-wide :class:`Registry` at :func:`default_url` (opened once per URL)."""
    from .store import default_url

    return _registry_for(default_url())


def _register_spec(gym_id: str) -> None:
    import gymnasium as gym

    if gym_id not in gym.registry:
        gym.register(id=gym_id, entry_point=_ENTRY_POINT, kwargs={"env_id": gym_id})


def _prepare(gym_id: str) -> None:
    """Add the specs Gymnasium needs to resolve (or to explain) ``gym_id``."""
    from gymnasium.envs.registration import parse_env_id as gym_parse

    from ..seeds import seed_classes, seed_source

    try:
        namespace, name, _version = gym_parse(gym_id)
    except Exception:
        return  # let Gymnasium report the malformed ID itself
    if namespace != NAMESPACE:
        return
    from .fastread import read_versions
    from .store import default_url

    stored = read_versions(default_url(), name)
    if stored:  # the common case, answered without opening the full store
        for version in stored:
            _register_spec(f"{NAMESPACE}/{name}-v{version}")
        return
    registry = shared_registry()
    known = registry.versions(name)
    if not known and name in seed_classes():
        from ..core.metadata import describe

        registry.register(seed_source(name), describe(seed_classes()[name]), status="validated")
        known = registry.versions(name)
    for existing in known:
        _register_spec(existing)
    if not known:  # offer close names so Gymnasium's NameNotFound can suggest them
        for close in difflib.get_close_matches(name, registry.names(), n=3, cutoff=0.6):
            for existing in registry.versions(close):
                _register_spec(existing)


def install() -> None:
    """Make Gymnasium resolve ``spade/`` IDs from the registry (idempotent, cheap)."""
    from gymnasium.envs import registration

    if getattr(registration._find_spec, "_spade_envs", False):
        return
    original = registration._find_spec

    def _find_spec(env_id: str) -> Any:
        name = env_id.split(":", 1)[-1] if isinstance(env_id, str) else ""
        if name.startswith(f"{NAMESPACE}/") and name not in registration.registry:
            _prepare(name)
        return original(env_id)

    _find_spec._spade_envs = True  # type: ignore[attr-defined]
    registration._find_spec = _find_spec


_stored_cache: dict[tuple[str, str], tuple[str, str]] = {}


def _stored(env_id: str) -> tuple[str, str]:
    """``(kind, source)`` of a version; cached, since a stored version never changes."""
    from ..error import UnknownEnvironmentError
    from .fastread import read_env
    from .ids import parse_env_id
    from .store import default_url

    url = default_url()
    found = _stored_cache.get((url, env_id))
    if found is not None:
        return found
    name, version = parse_env_id(env_id)
    found = read_env(url, name, version)
    if found is None:
        try:
            record = shared_registry().get(env_id)
        except UnknownEnvironmentError:
            # The spec may come from another process or registry URL (e.g. a vector-env
            # worker); seeds are still registered on first use here.
            _prepare(env_id)
            record = shared_registry().get(env_id)
        found = (record.kind, record.source)
    if len(_stored_cache) < 4096:  # bounded: a designer loop makes ever new versions
        _stored_cache[(url, env_id)] = found
    return found


def make_env(
    env_id: str,
    isolation: str = "sandbox",
    seat: int = 0,
    opponent: str = "best",
    render_mode: str | None = None,
    **knobs: Any,
) -> Any:
    """Gymnasium entry point: build ``env_id`` from the registry.

    Args:
        env_id: ``spade/<Name>-v<N>``.
        isolation: ``"sandbox"`` (default) or ``"none"`` (trusted, in-process).
        seat: For games, the seat the agent plays (the others play ``opponent``).
        opponent: For games: ``"best"`` or ``"random"``.
        render_mode: ``"ansi"`` or None.
        **knobs: Difficulty knobs.
    """
    kind, source = _stored(env_id)
    return build_env(
        source,
        kind,
        filename=env_id,
        isolation=isolation,
        seat=seat,
        opponent=opponent,
        render_mode=render_mode,
        **knobs,
    )


def build_env(
    source: str,
    kind: str,
    *,
    filename: str,
    isolation: str = "sandbox",
    seat: int = 0,
    opponent: str = "best",
    render_mode: str | None = None,
    **knobs: Any,
) -> Any:
    """Build an environment from its code: in the sandbox, or trusted in-process.

    Shared by :func:`make_env` and the packages that ``spade-envs export --format
    package`` writes.

    Args:
        source: The environment's module.
        kind: ``text``, ``tool`` or ``game`` (a game is played from ``seat``).
        filename: Shown in tracebacks and errors.
        isolation: ``"sandbox"`` (default) or ``"none"`` (trusted, in-process).
        seat: For games, the seat the agent plays.
        opponent: For games: ``"best"`` or ``"random"``.
        render_mode: ``"ansi"`` or None.
        **knobs: Difficulty knobs.
    """
    is_game = kind == "game"
    if isolation == "none":
        from ..core.game_env import GameSeatEnv
        from ..core.loader import load_env_class

        env = load_env_class(source, filename=filename)(render_mode=render_mode, **knobs)
        return GameSeatEnv(env, seat=seat, opponent=opponent) if is_game else env
    from ..sandbox import open_env

    return open_env(
        source,
        filename=filename,
        knobs=knobs,
        seat=seat if is_game else None,
        opponent=opponent,
        isolation=isolation,
        render_mode=render_mode,
    )
