"""When an episode is won: one definition per dialect, used by every caller.

- ``return`` (our protocol): the episode's return reaches the top of ``reward_range``.
- ``final_reward`` (SPADE's): the episode terminated (not truncated) and its last reward
  is above zero, as SPADE's evaluators and win rates count it (a tool game that paid a
  format penalty before its right answer is still won).

The rule is part of an environment's metadata; a sandboxed environment's rule is checked
like its other metadata. Either rule only ever reads rewards and the termination flag,
never what the environment says about itself.
"""

from __future__ import annotations

import math

__all__ = ["WIN_RULES", "WIN_TOLERANCE", "is_won"]

#: The rules an environment may declare (its class attribute ``win_rule``).
WIN_RULES = ("return", "final_reward")
#: How close to the top of the range a return must come (float sums of rewards).
WIN_TOLERANCE = 1e-6


def is_won(
    rule: str,
    *,
    total: float,
    top: float,
    last_reward: float | None,
    terminated: bool,
) -> bool:
    """Whether an episode that ended this way is won under ``rule``.

    Args:
        rule: One of :data:`WIN_RULES`.
        total: The episode's return.
        top: The top of the environment's ``reward_range``.
        last_reward: The reward of the last step (None before any step).
        terminated: Whether the last step terminated the episode.
    """
    if rule == "final_reward":
        return (
            bool(terminated)
            and last_reward is not None
            and math.isfinite(last_reward)
            and last_reward > 0
        )
    return math.isfinite(top) and math.isfinite(total) and total >= top - WIN_TOLERANCE
