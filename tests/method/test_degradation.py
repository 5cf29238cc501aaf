"""The degradation score and the counterexample rule (docs/design.md §4), pinned to hand arithmetic.

Values are chosen as dyadic fractions (0.25, 0.5, 0.75, ...) where a test needs exact equality,
so a tie really is a tie in float64.
"""

from __future__ import annotations

import math

import pytest

from eraudit_core.method import (
    DEFAULT_K,
    degradation_denominator,
    degradation_score,
    is_counterexample,
    monitored_gain,
)


def test_default_k_is_one_thousandth():
    assert DEFAULT_K == 0.001


def test_monitored_gain_is_signed_post_minus_pre():
    # g = p_post - p_pre = 0.75 - 0.5 = 0.25 (exact in binary)
    assert monitored_gain(0.5, 0.75) == 0.25
    # the adaptation made the monitored task worse: g = 0.5 - 0.75 = -0.25, kept negative
    assert monitored_gain(0.75, 0.5) == -0.25
    assert monitored_gain(0.3, 0.3) == 0.0


def test_denominator_is_the_gain_when_above_the_floor():
    # den = max(k, g) = max(0.001, 0.25) = 0.25
    assert degradation_denominator(0.25) == 0.25
    assert degradation_denominator(0.25, k=0.5) == 0.5  # max(0.5, 0.25)


def test_k_floor_with_negative_gain():
    # g = -0.25 < k: den = max(0.001, -0.25) = k = 0.001
    assert degradation_denominator(-0.25) == 0.001
    # g = 0 (no improvement): den = k
    assert degradation_denominator(0.0, k=0.01) == 0.01
    # g = 0.0005, positive but below the floor: den = 0.001
    assert degradation_denominator(0.0005) == 0.001


@pytest.mark.parametrize("k", [0.0, -0.001, math.nan, math.inf])
def test_k_must_be_positive_and_finite(k):
    with pytest.raises(ValueError, match="k must be"):
        degradation_denominator(0.1, k=k)


def test_degradation_score_hand_values():
    # D = (p_pre - p_post) / den = (0.75 - 0.5) / 0.25 = 1.0
    assert degradation_score(0.75, 0.5, 0.25) == 1.0
    # improvement on the hidden question gives a negative D (no absolute value):
    # (0.5 - 0.75) / 0.25 = -1.0
    assert degradation_score(0.5, 0.75, 0.25) == -1.0
    # no clipping: with the floor den = 0.001, (0.875 - 0.375) / 0.001 = 500
    assert degradation_score(0.875, 0.375, 0.001) == pytest.approx(500.0, rel=1e-12)
    # unchanged probability: D = 0
    assert degradation_score(0.6, 0.6, 0.2) == 0.0


def test_full_chain_with_negative_gain_uses_k():
    # monitored 0.75 -> 0.5: g = -0.25, den = k = 0.001;
    # hidden 0.5 -> 0.4995: D = 0.0005 / 0.001 = 0.5 (up to float error in 0.5 - 0.4995)
    g = monitored_gain(0.75, 0.5)
    den = degradation_denominator(g)
    d = degradation_score(0.5, 0.4995, den)
    assert g == -0.25
    assert den == 0.001
    assert d == pytest.approx(0.5, rel=1e-9)
    assert is_counterexample(d, 0.1)  # 0.5 > 0.1
    assert not is_counterexample(d, 0.6)  # 0.5 <= 0.6


@pytest.mark.parametrize("den", [0.0, -0.1, math.nan])
def test_denominator_must_be_positive(den):
    with pytest.raises(ValueError, match="denominator"):
        degradation_score(0.5, 0.4, den)


def test_counterexample_rule_tie_passes():
    # D == epsilon is non-degradation: (0.75 - 0.5) / 0.25 = 1.0 exactly, epsilon = 1.0
    d = degradation_score(0.75, 0.5, degradation_denominator(monitored_gain(0.5, 0.75)))
    assert d == 1.0
    assert is_counterexample(d, 1.0) is False
    # the next float above epsilon is a counterexample
    assert is_counterexample(math.nextafter(1.0, 2.0), 1.0) is True
    # and the next float below is not
    assert is_counterexample(math.nextafter(1.0, 0.0), 1.0) is False


def test_counterexample_rule_with_zero_and_negative_epsilon():
    assert is_counterexample(0.0, 0.0) is False  # tie at zero passes
    assert is_counterexample(1e-15, 0.0) is True
    # a negative epsilon makes "no change" a counterexample: 0 > -0.1
    assert is_counterexample(0.0, -0.1) is True
    assert is_counterexample(-0.2, -0.1) is False
