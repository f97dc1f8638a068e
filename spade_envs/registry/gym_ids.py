"""``gym.make("spade/<Name>-v<N>")``: registered environments as Gymnasium IDs.

Registering every stored version with Gymnasium at import time would make
``import spade_envs`` slow on a large corpus. Instead, :func:`install` (run by
``import spade_envs``) wraps Gymnasium's spec lookup: the first time a ``spade/`` ID
is asked for, its specs are added from the SQL registry, then Gymnasium carries on
as usual, so its own errors (with close-match suggestions and the versions that
exist) still apply. A seed environment is registered on first use.

The spec's entry point rebuilds the environment from its ID, so subprocess workers
of ``AsyncVectorEnv``/``make_vec`` can recreate it (runtime registrations are lost
there). Environments run in the sandbox unless ``isolation="none"`` is passed, and
``isolation="none"`` runs only a packaged seed's exact code unless the caller also
passes ``trust_code=True``: a stored version that merely has a seed's name (an older
registry may hold one) is refused. ``gym.make`` of a version that was never validated
(status ``unvalidated`` or ``rejected``) emits an :class:`UnvalidatedEnvWarning`.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from .ids import NAMESPACE
from .trust import UNVALIDATED_STATUSES, UnvalidatedEnvWarning, warn_unvalidated

__all__ = ["UnvalidatedEnvWarning", "build_env", "install", "make_env", "shared_registry"]

_ENTRY_POINT = "spade_envs.registry.gym_ids:make_env"


@functools.lru_cache(maxsize=4)
def _registry_for(url: str) -> Any:
    from .store import Registry

    return Registry(url)


def shared_registry() -> Any:
    """The process-wide :class:`Registry` at :func:`default_url` (opened once per URL)."""
    from .urls import default_url

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
    from .urls import default_url

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
# A status that gym.make warns about is read again each time: it changes once validated.
_status_cache: dict[tuple[str, str], str] = {}


def _stored(env_id: str) -> tuple[str, str, str]:
    """``(kind, source, status)`` of a version.

    Kind and source are cached, since a stored version's code never changes; a status
    that is warned about (``unvalidated``, ``rejected``) is read again on each call, as
    ``spade-envs revalidate`` changes it.
    """
    from ..error import UnknownEnvironmentError
    from .fastread import read_env, read_status
    from .ids import parse_env_id
    from .urls import default_url

    url = default_url()
    key = (url, env_id)
    name, version = parse_env_id(env_id)
    cached = _stored_cache.get(key)
    if cached is not None:
        status = _status_cache.get(key) or read_status(url, name, version)
        if status is None:
            status = shared_registry().get(env_id).status
        found = (*cached, status)
    else:
        found = read_env(url, name, version)
        if found is None:
            try:
                record = shared_registry().get(env_id)
            except UnknownEnvironmentError:
                # The spec may come from another process or registry URL (e.g. a vector-env
                # worker); seeds are still registered on first use here.
                _prepare(env_id)
                record = shared_registry().get(env_id)
            found = (record.kind, record.source, record.status)
    if len(_stored_cache) < 4096:  # bounded: a designer loop makes ever new versions
        _stored_cache[key] = found[:2]
        if found[2] not in UNVALIDATED_STATUSES:
            _status_cache[key] = found[2]
    return found


def make_env(
    env_id: str,
    isolation: str = "sandbox",
    seat: int = 0,
    opponent: str = "best",
    render_mode: str | None = None,
    trust_code: bool = False,
    **knobs: Any,
) -> Any:
    """Gymnasium entry point: build ``env_id`` from the registry.

    Args:
        env_id: ``spade/<Name>-v<N>``.
        isolation: ``"sandbox"`` (default) or ``"none"``: in this process, for a packaged
            seed's exact code only, unless ``trust_code`` is also given.
        seat: For games, the seat the agent plays (the others play ``opponent``).
        opponent: For games: ``"best"`` or ``"random"``.
        render_mode: ``"ansi"`` or None.
        trust_code: With ``isolation="none"``: also run code that is not a packaged seed
            in this process, as this user. Only for code you wrote or reviewed.
        **knobs: Difficulty knobs.

    Raises:
        UntrustedCodeError: ``isolation="none"`` for a version that is not a packaged
            seed's exact code, without ``trust_code=True``.

    Warns:
        UnvalidatedEnvWarning: The version was never validated (``unvalidated``) or
            failed validation (``rejected``).
    """
    kind, source, status = _stored(env_id)
    warn_unvalidated(env_id, status)
    return build_env(
        source,
        kind,
        filename=env_id,
        isolation=isolation,
        seat=seat,
        opponent=opponent,
        render_mode=render_mode,
        trust_code=trust_code,
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
    trust_code: bool = False,
    **knobs: Any,
) -> Any:
    """Build an environment from its code: in the sandbox, or in-process when trusted.

    Shared by :func:`make_env` and the packages that ``spade-envs export --format
    package`` writes. In-process execution goes through
    :func:`spade_envs.sandbox.open_env`, which refuses code that is not a packaged seed
    unless ``trust_code`` is set.

    Args:
        source: The environment's module.
        kind: ``text``, ``tool`` or ``game``; kept for callers, not trusted: whether the
            code is a game (played from ``seat``) is decided by the class it defines.
        filename: Shown in tracebacks and errors.
        isolation: ``"sandbox"`` (default) or ``"none"`` (in-process; see ``trust_code``).
        seat: For games, the seat the agent plays.
        opponent: For games: ``"best"`` or ``"random"``.
        render_mode: ``"ansi"`` or None.
        trust_code: With ``isolation="none"``: run code that is not a packaged seed in
            this process. Only for code you wrote or reviewed.
        **knobs: Difficulty knobs.

    Raises:
        UntrustedCodeError: ``isolation="none"`` for non-seed code without ``trust_code``.
    """
    from ..sandbox import open_env

    del kind  # the loaded class decides whether it is a game, not a stored field
    return open_env(
        source,
        filename=filename,
        knobs=knobs,
        seat=seat,
        opponent=opponent,
        isolation=isolation,
        render_mode=render_mode,
        trust_code=trust_code,
    )
