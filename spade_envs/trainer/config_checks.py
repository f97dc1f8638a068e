"""The checks every trainer settings section runs in ``__post_init__``: one error type,
messages that name the dotted key and say what it must be (with close matches)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..error import SpadeError, suggest

__all__ = ["ConfigError", "bare_env_name"]


class ConfigError(SpadeError, ValueError):
    """A trainer setting, preset or override is invalid."""


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _key(section: str, name: str) -> str:
    return f"{section}.{name}" if section else name


def _positive(section: str, **values: Any) -> None:
    for name, value in values.items():
        _check(value >= 1, f"{_key(section, name)} must be at least 1, got {value!r}.")


def _non_negative(section: str, **values: Any) -> None:
    for name, value in values.items():
        _check(
            math.isfinite(value) and value >= 0,
            f"{_key(section, name)} must be a finite number >= 0, got {value!r}.",
        )


def _choice(section: str, name: str, value: str, choices: Sequence[str]) -> None:
    _check(
        value in choices,
        f"{_key(section, name)} must be one of {tuple(choices)}, got {value!r}."
        + suggest(value, choices),
    )


def bare_env_name(env: str) -> str:
    """``spade/Name-v3`` -> ``Name``; ``Name@0`` (a rung) -> ``Name``; a bare name stays."""
    if "@" in env and not env.startswith("spade/"):
        return env.partition("@")[0]
    if env.startswith("spade/"):
        env = env[len("spade/") :]
        name, _, version = env.rpartition("-v")
        return name if version.isdigit() else env
    return env
