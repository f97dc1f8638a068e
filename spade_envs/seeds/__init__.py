"""The seed corpus: hand-written exemplar environments.

Each module in this package defines exactly one environment class, in the same
shape a designer model writes (one class, standard library plus ``spade_envs``).
They are the designer's first memory and the agent's first curriculum.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import pkgutil
from pathlib import Path

from ..core.loader import find_env_class
from ..error import EnvLoadError, UnknownEnvironmentError

__all__ = [
    "declared_seed_names",
    "is_seed_source",
    "seed_class",
    "seed_classes",
    "seed_names",
    "seed_source",
]


@functools.lru_cache(maxsize=1)
def _modules() -> tuple[str, ...]:
    return tuple(
        sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    )


@functools.lru_cache(maxsize=1)
def seed_classes() -> dict[str, type]:
    """Every seed environment class, keyed by class name (sorted)."""
    classes = {}
    for module_name in _modules():
        try:
            module = importlib.import_module(f"{__name__}.{module_name}")
        except Exception as exc:  # name the broken seed instead of a bare traceback
            raise EnvLoadError(
                f"Seed module spade_envs/seeds/{module_name}.py failed to import: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        cls = find_env_class(module)
        classes[cls.__name__] = cls
    return dict(sorted(classes.items()))


@functools.lru_cache(maxsize=1)
def declared_seed_names() -> tuple[str, ...]:
    """The seeds' class names read from their module names, without importing them.

    Each seed module ``snake_case.py`` defines the class ``SnakeCase`` (a test checks it
    against :func:`seed_names`), so ``import spade_envs`` can declare the seeds' Gymnasium
    IDs and the registry can tell which seeds it was given without importing 32 modules
    (about 0.15 s).
    """
    return tuple(
        sorted("".join(part.capitalize() for part in module.split("_")) for module in _modules())
    )


def seed_names() -> list[str]:
    """Names of the seed environments, sorted."""
    return list(seed_classes())


def seed_class(name: str) -> type:
    """The seed class called ``name`` (case-insensitive; the module name works too).

    Raises:
        UnknownEnvironmentError: No seed has that name; the message suggests close ones.
    """
    classes = seed_classes()
    if name in classes:
        return classes[name]
    wanted = name.lower().replace("_", "").replace("-", "")
    for cls_name, cls in classes.items():
        module = cls.__module__.rsplit(".", 1)[-1]
        if wanted in (cls_name.lower(), module.replace("_", "")):
            return cls
    raise UnknownEnvironmentError(name, classes)


def seed_source(name: str) -> str:
    """The source code of a seed environment's module."""
    cls = seed_class(name)
    module = importlib.import_module(cls.__module__)
    return Path(module.__file__).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _seed_digests() -> frozenset[str]:
    return frozenset(
        hashlib.sha256(seed_source(name).encode("utf-8")).hexdigest() for name in seed_names()
    )


def is_seed_source(source: str) -> bool:
    """True when ``source`` is byte for byte the module of a packaged seed.

    Only such code is trusted to run in this process by default: a registered
    version that merely shares a seed's *name* is designer or imported code.
    """
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    return digest in _seed_digests()
