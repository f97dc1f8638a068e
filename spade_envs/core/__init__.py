"""The environment protocol shared by seeds, generated environments and the validator."""

from __future__ import annotations

from .answers import (
    ToolCall,
    answers_match,
    boxed,
    extract_answer,
    extract_boxed,
    extract_tag,
    normalize_text,
    parse_number,
    parse_tool_call,
)
from .game_env import GameSeatEnv
from .loader import find_env_class, is_env_class, load_env_class, load_env_file
from .metadata import KINDS, ORIGINS, SKILLS, EnvMetadata, describe, env_kind
from .spaces import UnicodeText
from .text_env import TextEnv
from .text_game import TextGame
from .tool_env import ToolEnv, tool_schema

__all__ = [
    "TextEnv",
    "ToolEnv",
    "TextGame",
    "GameSeatEnv",
    "UnicodeText",
    "EnvMetadata",
    "describe",
    "env_kind",
    "SKILLS",
    "KINDS",
    "ORIGINS",
    "ToolCall",
    "answers_match",
    "boxed",
    "extract_answer",
    "extract_boxed",
    "extract_tag",
    "normalize_text",
    "parse_number",
    "parse_tool_call",
    "tool_schema",
    "find_env_class",
    "is_env_class",
    "load_env_class",
    "load_env_file",
]
