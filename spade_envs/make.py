"""``spade_envs.make``: an environment instance from a seed name or a file path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .core.loader import load_env_file
from .seeds import seed_class

__all__ = ["make", "resolve"]


def resolve(name_or_path: str | Path) -> type:
    """The environment class for a seed name or the path of a ``.py`` file (trusted)."""
    text = str(name_or_path)
    if text.endswith(".py") or "/" in text or "\\" in text:
        return load_env_file(text)
    return seed_class(text)


def make(name_or_path: str | Path, **knobs: Any) -> Any:
    """Create an environment from a seed name or a ``.py`` file path.

    Args:
        name_or_path: A seed name such as ``"NumberGuess"`` (case-insensitive), or the
            path of a Python file defining one environment class. A name always builds
            the packaged seed, never a registry version of that name (seed names are
            reserved in the registry; use ``gym.make("spade/<Name>-v<N>")`` for stored
            versions, which run in the sandbox). A file is executed in this process:
            only pass files you wrote or reviewed.
        **knobs: ``render_mode`` and difficulty knobs, e.g. ``make("Mastermind", length=5)``.

    Returns:
        A ``TextEnv``/``ToolEnv`` (a ``gymnasium.Env``) or a ``TextGame`` (a PettingZoo
        ``AECEnv``), not yet reset.

    Raises:
        UnknownEnvironmentError: No seed has that name (close matches are suggested).
        EnvLoadError: The file does not define exactly one environment class.
        InvalidKnobError: A knob does not exist or has the wrong type.
    """
    return resolve(name_or_path)(**knobs)
