"""Lazy package attributes: a subpackage names what it exports, and the module that
defines each name is imported on first use (keeping ``import spade_envs`` light)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, names: Mapping[str, str], namespace: dict[str, Any]) -> Callable:
    """Build a module ``__getattr__`` (PEP 562) for ``package``.

    Args:
        package: The package's ``__name__``.
        names: Exported name -> submodule (relative to ``package``) that defines it.
        namespace: The package's ``globals()``; a loaded value is cached there, so the
            next access does not come back here.
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
