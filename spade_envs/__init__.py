"""spade-envs: a Gymnasium registry and generator of synthesized text environments.

Importing this package is light: it never imports torch, transformers, vllm or
skypilot (those load lazily inside the functions that need them).
"""

from __future__ import annotations

from .core import (
    KINDS,
    SKILLS,
    EnvMetadata,
    GameSeatEnv,
    TextEnv,
    TextGame,
    ToolEnv,
    UnicodeText,
    answers_match,
    boxed,
    describe,
    extract_answer,
    extract_boxed,
    extract_tag,
    normalize_text,
    parse_number,
    parse_tool_call,
)
from .error import (
    EnvContractError,
    EnvLoadError,
    IllegalMove,
    InvalidKnobError,
    SpadeError,
    ToolError,
    UnknownEnvironmentError,
    suggest,
)
from .make import make
from .seeds import seed_class, seed_names
from .suites import ReasoningGymTask, RlveTask, TextArenaGame, TextArenaTask

__version__ = "0.1.0"


def _install_gym_ids() -> None:
    # gym.make("spade/<Name>-v<N>") resolves through the registry; SQLAlchemy loads only
    # when such an ID is first made. A sandbox worker needs none of it.
    import os

    if os.environ.get("SPADE_ENVS_SANDBOX_WORKER") == "1":
        return
    from .runtime.gym_ids import install

    install()


_install_gym_ids()

__all__ = [
    "TextEnv",
    "ToolEnv",
    "TextGame",
    "GameSeatEnv",
    "ReasoningGymTask",
    "RlveTask",
    "TextArenaTask",
    "TextArenaGame",
    "UnicodeText",
    "EnvMetadata",
    "describe",
    "KINDS",
    "SKILLS",
    "make",
    "seed_names",
    "seed_class",
    "answers_match",
    "boxed",
    "extract_answer",
    "extract_boxed",
    "extract_tag",
    "normalize_text",
    "parse_number",
    "parse_tool_call",
    "SpadeError",
    "UnknownEnvironmentError",
    "EnvContractError",
    "EnvLoadError",
    "InvalidKnobError",
    "ToolError",
    "IllegalMove",
    "suggest",
    "__version__",
]
