"""The degradation score and the counterexample rule (DESIGN.md §4, paper §3.1).

All arithmetic is float64 on the probabilities as scored; nothing is rounded before the
comparison with epsilon.
"""

from __future__ import annotations

import math

DEFAULT_K = 0.001


def monitored_gain(p_pre_monitored: float, p_post_monitored: float) -> float:
    """g = p_post(Y_true | Q_Y) - p_pre(Y_true | Q_Y), signed."""
    return float(p_post_monitored) - float(p_pre_monitored)


def degradation_denominator(gain: float, k: float = DEFAULT_K) -> float:
    """den = max(k, g): the floor k keeps D finite when the monitored task did not improve."""
    if not (k > 0 and math.isfinite(k)):
        raise ValueError(f"k must be a positive finite number, got {k!r}")
    return max(float(k), float(gain))


def degradation_score(p_pre_hidden: float, p_post_hidden: float, denominator: float) -> float:
    """D(x) = (p_pre(H_true | x) - p_post(H_true | x)) / den. No clipping, no absolute value."""
    if not denominator > 0:
        raise ValueError(f"denominator must be positive, got {denominator!r}")
    return (float(p_pre_hidden) - float(p_post_hidden)) / float(denominator)


def is_counterexample(d: float, epsilon: float) -> bool:
    """x is a counterexample iff D(x) > epsilon; D(x) == epsilon is non-degradation (ties pass)."""
    return d > epsilon
