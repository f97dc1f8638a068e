"""The reward functions: exact values at known points and Hypothesis properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_envs.agent.rewards import (
    RewardInputError,
    blend,
    learnability,
    plateau,
    regret,
)

returns = st.lists(st.floats(0.0, 1.0), min_size=0, max_size=12)
maybe_returns = st.lists(st.one_of(st.none(), st.floats(0.0, 1.0)), min_size=0, max_size=12)
rates = st.floats(0.0, 1.0)


def test_regret_known_values():
    est = regret([1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0])
    assert est.hint_gain == pytest.approx(0.5)
    assert est.value == pytest.approx(0.5)
    assert est.mean_with_hint == pytest.approx(0.75)
    assert est.mean_without_hint == pytest.approx(0.25)
    # sample variances 0.25 and 0.25: sqrt(0.25/4 + 0.25/4)
    assert est.stderr == pytest.approx(math.sqrt(0.125))
    assert (est.n_with_hint, est.n_without_hint, est.n, est.failed) == (4, 4, 8, 0)


def test_regret_is_floored_at_zero_when_the_hint_hurts():
    est = regret([0.0, 0.0], [1.0, 1.0])
    assert est.hint_gain == pytest.approx(-1.0)
    assert est.value == 0.0
    with pytest.warns(DeprecationWarning, match="use RegretEstimate.hint_gain"):
        assert est.raw == est.hint_gain


def test_failed_plays_cost_the_timeout_penalty():
    est = regret([1.0, None], [0.0, 0.0], timeout_penalty=0.5)
    # the hint gain over the finished plays is 1.0; one failure in four plays costs 0.5 / 4.
    assert est.hint_gain == pytest.approx(1.0)
    assert est.value == pytest.approx(1.0 - 0.125)
    assert est.failed == 1 and est.n_with_hint == 1
    assert math.isnan(est.stderr)  # one finished hinted play: no variance estimate
    everything_failed = regret([None, None], [None], timeout_penalty=0.3)
    assert everything_failed.value == pytest.approx(-0.3)
    assert everything_failed.n == 0


@pytest.mark.parametrize("bad", [(["1"], [0.0]), ([True], [0.0]), ("10", [0.0])])
def test_regret_rejects_bad_returns(bad):
    with pytest.raises(RewardInputError, match="must be a"):
        regret(*bad)
    with pytest.raises(RewardInputError, match="timeout_penalty"):
        regret([0.0], [0.0], timeout_penalty=-1)


def test_returns_that_are_not_finite_count_as_failed_plays_and_are_not_averaged():
    est = regret([1.0, math.nan, 1.0], [0.0, math.inf, -math.inf, 10**4000], timeout_penalty=0.5)
    assert (est.n_with_hint, est.n_without_hint, est.failed) == (2, 1, 4)
    assert est.mean_with_hint == 1.0 and est.mean_without_hint == 0.0
    assert est.hint_gain == 1.0 and est.value == pytest.approx(1.0 - 0.5 * 4 / 7)
    assert math.isfinite(est.value) and math.isnan(est.stderr)


@given(returns, returns)
def test_regret_without_failures_is_the_floored_difference(with_hint, without):
    est = regret(with_hint, without)
    assert est.value >= 0.0
    assert est.n == len(with_hint) + len(without)
    if with_hint and without:
        diff = sum(with_hint) / len(with_hint) - sum(without) / len(without)
        assert est.hint_gain == pytest.approx(diff, abs=1e-9)
        assert est.value == pytest.approx(max(0.0, diff), abs=1e-9)
    if len(with_hint) >= 2 and len(without) >= 2:
        assert est.stderr >= 0.0
    else:
        assert math.isnan(est.stderr)


@given(maybe_returns, maybe_returns, st.floats(0.0, 2.0))
def test_regret_bounds_with_failures(with_hint, without, penalty):
    est = regret(with_hint, without, timeout_penalty=penalty)
    total = len(with_hint) + len(without)
    failed = sum(r is None for r in [*with_hint, *without])
    assert est.failed == failed
    assert -penalty - 1e-9 <= est.value <= 1.0 + 1e-9
    if failed == 0:
        assert est.value >= 0.0
    else:
        assert est.value <= max(0.0, est.hint_gain) - penalty * failed / total + 1e-9


@given(returns, returns)
def test_more_hinted_success_never_lowers_regret(with_hint, without):
    better = [min(1.0, r + 0.5) for r in with_hint]
    assert regret(better, without).value >= regret(with_hint, without).value - 1e-12


def test_plateau_and_blend_known_values():
    assert plateau(0.4) == plateau(0.5) == plateau(0.6) == 1.0
    assert plateau(0.15) == pytest.approx(0.0)
    assert plateau(0.0) == 0.0 and plateau(1.0) == 0.0
    assert plateau(0.275) == pytest.approx(0.5)
    assert plateau(0.725) == pytest.approx(0.5)
    assert blend(0.15, 0.5) == pytest.approx(1.0)
    assert blend(0.075, 0.5) == pytest.approx(0.2 + 0.6)
    assert blend(0.0, 1.0) == 0.0
    assert blend(1.0, 0.0) == pytest.approx(0.4)
    assert blend(-0.2, 0.5) == pytest.approx(0.6)  # a penalised (negative) regret adds nothing


@given(st.floats(-1.0, 2.0), rates)
def test_blend_lies_in_unit_interval(r, p):
    assert 0.0 <= blend(r, p) <= 1.0 + 1e-12


@given(rates, rates)
def test_plateau_is_symmetric_around_half_and_monotone_outside(a, b):
    assert plateau(a) == pytest.approx(plateau(1.0 - a), abs=1e-9)
    low, high = sorted((a, b))
    if high <= 0.4:
        assert plateau(low) <= plateau(high) + 1e-12
    if low >= 0.6:
        assert plateau(low) >= plateau(high) - 1e-12


@given(rates)
def test_learnability(p):
    value = learnability(p)
    assert 0.0 <= value <= 0.25
    assert value == pytest.approx(learnability(1.0 - p))


def test_learnability_and_plateau_reject_bad_rates():
    assert learnability(0.5) == 0.25 and learnability(0.0) == learnability(1.0) == 0.0
    for bad in (-0.1, 1.5, math.nan, "0.5"):
        with pytest.raises(RewardInputError):
            learnability(bad)
        with pytest.raises(RewardInputError):
            plateau(bad)
    with pytest.raises(RewardInputError, match="regret"):
        blend(math.nan, 0.5)


def test_standard_errors_of_a_mean_and_of_a_rate():
    import math

    from spade_envs.agent.rewards import binomial_standard_error, standard_error

    assert standard_error([1.0, 0.0, 1.0, 0.0]) == pytest.approx((1 / 3 / 4) ** 0.5)
    assert math.isnan(standard_error([1.0])) and math.isnan(standard_error([]))
    assert binomial_standard_error(0.5, 4) == 0.25
    assert math.isnan(binomial_standard_error(0.0, 0))


def test_wilson_intervals_bound_a_zero_and_refuse_impossible_counts():
    from spade_envs.agent.rewards import wilson_interval

    low, high = wilson_interval(0, 16)
    assert low == 0.0 and high == pytest.approx(0.1936, abs=1e-4)  # n = 16 rules out only > 19%
    assert wilson_interval(16, 16)[1] == 1.0 and wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(1 - high)
    with pytest.raises(RewardInputError, match="0 <= successes <= n"):
        wilson_interval(3, 2)


@given(st.integers(0, 200), st.integers(1, 200))
def test_wilson_intervals_hold_the_observed_rate(k, n):
    from spade_envs.agent.rewards import wilson_interval

    k = min(k, n)
    low, high = wilson_interval(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0
