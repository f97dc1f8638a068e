"""``gym.make("spade/<Name>-v<N>")``: registered environments as Gymnasium IDs.

Registering every stored version with Gymnasium at import time would make
``import spade_envs`` slow on a large corpus. Instead, :func:`install` (run by
``import spade_envs``) declares the packaged seeds' IDs (``spade/<Seed>-v1``, from the
seeds' module names: no database and no seed import), and wraps Gymnasium's own lookups:

- ``gym.make``/``make_vec`` (through ``_find_spec``) and ``gym.spec``: the first time a
  ``spade/`` ID that Gymnasium does not know is asked for, the specs of that name (or of
  close names, for Gymnasium's "Did you mean") are added from the SQL registry, then
  Gymnasium carries on as usual, so its own errors (``NameNotFound`` with close-match
  suggestions, ``VersionNotFound`` with the versions that exist) apply;
- ``gym.pprint_registry()`` of Gymnasium's registry first adds every stored version
  (:func:`register_all`: names and versions only), so it lists them all.

``"spade/<Seed>-v1" in gym.registry`` holds from import on; other stored IDs are in
``gym.registry`` once looked up (or after :func:`register_all`): Gymnasium's registry
is a plain dict, which cannot look anything up on its own. A seed environment is
registered in the SQL registry on first use, and the registry ``gym.make`` opens gets
the packaged seeds once (``Registry(url, seeds=True)``).

The spec's entry point rebuilds the environment from its ID, so subprocess workers
of ``AsyncVectorEnv``/``make_vec`` can recreate it (runtime registrations are lost
there). Environments run in the sandbox unless ``isolation="none"`` is passed, and
``isolation="none"`` runs only a packaged seed's exact code unless the caller also
passes ``trust_code=True``: a stored version that merely has a seed's name (an older
registry may hold one) is refused. ``gym.make`` of a version that was never validated
(status ``unvalidated`` or ``rejected``) emits an :class:`UnvalidatedEnvWarning`; of a
``retired`` one, a :class:`RetiredEnvWarning` naming the newest validated version.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from ..registry.ids import NAMESPACE
from ..registry.shared import shared_registry
from ..registry.trust import (
    RetiredEnvWarning,
    UnvalidatedEnvWarning,
)

__all__ = [
    "RetiredEnvWarning",
    "UnvalidatedEnvWarning",
    "install",
    "make_env",
    "register_all",
    "stored_version",
]

_ENTRY_POINT = "spade_envs.runtime.gym_ids:make_env"


def _register_spec(gym_id: str) -> None:
    """Add ``gym_id``'s spec to Gymnasium's registry unless it is there.

    The spec goes into the dict directly: ``gym.register`` checks every registered spec
    against the new one, which is quadratic when a whole corpus is added.
    """
    from gymnasium.envs.registration import EnvSpec, registry

    if gym_id not in registry:
        registry[gym_id] = EnvSpec(id=gym_id, entry_point=_ENTRY_POINT, kwargs={"env_id": gym_id})


def _declare_seeds() -> None:
    """``spade/<Seed>-v1`` for every packaged seed: a seed is v1 in any registry that
    holds it, and is registered there on first ``gym.make``."""
    from ..seeds import declared_seed_names

    for name in declared_seed_names():
        _register_spec(f"{NAMESPACE}/{name}-v1")


def register_all() -> int:
    """Add a Gymnasium spec for every version stored in the registry at ``default_url``.

    Reads only names and versions (one query on SQLite, batches elsewhere), then
    ``gym.registry`` and ``gym.pprint_registry()`` show every ``spade/`` ID.

    Returns:
        How many stored versions there are.
    """
    from ..registry.fastread import read_all_ids
    from ..registry.urls import default_url

    ids = read_all_ids(default_url())
    if ids is None:
        registry, ids, after = shared_registry(), [], 0
        while batch := registry.light_rows(after=after, limit=5000):
            ids.extend((row.name, row.version) for row in batch)
            after = batch[-1].key
    for name, version in ids:
        _register_spec(f"{NAMESPACE}/{name}-v{version}")
    return len(ids)


def _prepare(gym_id: str) -> None:
    """Add the specs Gymnasium needs to resolve (or to explain) ``gym_id``."""
    from gymnasium.envs.registration import parse_env_id as gym_parse

    from ..seeds import seed_classes

    try:
        namespace, name, _version = gym_parse(gym_id)
    except Exception:
        return  # let Gymnasium report the malformed ID itself
    if namespace != NAMESPACE:
        return
    from ..registry.fastread import read_versions
    from ..registry.urls import default_url
    from .door import register_seed

    stored = read_versions(default_url(), name)
    if stored:  # the common case, answered without opening the full store
        for version in stored:
            _register_spec(f"{NAMESPACE}/{name}-v{version}")
        return
    registry = shared_registry()
    known = registry.versions(name)
    if not known and name in seed_classes():
        register_seed(registry, name)
        known = registry.versions(name)
    for existing in known:
        _register_spec(existing)
    if not known:  # offer close names so Gymnasium's NameNotFound can suggest them
        for close in difflib.get_close_matches(name, registry.names(), n=3, cutoff=0.6):
            for existing in registry.versions(close):
                _register_spec(existing)


def _prepare_if_unknown(env_id: Any) -> None:
    from gymnasium.envs.registration import registry

    name = env_id.split(":", 1)[-1] if isinstance(env_id, str) else ""
    if name.startswith(f"{NAMESPACE}/") and name not in registry:
        _prepare(name)


def install() -> None:
    """Make Gymnasium resolve ``spade/`` IDs from the registry (idempotent, cheap).

    Declares the seeds' IDs and wraps ``_find_spec`` (``gym.make``, ``make_vec``),
    ``spec`` and ``pprint_registry`` where Gymnasium exports them (``gymnasium``,
    ``gymnasium.envs``, ``gymnasium.envs.registration``). No database is read here.
    """
    import gymnasium
    import gymnasium.envs
    from gymnasium.envs import registration

    if getattr(registration._find_spec, "_spade_envs", False):
        return
    find_spec, spec, pprint = (
        registration._find_spec,
        registration.spec,
        registration.pprint_registry,
    )

    @functools.wraps(find_spec)
    def _find_spec(env_id: str) -> Any:
        _prepare_if_unknown(env_id)
        return find_spec(env_id)

    @functools.wraps(spec)
    def spec_(env_id: str) -> Any:
        _prepare_if_unknown(env_id)
        return spec(env_id)

    @functools.wraps(pprint)
    def pprint_registry(print_registry: Any = registration.registry, **kwargs: Any) -> Any:
        if print_registry is registration.registry:
            register_all()
        return pprint(print_registry, **kwargs)

    for wrapper in (_find_spec, spec_, pprint_registry):
        wrapper._spade_envs = True  # type: ignore[attr-defined]
    registration._find_spec = _find_spec
    for module in (gymnasium, gymnasium.envs, registration):
        if getattr(module, "spec", None) is spec:
            module.spec = spec_  # type: ignore[attr-defined]
        if getattr(module, "pprint_registry", None) is pprint:
            module.pprint_registry = pprint_registry  # type: ignore[attr-defined]
    _declare_seeds()


_stored_cache: dict[tuple[str, str], tuple[str, str]] = {}


def stored_version(env_id: str) -> tuple[str, str, str]:
    """``(kind, source, status)`` of a version.

    Kind and source are cached, since a stored version's code never changes; the status
    is read on every call (one indexed read): ``spade-envs revalidate``, ``retire`` and a
    replay audit in any process change it, and a quarantine must warn at once.
    """
    from ..error import UnknownEnvironmentError
    from ..registry.fastread import read_env, read_status
    from ..registry.ids import parse_env_id
    from ..registry.urls import default_url

    url = default_url()
    key = (url, env_id)
    name, version = parse_env_id(env_id)
    cached = _stored_cache.get(key)
    if cached is not None:
        status = read_status(url, name, version)
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
    return found


def newest_validated(env_id: str) -> str | None:
    """The newest validated version of ``env_id``'s name, if any."""
    from ..registry.fastread import read_statuses
    from ..registry.ids import env_id as make_id
    from ..registry.ids import parse_env_id
    from ..registry.urls import default_url

    name, _version = parse_env_id(env_id)
    statuses = read_statuses(default_url(), name)
    if statuses is None:
        registry = shared_registry()
        statuses = []
        for id_ in registry.versions(name):
            record = registry.get(id_)
            statuses.append((record.version, record.status))
    validated = [version for version, status in statuses if status == "validated"]
    return make_id(name, max(validated)) if validated else None


def make_env(env_id: str, **kwargs: Any) -> Any:
    """Gymnasium's entry point for ``spade/`` IDs: :func:`spade_envs.runtime.open_id`.

    Takes ``open_id``'s keyword arguments (``isolation``, ``seat``, ``opponent``,
    ``render_mode``, ``trust_code`` and difficulty knobs), which ``gym.make`` passes on.
    """
    from .door import open_id

    return open_id(env_id, caller_depth=3, **kwargs)  # make_env, gym.make, its caller
