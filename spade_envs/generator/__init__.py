"""The Environment Designer: prompts, code extraction, repair, novelty, registration.

``Designer`` runs the generate -> validate (-> repair) -> novelty -> register pipeline
with any :class:`spade_envs.llm.ChatModel`; ``HintWriter`` asks a model for an
answer-free strategy hint and checks it for leaks. Prompts are versioned package data
in ``spade_envs/generator/prompts/``.
"""

from __future__ import annotations

from .extract import Extraction, extract_code
from .hints import HintWriter, WrittenHint, final_answers
from .pipeline import MODES, STAGES, Attempt, Designer, DesignerConfig, DesignerReport
from .prompts import PROMPT_VERSION, DesignerPrompts, Reference, prompt_sha256

__all__ = [
    "MODES",
    "PROMPT_VERSION",
    "STAGES",
    "Attempt",
    "Designer",
    "DesignerConfig",
    "DesignerPrompts",
    "DesignerReport",
    "Extraction",
    "HintWriter",
    "Reference",
    "WrittenHint",
    "extract_code",
    "final_answers",
    "prompt_sha256",
]
