"""The Environment Designer: prompts, code extraction, repair, novelty, registration.

``Designer`` runs the generate -> validate (-> repair) -> novelty -> register pipeline
with any :class:`spade_envs.llm.ChatModel` (modes ``new``, ``edit``, ``scaffold``: a
parent's declared holes filled from a JSON reply, see :mod:`.scaffold`); ``HintWriter``
asks a model for an answer-free strategy hint and checks it for leaks. Prompts are
versioned package data in ``spade_envs/generator/prompts/``. How far an attempt got and
why it failed are the enums of :mod:`.outcomes`, shared with the trainer.
"""

from __future__ import annotations

from .extract import Extraction, extract_code
from .hints import HintWriter, WrittenHint, final_answers
from .outcomes import AttemptStage, DesignerFailure
from .pipeline import MODES, STAGES, Attempt, Designer, DesignerConfig, DesignerReport
from .prompts import PROMPT_VERSION, DesignerPrompts, Reference, prompt_sha256
from .scaffold import FillingError, NoHolesError, Scaffold, filling_distance, parse_filling

__all__ = [
    "MODES",
    "PROMPT_VERSION",
    "STAGES",
    "Attempt",
    "AttemptStage",
    "Designer",
    "DesignerConfig",
    "DesignerFailure",
    "DesignerPrompts",
    "DesignerReport",
    "Extraction",
    "FillingError",
    "HintWriter",
    "NoHolesError",
    "Reference",
    "Scaffold",
    "WrittenHint",
    "extract_code",
    "filling_distance",
    "final_answers",
    "parse_filling",
    "prompt_sha256",
]
