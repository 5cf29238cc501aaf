"""Confidence bounds (docs/design.md §4): hand-computed values, edge cases and properties.

Every pinned number has its arithmetic in a comment. Note that confidence 0.95 gives
alpha = 1 - 0.95 = 0.050000000000000044 in float64, so comparisons use rel=1e-12.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eraudit_core.method import _bounds as B
from tests.method._exceedance import first_exceedance_time

REL = 1e-12


# -- independent reference for the beta-binomial mixture bound ---------------------------------
def _lbeta(a: float, b: float) -> float:
    """log B(a, b) via math.lgamma (independent of scipy.special.betaln used by the library)."""
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _mixture_lower_end(s: int, t: int, alpha: float, a: float = 1.0, b: float = 1.0) -> float:
    """Smallest p0 in (0, s/t] with log M_t(p0) < log(1/alpha), by plain bisection, where
    M_t(p0) = B(a + s, b + t - s) / B(a, b) / (p0**s * (1 - p0)**(t - s))."""
    thr = math.log(1.0 / alpha)

    def f(p: float) -> float:
        return (
            _lbeta(a + s, b + t - s)
            - _lbeta(a, b)
            - s * math.log(p)
            - (t - s) * math.log1p(-p)
            - thr
        )

    lo, hi = 1e-300, s / t
    if s == t:
        hi = 1.0 - 1e-16
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return lo


# -- confidence validation ----------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0.0, 1.0, 1.2, -0.5, "0.95", None])
def test_confidence_must_lie_strictly_between_0_and_1(bad):
    with pytest.raises(ValueError, match="confidence"):
        B.check_confidence(bad)


def test_alpha_is_one_minus_confidence():
    assert B.check_confidence(0.75) == 0.25  # exact: 1 - 0.75
    assert B.check_confidence(0.95) == pytest.approx(0.05, rel=REL)


# -- paper bound L_t = alpha ** (1 / t) ---------------------------------------------------------
@pytest.mark.parametrize(
    ("t", "confidence", "expected"),
    [
        (0, 0.95, 0.0),  # nothing tested yet: no bound
        (1, 0.95, 0.05),  # 0.05 ** 1
        (2, 0.95, 0.22360679774997896),  # sqrt(0.05)
        (4, 0.95, 0.4728708045015879),  # sqrt(sqrt(0.05)) = sqrt(0.2236068) = 0.4728708
        (5, 0.95, 0.5492802716530588),  # exp(ln 0.05 / 5) = exp(-2.9957323 / 5) = exp(-0.5991465)
        (10, 0.95, 0.7411344491069477),  # exp(-0.29957323)
        (29, 0.95, 0.9018553723227043),  # exp(-2.9957323 / 29) = exp(-0.1033011)
        (100, 0.95, 0.9704869503929601),  # exp(-0.029957323)
        (2, 0.75, 0.5),  # sqrt(0.25), exact
        (3, 0.875, 0.5),  # 0.125 ** (1/3) = 0.5
        (1, 0.8, 0.2),  # alpha itself (1 - 0.8 = 0.19999999999999996)
    ],
)
def test_lower_confidence_bound_hand_values(t, confidence, expected):
    assert B.lower_confidence_bound(t, confidence) == pytest.approx(expected, rel=REL, abs=1e-15)


def test_lower_confidence_bound_rejects_negative_t():
    with pytest.raises(ValueError, match="t must be"):
        B.lower_confidence_bound(-1, 0.95)


def test_bound_trajectory_is_zero_from_the_first_failure_on():
    # L_1 = 0.05, L_2 = sqrt(0.05) = 0.2236068, then a failure: 0 forever, even after successes
    traj = B.bound_trajectory([True, True, False, True, True], 0.95)
    assert traj[0] == pytest.approx(0.05, rel=REL)
    assert traj[1] == pytest.approx(0.22360679774997896, rel=REL)
    assert traj[2:] == [0.0, 0.0, 0.0]
    assert B.bound_trajectory([], 0.95) == []


# -- n* = ceil(ln alpha / ln p*) -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("target", "confidence", "n_star"),
    [
        # exact powers: the ratio of logs is an integer, so ceil must not round up by float error
        (0.5, 0.75, 2),  # alpha = 0.25: ln 0.25 / ln 0.5 = 2; L_2 = 0.5 >= 0.5
        (0.5, 0.875, 3),  # alpha = 0.125 = 0.5 ** 3
        (0.5, 0.9375, 4),  # alpha = 0.0625 = 0.5 ** 4
        (0.25, 0.9375, 2),  # alpha = 0.0625 = 0.25 ** 2
        (0.25, 0.75, 1),  # alpha = 0.25 = p*: one success suffices
        # non-exact
        (0.9, 0.95, 29),  # ln 0.05 / ln 0.9 = -2.9957 / -0.10536 = 28.43 -> 29
        (0.99, 0.95, 299),  # -2.9957 / -0.0100503 = 298.07 -> 299
        (0.95, 0.8, 32),  # ln 0.2 / ln 0.95 = -1.6094 / -0.051293 = 31.38 -> 32
        (0.04, 0.95, 1),  # p* below alpha: L_1 = 0.05 >= 0.04 already
    ],
)
def test_required_successes(target, confidence, n_star):
    n = B.required_successes(target, confidence)
    assert n == n_star
    # the defining property: L_{n*} >= p* and (n* > 1) L_{n*-1} < p*
    assert B.lower_confidence_bound(n, confidence) >= target
    if n > 1:
        assert B.lower_confidence_bound(n - 1, confidence) < target


@pytest.mark.parametrize("target", [0.0, 1.0, -0.1, 1.5])
def test_required_successes_rejects_bad_target(target):
    with pytest.raises(ValueError, match="target"):
        B.required_successes(target, 0.95)


@pytest.mark.parametrize(
    ("p", "confidence", "T"),
    [
        (0.5, 0.75, 3),  # L_2 = 0.5 is not > 0.5; L_3 = 0.25 ** (1/3) = 0.63 > 0.5
        (0.9, 0.95, 29),  # L_28 = 0.89853 <= 0.9 < L_29 = 0.90186
        (0.9, 0.8, 16),  # floor(ln 0.2 / ln 0.9) + 1 = floor(15.28) + 1
        (0.995, 0.8, 322),  # floor(-1.6094 / -0.0050125) + 1 = floor(321.08) + 1
        (0.97, 0.95, 99),  # floor(-2.9957 / -0.030459) + 1 = floor(98.35) + 1
    ],
)
def test_first_exceedance_time(p, confidence, T):
    assert first_exceedance_time(p, confidence) == T
    assert B.lower_confidence_bound(T, confidence) > p
    assert B.lower_confidence_bound(T - 1, confidence) <= p


# -- common bound and total-variation relaxation ---------------------------------------------
def test_common_bound_is_the_minimum_over_generators():
    # generators with 10 and 4 successes at 0.95: min(0.7411344, 0.4728708) = 0.4728708
    l10 = B.lower_confidence_bound(10, 0.95)
    l4 = B.lower_confidence_bound(4, 0.95)
    assert B.common_bound([l10, l4]) == pytest.approx(0.4728708045015879, rel=REL)
    assert B.common_bound([0.9, 0.0, 0.5]) == 0.0  # a degraded generator pins it to 0
    assert B.common_bound([0.3]) == 0.3
    with pytest.raises(ValueError):
        B.common_bound([])


def test_tv_relaxation():
    # max(0, 0.4728708 - 0.1) = 0.3728708
    assert B.tv_relaxed_bound(0.4728708045015879, 0.1) == pytest.approx(0.3728708045015879, rel=REL)
    # max(0, 0.3 - 0.5) = 0, never negative
    assert B.tv_relaxed_bound(0.3, 0.5) == 0.0
    assert B.tv_relaxed_bound(0.75, 0.0) == 0.75
    for bad in (-0.01, 1.01):
        with pytest.raises(ValueError, match="delta"):
            B.tv_relaxed_bound(0.5, bad)


# -- failure-tolerant bound (beyond the paper) --------------------------------------------
@pytest.mark.parametrize(
    ("t", "expected"),
    [
        (1, 0.025),  # (0.05 / 2) ** 1
        (2, 0.12909944487358055),  # sqrt(0.05 / 3) = sqrt(0.0166667)
        (3, 0.23207944168063890),  # (0.05 / 4) ** (1/3) = 0.0125 ** (1/3)
        (4, 0.31622776601683794),  # (0.05 / 5) ** (1/4) = 0.01 ** 0.25 = 0.1 ** 0.5
        (10, 0.5831197243434639),  # exp((ln 0.05 - ln 11) / 10) = exp(-0.5393628)
        (100, 0.9267156265971),  # exp((ln 0.05 - ln 101) / 100) = exp(-0.0761084)
    ],
)
def test_failure_tolerant_all_success_closed_form(t, expected):
    # Beta(1, 1) prior, S_t = t: B(1 + t, 1) / B(1, 1) = 1 / (t + 1), so the lower end solves
    # 1 / ((t + 1) p0**t) = 1 / alpha, i.e. p0 = (alpha / (t + 1)) ** (1/t)
    got = B.failure_tolerant_lower_bound(t, t, 0.95)
    assert got == pytest.approx(expected, rel=1e-10)
    # strictly below the paper bound alpha ** (1/t): the price of tolerating failures
    assert got < B.lower_confidence_bound(t, 0.95)


def test_failure_tolerant_other_prior_closed_form():
    # Beta(2, 2), S_t = t = 10: B(12, 2) / B(2, 2) = (1 / (12 * 13)) / (1 / 6) = 6 / 156, so
    # p0 = (0.05 * 6 / 156) ** (1/10) = 0.0019230769 ** 0.1 = 0.5350565
    got = B.failure_tolerant_lower_bound(10, 10, 0.95, prior=(2.0, 2.0))
    assert got == pytest.approx(0.5350565262327639, rel=1e-10)


def test_failure_tolerant_after_failures_solves_the_mixture_equation():
    # S = 99 of t = 100: B(100, 2) = 1 / (100 * 101) = 1 / 10100; M(p0) = 1 / alpha = 20 means
    # p0**99 (1 - p0) = 1 / (10100 * 20) = 1 / 202000, whose root below 0.99 is 0.9052030
    got = B.failure_tolerant_lower_bound(99, 100, 0.95)
    assert got == pytest.approx(0.9052030363566005, rel=1e-8)
    assert got**99 * (1 - got) == pytest.approx(1 / 202000, rel=1e-6)
    # S = 98 of 100: B(99, 3) = 2 / (99 * 100 * 101); p0**98 (1 - p0)**2 = 1 / 9999000 -> 0.8869348
    got = B.failure_tolerant_lower_bound(98, 100, 0.95)
    assert got == pytest.approx(0.8869347846064426, rel=1e-8)
    assert got**98 * (1 - got) ** 2 == pytest.approx(1 / 9999000, rel=1e-6)
    # S = 10 of t = 11 (independent bisection of the same equation)
    assert B.failure_tolerant_lower_bound(10, 11, 0.95) == pytest.approx(
        _mixture_lower_end(10, 11, 0.05), rel=1e-8
    )


def test_failure_tolerant_degenerate_cases():
    assert B.failure_tolerant_lower_bound(0, 0, 0.95) == 0.0
    assert B.failure_tolerant_lower_bound(0, 5, 0.95) == 0.0  # no success: nothing to certify
    with pytest.raises(ValueError):
        B.failure_tolerant_lower_bound(6, 5, 0.95)
    with pytest.raises(ValueError):
        B.failure_tolerant_lower_bound(-1, 5, 0.95)


def test_failure_tolerant_trajectory_running_max_survives_a_failure():
    outcomes = [True] * 10 + [False] + [True] * 5
    traj = B.failure_tolerant_trajectory(outcomes, 0.95)
    assert len(traj) == 16
    # t = 10, all successes: (0.05 / 11) ** 0.1 = 0.5831197
    assert traj[9] == pytest.approx(0.5831197243434639, rel=1e-10)
    # t = 11, S = 10: the point bound drops to 0.4861323, the running max holds 0.5831197
    assert B.failure_tolerant_lower_bound(10, 11, 0.95) == pytest.approx(
        0.48613229691619486, rel=1e-8
    )
    assert traj[10] == traj[9]
    # it is monotone and stays > 0 after the failure, unlike the paper bound (0 from t = 11)
    assert all(b >= a for a, b in zip(traj, traj[1:], strict=False))
    assert min(traj[10:]) > 0
    assert B.bound_trajectory(outcomes, 0.95)[10:] == [0.0] * 6
    # t = 16, S = 15: above the t = 10 value again
    assert traj[15] == pytest.approx(_mixture_lower_end(15, 16, 0.05), rel=1e-8)
    assert traj[15] > traj[9]


def test_failure_tolerant_two_failures_in_100_is_positive_and_below_the_rate():
    # failures first, then 98 successes: S_100 = 98; bound at t = 100 is 0.8869348 (see above),
    # below the empirical rate 0.98, and the running max is attained at t = 100
    traj = B.failure_tolerant_trajectory([False, False] + [True] * 98, 0.95)
    assert traj[0] == traj[1] == 0.0
    assert traj[-1] == pytest.approx(0.8869347846064426, rel=1e-8)
    assert 0 < traj[-1] < 0.98


# -- properties ------------------------------------------------------------------------------
confidences = st.floats(min_value=0.01, max_value=0.999, allow_nan=False)
steps = st.integers(min_value=1, max_value=5000)


@settings(max_examples=200, deadline=None)
@given(t=steps, c=confidences)
def test_paper_bound_in_unit_interval_and_monotone_in_t(t, c):
    lt = B.lower_confidence_bound(t, c)
    assert 0.0 <= lt <= 1.0
    assert B.lower_confidence_bound(t + 1, c) >= lt


@settings(max_examples=200, deadline=None)
@given(t=steps, c1=confidences, c2=confidences)
def test_paper_bound_decreases_in_confidence(t, c1, c2):
    lo, hi = sorted((c1, c2))
    assert B.lower_confidence_bound(t, hi) <= B.lower_confidence_bound(t, lo)


@settings(max_examples=100, deadline=None)
@given(target=st.floats(min_value=0.01, max_value=0.999), c=confidences)
def test_required_successes_is_the_smallest_sufficient_n(target, c):
    n = B.required_successes(target, c)
    assert n >= 1
    assert B.lower_confidence_bound(n, c) >= target
    assert n == 1 or B.lower_confidence_bound(n - 1, c) < target
    # against the closed form, away from exact powers (where float rounding decides)
    ratio = math.log(1 - c) / math.log(target)
    if abs(ratio - round(ratio)) > 1e-9:
        assert n == max(1, math.ceil(ratio))


@settings(max_examples=100, deadline=None)
@given(p=st.floats(min_value=0.01, max_value=0.999), c=confidences)
def test_first_exceedance_time_property(p, c):
    T = first_exceedance_time(p, c)
    assert B.lower_confidence_bound(T, c) > p
    assert T == 1 or B.lower_confidence_bound(T - 1, c) <= p


@settings(max_examples=100, deadline=None)
@given(
    t=st.integers(min_value=1, max_value=300),
    frac=st.floats(min_value=0.0, max_value=1.0),
    c1=confidences,
    c2=confidences,
)
def test_failure_tolerant_bound_properties(t, frac, c1, c2):
    s = round(frac * t)
    lo_c, hi_c = sorted((c1, c2))
    b_lo = B.failure_tolerant_lower_bound(s, t, lo_c)
    b_hi = B.failure_tolerant_lower_bound(s, t, hi_c)
    assert 0.0 <= b_hi <= b_lo <= 1.0  # decreasing in confidence, in [0, 1]
    assert b_lo <= s / t + 1e-12  # never above the observed rate
    # at most the paper bound (equal to it only when nothing is certified)
    assert b_lo <= B.lower_confidence_bound(t, lo_c) + 1e-12
    if s < t:  # one more success can only help
        assert B.failure_tolerant_lower_bound(s + 1, t, lo_c) >= b_lo - 1e-12


@settings(max_examples=60, deadline=None)
@given(outcomes=st.lists(st.booleans(), min_size=1, max_size=80), c=confidences)
def test_failure_tolerant_trajectory_is_a_monotone_running_max(outcomes, c):
    traj = B.failure_tolerant_trajectory(outcomes, c)
    assert len(traj) == len(outcomes)
    assert all(0.0 <= x <= 1.0 for x in traj)
    assert all(b >= a for a, b in zip(traj, traj[1:], strict=False))
    s = 0
    for t, ok in enumerate(outcomes, start=1):
        s += ok
        assert traj[t - 1] >= B.failure_tolerant_lower_bound(s, t, c)
