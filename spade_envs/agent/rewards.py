"""Regret and the designer's rewards: small pure functions of play results.

``regret`` is what the SPADE method rewards the Environment Designer with: the agent's
mean return with a privileged hint minus its mean return without it (the *hint gain*),
floored at 0 (as the SPADE code does). The hint gain itself, unfloored, is what the
registry stores per checkpoint (``PlayStats.hint_gain``). ``blend`` is the reward of the
released SPADE game recipes, mixing regret with a win-rate plateau; ``learnability`` is
``p(1 - p)`` of the unhinted solve rate (Absolute Zero / verifiers style). Nothing here
touches a model or an env.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..error import SpadeError

__all__ = [
    "BLEND_REGRET_SCALE",
    "RegretEstimate",
    "RewardInputError",
    "binomial_standard_error",
    "blend",
    "learnability",
    "plateau",
    "regret",
    "standard_error",
    "wilson_interval",
]

#: Regret at which the regret half of :func:`blend` saturates.
BLEND_REGRET_SCALE = 0.15
#: The win-rate band where :func:`plateau` is 1, and how far outside it it falls to 0.
PLATEAU_LOW, PLATEAU_HIGH, PLATEAU_RAMP = 0.4, 0.6, 0.25


class RewardInputError(SpadeError, ValueError):
    """A reward function got a value it cannot use (NaN, out of range, wrong type)."""


@dataclass(frozen=True)
class RegretEstimate:
    """The regret of one environment, with what it rests on.

    Attributes:
        value: ``max(0, hint_gain) - timeout_penalty * failed_share``: the designer's
            regret reward. Negative only through the penalty for plays whose environment
            hung or crashed.
        hint_gain: Mean return with the hint minus mean return without it (not floored;
            may be negative: small models are often *hurt* by a hint).
        mean_with_hint: Mean return of the hinted plays that finished (0 when none did).
        mean_without_hint: Mean return of the unhinted plays that finished.
        stderr: Standard error of ``hint_gain`` (unpaired, sqrt(var_w/n_w + var_o/n_o) with
            sample variances); NaN when either side has fewer than 2 finished plays.
        n_with_hint: Hinted plays that finished.
        n_without_hint: Unhinted plays that finished.
        failed: Plays (of both kinds) whose environment timed out or crashed, or whose
            return was not a finite number.
    """

    value: float
    hint_gain: float
    mean_with_hint: float
    mean_without_hint: float
    stderr: float
    n_with_hint: int
    n_without_hint: int
    failed: int

    @property
    def n(self) -> int:
        """Finished plays the estimate rests on (both kinds)."""
        return self.n_with_hint + self.n_without_hint

    @property
    def raw(self) -> float:
        """Deprecated name of :attr:`hint_gain`."""
        warnings.warn(
            "RegretEstimate.raw is deprecated: use RegretEstimate.hint_gain (the unfloored "
            "return with the hint minus without it).",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.hint_gain

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "n": self.n}


def _finite(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RewardInputError(f"{what} must be a number, got {value!r}.")
    value = float(value)
    if not math.isfinite(value):
        raise RewardInputError(f"{what} must be finite, got {value!r}.")
    return value


def _rate(value: Any, what: str) -> float:
    value = _finite(value, what)
    if not 0.0 <= value <= 1.0:
        raise RewardInputError(f"{what} must lie in [0, 1], got {value!r}.")
    return value


def _split(returns: Sequence[float | None], what: str) -> tuple[list[float], int]:
    if isinstance(returns, (str, bytes)) or not isinstance(returns, Sequence):
        raise RewardInputError(
            f"{what} must be a sequence of returns (None for a failed play), got {returns!r:.80}."
        )
    finished = []
    for r in returns:
        if r is None:
            continue
        if isinstance(r, bool) or not isinstance(r, (int, float)):
            raise RewardInputError(f"a return in {what} must be a number or None, got {r!r:.80}.")
        value = _float_or_nan(r)
        if math.isfinite(value):  # NaN/inf: a failed play, never averaged
            finished.append(value)
    return finished, len(returns) - len(finished)


def _float_or_nan(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an int past the float range
        return math.nan


def _mean_var(values: list[float]) -> tuple[float, float]:
    if not values:
        return 0.0, math.nan
    mean = math.fsum(values) / len(values)
    if len(values) < 2:
        return mean, math.nan
    return mean, math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)


def standard_error(values: Sequence[float]) -> float:
    """Standard error of the mean of ``values`` (sample SD / sqrt n); NaN under 2 values."""
    _, variance = _mean_var(list(values))
    return math.sqrt(variance / len(values)) if len(values) >= 2 else math.nan


def binomial_standard_error(rate: float, n: int) -> float:
    """Standard error of a rate observed over ``n`` trials; NaN for ``n = 0``."""
    return math.sqrt(rate * (1 - rate) / n) if n else math.nan


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a rate: ``successes`` of ``n`` (95% for ``z = 1.96``).

    Unlike ``rate ± binomial_standard_error``, it does not collapse to a point at 0 or 1:
    0 wins in 16 plays gives (0, 0.194), which says how little a zero rules out.

    Raises:
        RewardInputError: ``n < 0`` or ``successes`` outside ``0..n``.
    """
    if n < 0 or not 0 <= successes <= n:
        raise RewardInputError(f"wilson_interval needs 0 <= successes <= n, got {successes}, {n}.")
    if n == 0:
        return (0.0, 1.0)  # nothing observed: every rate is possible
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # The exact ends: 0 of n and n of n reach 0 and 1 (rounding would miss them by 1e-16).
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (min(low, p), max(high, p))


def regret(
    with_hint_returns: Sequence[float | None],
    without_hint_returns: Sequence[float | None],
    *,
    timeout_penalty: float = 0.5,
) -> RegretEstimate:
    """Estimate regret from the returns of hinted and unhinted plays.

    Args:
        with_hint_returns: Episode returns of the plays that saw the hint; ``None`` for a
            play whose environment timed out or crashed. A return that is not a finite
            number (NaN, inf, an int past the float range) counts as such a failed play:
            one broken environment must not poison the estimate of every other.
        without_hint_returns: The same for the plays without the hint.
        timeout_penalty: Subtracted from the floored regret, times the share of all plays
            whose environment failed, so a designer gains nothing by writing environments
            that hang or crash (the SPADE code penalises those too). ``>= 0``.

    Returns:
        The estimate: ``value = max(0, mean_with - mean_without) - timeout_penalty *
        failed / total`` with its standard error and the number of plays.

    Raises:
        RewardInputError: A return is not a number (nor None); the penalty is negative.
    """
    penalty = _finite(timeout_penalty, "timeout_penalty")
    if penalty < 0:
        raise RewardInputError(f"timeout_penalty must be >= 0, got {penalty!r}.")
    with_hint, failed_w = _split(with_hint_returns, "with_hint_returns")
    without, failed_o = _split(without_hint_returns, "without_hint_returns")
    mean_w, var_w = _mean_var(with_hint)
    mean_o, var_o = _mean_var(without)
    gain = mean_w - mean_o if with_hint and without else 0.0
    total = len(with_hint_returns) + len(without_hint_returns)
    failed = failed_w + failed_o
    value = max(0.0, gain) - (penalty * failed / total if total else 0.0)
    stderr = (
        math.sqrt(var_w / len(with_hint) + var_o / len(without))
        if (len(with_hint) >= 2 and len(without) >= 2)
        else math.nan
    )
    return RegretEstimate(
        value=value,
        hint_gain=gain,
        mean_with_hint=mean_w,
        mean_without_hint=mean_o,
        stderr=stderr,
        n_with_hint=len(with_hint),
        n_without_hint=len(without),
        failed=failed,
    )


def plateau(win_rate: float) -> float:
    """1 on ``[0.4, 0.6]``, falling linearly to 0 over 0.25 on either side.

    Raises:
        RewardInputError: ``win_rate`` is not a finite number in [0, 1].
    """
    p = _rate(win_rate, "win_rate")
    if p < PLATEAU_LOW:
        return max(0.0, 1.0 - (PLATEAU_LOW - p) / PLATEAU_RAMP)
    if p > PLATEAU_HIGH:
        return max(0.0, 1.0 - (p - PLATEAU_HIGH) / PLATEAU_RAMP)
    return 1.0


def blend(regret: float, win_rate: float) -> float:
    """The designer reward of the SPADE game recipes.

    ``0.4 * clip(regret / 0.15, 0, 1) + 0.6 * plateau(win_rate)``: regret counts up to
    0.15, and environments the agent wins about half of the time are worth most.

    Args:
        regret: The regret (e.g. :attr:`RegretEstimate.value`); finite.
        win_rate: The unhinted win rate in [0, 1].

    Returns:
        A reward in [0, 1].
    """
    r = _finite(regret, "regret")
    return 0.4 * min(1.0, max(0.0, r / BLEND_REGRET_SCALE)) + 0.6 * plateau(win_rate)


def learnability(solve_rate: float) -> float:
    """``p * (1 - p)`` of the unhinted solve rate: 0 for always/never solved, 0.25 at 1/2."""
    p = _rate(solve_rate, "solve_rate")
    return p * (1.0 - p)
