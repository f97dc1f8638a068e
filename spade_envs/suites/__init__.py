"""External suites as registry environments: reasoning-gym, RLVE and TextArena.

- :mod:`.base`: :class:`SuiteTask`, the text environment over one suite task;
- :mod:`.rg`, :mod:`.rlve`: the question-answer adapters (the suites load lazily, in the
  worker);
- :mod:`.textarena`: TextArena's one- and two-player games (:class:`TextArenaTask`,
  :class:`TextArenaGame`);
- :mod:`.catalog`: the suites, and the plan of an import (task x level -> source);
- :mod:`.importer`: :func:`import_suite`, validating and registering a plan;
- :mod:`.evaluation`: the held-out evaluation sets (``rg-hard``, ``rlve:<level>``, ``seeds``).
"""

from __future__ import annotations

from .base import ANSWER_FORMAT, SuiteGenerationError, SuiteGoldError, SuiteTask
from .catalog import (
    SUITES,
    SuiteEnvSpec,
    SuiteInfo,
    SuiteNotInstalledError,
    Unavailable,
    UnknownTaskError,
    parse_levels,
    plan,
    require_suite,
    task_names,
)
from .rg import ReasoningGymTask
from .rlve import RlveTask
from .textarena import TextArenaGame, TextArenaTask

__all__ = [
    "ANSWER_FORMAT",
    "SUITES",
    "ReasoningGymTask",
    "RlveTask",
    "SuiteEnvSpec",
    "SuiteGenerationError",
    "SuiteGoldError",
    "SuiteInfo",
    "SuiteNotInstalledError",
    "SuiteTask",
    "TextArenaGame",
    "TextArenaTask",
    "Unavailable",
    "UnknownTaskError",
    "parse_levels",
    "plan",
    "require_suite",
    "task_names",
]
