"""The validator: the gate every generated environment passes before the registry.

Static checks (parse, size, one environment class, allowed imports, no ``input()``)
run here; so does every dynamic check (first plays as production plays them,
Gymnasium ``check_env`` / PettingZoo ``api_test``, Hypothesis fuzzing, determinism,
feasibility of the solution, trivial policies, info consistency, hint leaks), driving
sandboxed instances over the wire: the environment's code runs only in the sandbox.
The result is a :class:`ValidationReport` whose reasons are short enough to feed back
to the designer model.
"""

from __future__ import annotations

from .budget import BUDGETS, Budget, get_budget
from .report import VALIDATOR_VERSION, CheckResult, ValidationReport
from .static import ALLOWED_MODULES
from .validator import Validator, validate_file, validate_iter, validate_many, validate_source

__all__ = [
    "ALLOWED_MODULES",
    "BUDGETS",
    "VALIDATOR_VERSION",
    "Budget",
    "CheckResult",
    "ValidationReport",
    "Validator",
    "get_budget",
    "validate_file",
    "validate_many",
    "validate_iter",
    "validate_source",
]
