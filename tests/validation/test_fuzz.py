"""The Hypothesis fuzzer on plain (in-process) environments."""

from __future__ import annotations

import math
import time

import pytest

from spade_envs import TextEnv, boxed
from spade_envs.validation.budget import get_budget
from spade_envs.validation.fuzz import FuzzFailure, fuzz_env


class _NanOnLongText(TextEnv):
    """Rewards NaN for any action of 3 or more characters that is not the answer."""

    description = "Reply 7 in \\boxed{}."
    max_turns = 5

    def _reset(self) -> str:
        return "Reply \\boxed{7}."

    def _step(self, action: str):
        if action == boxed(7):
            return "Correct.", 1.0, True
        return "No.", (math.nan if len(action) >= 3 else 0.0), False

    def hint(self) -> str:
        return "Seven."

    def solution(self) -> list[str]:
        return [boxed(7)]


def _fuzz(shrink_until: float | None, shrink_seconds: float = 60.0) -> tuple[str, int]:
    made = []

    def make() -> _NanOnLongText:
        made.append(1)
        return _NanOnLongText()

    with pytest.raises(FuzzFailure, match="returned reward nan") as failure:
        budget = get_budget("fast", shrink_seconds=shrink_seconds)
        fuzz_env(make, budget, shrink_until=shrink_until)
    return str(failure.value), len(made)


def test_a_failure_found_is_reported_when_shrinking_time_is_spent():
    # Shrinking with no time left: the first failure found is the verdict, at once.
    unshrunk, runs_unshrunk = _fuzz(shrink_until=time.monotonic())
    shrunk, runs_shrunk = _fuzz(shrink_until=None)
    assert runs_unshrunk < runs_shrunk  # shrinking ran more state machines


def test_the_budget_bounds_shrinking_whatever_time_the_check_has_left():
    first, runs_first = _fuzz(shrink_until=time.monotonic())
    capped, runs_capped = _fuzz(shrink_until=None, shrink_seconds=0.0)
    assert runs_capped == runs_first and capped == first
