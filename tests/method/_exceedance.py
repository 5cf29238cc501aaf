"""Closed forms for the Monte Carlo checks of the paper bound (test helper, not library code)."""

from __future__ import annotations

import math

from eraudit_core.method import lower_confidence_bound


def first_exceedance_time(p: float, confidence: float) -> int:
    """Smallest t with alpha**(1/t) > p: the paper bound can only miss p after t clean draws,
    so the worst-case (stop-at-first-exceedance) miss probability is exactly p**t."""
    alpha = 1.0 - confidence
    t = max(1, math.floor(math.log(alpha) / math.log(p)))
    while lower_confidence_bound(t, confidence) <= p:
        t += 1
    while t > 1 and lower_confidence_bound(t - 1, confidence) > p:
        t -= 1
    return t
