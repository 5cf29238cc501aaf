"""The degradation score and the counterexample rule (docs/design.md §4, paper §3.1).

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


def is_counterexample(
    d: float, epsilon: float, drop: float | None = None, min_drop: float = 0.0
) -> bool:
    """x is a counterexample iff D(x) > epsilon; D(x) == epsilon is non-degradation (ties pass).

    With an auditor-stated minimum drop (beyond the paper, an assumption like TV; 0 = the
    paper's rule), x must also have drop = p_pre - p_post > min_drop: a drop that small is not
    counted whatever the denominator makes of it.
    """
    if min_drop > 0.0:
        if drop is None:
            raise ValueError("is_counterexample: a minimum drop needs the drop p_pre - p_post")
        return d > epsilon and drop > min_drop
    return d > epsilon


def probability_drop(p_pre_hidden: float, p_post_hidden: float) -> float:
    """drop = p_pre(H_true | x) - p_post(H_true | x): how far p(true answer) fell (signed)."""
    return float(p_pre_hidden) - float(p_post_hidden)


def is_amplified(gain: float, k: float) -> bool:
    """True when the monitored gain g <= k, so den is the floor k and every drop counts 1/k."""
    return float(gain) <= float(k)
