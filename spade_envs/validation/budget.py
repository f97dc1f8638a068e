"""How hard the validator looks: three named budgets."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from ..error import SpadeError, suggest

__all__ = ["Budget", "BUDGETS", "get_budget"]


@dataclass(frozen=True)
class Budget:
    """Effort and limits of one validation.

    Attributes:
        name: ``fast``, ``default`` or ``thorough``.
        seeds: Seeds on which the solution must win and trivial policies must lose.
        fuzz_examples: Hypothesis state-machine runs.
        fuzz_steps: Most steps per state-machine run.
        probe_episodes: Whole episodes played with a fixed mix of odd actions (catches
            crashes that need many turns, e.g. only on turn 7).
        determinism_episodes: Episodes replayed on a second fresh instance and compared.
        call_seconds: Most CPU seconds one reset/step/hint/solution call may use (CPU
            time, so a busy machine does not fail a fast environment).
        max_observation_chars: Longest observation allowed.
        max_turns_limit: Largest ``max_turns`` an environment may declare.
        check_timeout: Wall-clock limit of one whole check in the sandbox.
        shrink_seconds: Most wall-clock seconds spent shrinking a fuzz failure once one is
            found (the failure is the verdict; a shorter example only makes the designer's
            feedback clearer, and on a slow environment shrinking can take the rest of the
            check's time).
        max_source_chars: Largest source accepted.
    """

    name: str = "default"
    seeds: int = 10
    fuzz_examples: int = 30
    fuzz_steps: int = 40
    probe_episodes: int = 4
    determinism_episodes: int = 4
    call_seconds: float = 0.5
    max_observation_chars: int = 8192
    max_turns_limit: int = 200
    check_timeout: float = 20.0
    shrink_seconds: float = 2.0
    max_source_chars: int = 100_000

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


BUDGETS: dict[str, Budget] = {
    "fast": Budget(
        name="fast",
        seeds=4,
        fuzz_examples=8,
        fuzz_steps=25,
        probe_episodes=2,
        determinism_episodes=2,
        check_timeout=10.0,
        shrink_seconds=1.0,
    ),
    "default": Budget(),
    "thorough": Budget(
        name="thorough",
        seeds=30,
        fuzz_examples=120,
        fuzz_steps=80,
        probe_episodes=12,
        determinism_episodes=10,
        check_timeout=120.0,
        shrink_seconds=20.0,
    ),
}


def get_budget(budget: str | Budget, **overrides: Any) -> Budget:
    """A :class:`Budget` by name (or as given), with field overrides."""
    if isinstance(budget, str):
        if budget not in BUDGETS:
            raise SpadeError(
                f"Unknown budget {budget!r}.{suggest(budget, BUDGETS)} Use one of: "
                f"{', '.join(BUDGETS)}."
            )
        budget = BUDGETS[budget]
    return replace(budget, **overrides) if overrides else budget
