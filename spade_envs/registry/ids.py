"""Environment IDs: ``spade/<Name>-v<N>``."""

from __future__ import annotations

import re

from ..error import SpadeError

__all__ = ["NAMESPACE", "env_id", "parse_env_id", "check_name"]

NAMESPACE = "spade"
_NAME = re.compile(r"[A-Z][A-Za-z0-9]{0,63}")
_ID = re.compile(rf"{NAMESPACE}/(?P<name>[A-Za-z0-9]+)-v(?P<version>[1-9][0-9]{{0,8}})")


def check_name(name: str) -> str:
    """Return ``name`` if it can be an environment name (CamelCase, letters and digits)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise SpadeError(
            f"{name!r} cannot be an environment name: use 1-64 letters and digits starting "
            "with a capital letter, like the class name (e.g. 'NumberGuess')."
        )
    return name


def env_id(name: str, version: int) -> str:
    """``spade/<name>-v<version>``."""
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SpadeError(f"An environment version is a whole number from 1, got {version!r}.")
    return f"{NAMESPACE}/{check_name(name)}-v{version}"


def parse_env_id(text: str) -> tuple[str, int]:
    """``"spade/NumberGuess-v2"`` -> ``("NumberGuess", 2)``.

    Raises:
        SpadeError: ``text`` is not of that form.
    """
    match = _ID.fullmatch(text.strip()) if isinstance(text, str) else None
    if not match:
        raise SpadeError(
            f"{text!r} is not an environment ID; IDs look like 'spade/NumberGuess-v1'."
        )
    return match.group("name"), int(match.group("version"))
