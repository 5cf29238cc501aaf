"""Lower confidence bounds on the non-degradation probability (docs/design.md §4, paper §3.3-3.4).

Paper bound. Under H: p_g <= p, the probability that the first t paraphrases from generator g
are all non-degraded is at most p**t. So L_t = alpha**(1/t) after t successes (and 0 after any
failure) satisfies P(exists t: L_t > p_g) <= alpha: a one-sided (1 - alpha) confidence
sequence, valid at any data-dependent stopping time (paper Theorem 1).

Common bound. min_g L_g is simultaneously below every p_g with probability >= 1 - alpha (the
bound can only exceed min_g p_g if the generator attaining that minimum misses, paper
Theorem 2), so it bounds every mixture of the generators.

Failure-tolerant bound (beyond the paper). The beta-binomial mixture martingale
M_t(p0) = B(a + S_t, b + t - S_t) / B(a, b) / (p0**S_t * (1 - p0)**(t - S_t)) has expectation 1
under p = p0 at every t, so by Ville's inequality {p0 : M_t(p0) < 1/alpha} is a (1 - alpha)
confidence sequence. Its lower end, kept as a running maximum (the intersection of a
confidence sequence is again one), is a lower bound that survives a few counterexamples.
With S_t = t and a = b = 1 it equals (alpha / (t + 1))**(1/t), slightly below the paper bound:
the price of tolerating failures.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from scipy.optimize import brentq
from scipy.special import betaln

CONFIDENCE_LEVELS = (0.8, 0.85, 0.9, 0.95, 0.99, 0.999)


def check_confidence(confidence: float) -> float:
    """Return alpha = 1 - confidence after checking 0 < confidence < 1."""
    if not (isinstance(confidence, float | int) and 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    return 1.0 - float(confidence)


def lower_confidence_bound(t: int, confidence: float) -> float:
    """L_t = alpha**(1/t) after t non-degraded paraphrases in a row (t >= 1); 0 for t = 0."""
    alpha = check_confidence(confidence)
    if t < 0:
        raise ValueError(f"t must be >= 0, got {t}")
    if t == 0:
        return 0.0
    return float(alpha ** (1.0 / t))


def bound_trajectory(successes: Sequence[bool], confidence: float) -> list[float]:
    """L_1..L_n for a sequence of outcomes (True = non-degraded); 0 from the first failure on."""
    out: list[float] = []
    failed = False
    for t, ok in enumerate(successes, start=1):
        failed = failed or not ok
        out.append(0.0 if failed else lower_confidence_bound(t, confidence))
    return out


def required_successes(target: float, confidence: float, tv_delta: float = 0.0) -> int:
    """n* = ceil(ln alpha / ln(p* + delta)): successes needed before the bound after the
    total-variation relaxation, max(0, L_t - delta), reaches p* (delta = 0: the paper's n*).

    Refuses p* + delta >= 1: no number of successes then brings L_t - delta up to p*.
    """
    alpha = check_confidence(confidence)
    if not 0.0 < target < 1.0:
        raise ValueError(f"target p* must lie strictly between 0 and 1, got {target!r}")
    if not 0.0 <= tv_delta <= 1.0:
        raise ValueError(f"total-variation delta must lie in [0, 1], got {tv_delta!r}")
    goal = target + tv_delta
    if goal >= 1.0:
        raise ValueError(
            f"target p* + total-variation delta = {goal:g} >= 1: the bound after TV, "
            f"L_t - delta, can never reach p* = {target:g}"
        )
    n = math.ceil(math.log(alpha) / math.log(goal))
    # Guard against floating error at exact powers: the smallest n with alpha**(1/n) >= goal.
    while n > 1 and alpha ** (1.0 / (n - 1)) - tv_delta >= target:
        n -= 1
    while alpha ** (1.0 / n) - tv_delta < target:
        n += 1
    return n


def common_bound(generator_bounds: Sequence[float]) -> float:
    """L = min_g L_g, a lower bound for min_g p_g and so for every mixture of generators."""
    if not generator_bounds:
        raise ValueError("common_bound needs at least one generator bound")
    return float(min(generator_bounds))


def tv_relaxed_bound(bound: float, delta: float) -> float:
    """max(0, L - delta) for distributions within total variation delta of a mixture."""
    if not 0.0 <= delta <= 1.0:
        raise ValueError(f"total-variation delta must lie in [0, 1], got {delta!r}")
    return max(0.0, float(bound) - float(delta))


def _log_mixture_martingale(p0: float, s: int, t: int, a: float, b: float) -> float:
    return float(
        betaln(a + s, b + t - s) - betaln(a, b) - s * math.log(p0) - (t - s) * math.log1p(-p0)
    )


@functools.lru_cache(maxsize=1 << 16)
def failure_tolerant_lower_bound(
    successes: int, t: int, confidence: float, prior: tuple[float, float] = (1.0, 1.0)
) -> float:
    """Lower end of the beta-binomial mixture confidence set at one time t (no running max).

    Solves M_t(p0) = 1/alpha for p0 in (0, S/t]; log M_t is decreasing there.
    """
    alpha = check_confidence(confidence)
    if not 0 <= successes <= t:
        raise ValueError(f"need 0 <= successes <= t, got {successes}, {t}")
    if t == 0 or successes == 0:
        return 0.0
    a, b = prior
    threshold = math.log(1.0 / alpha)
    p_hat = successes / t
    if p_hat >= 1.0:
        # Closed form of the left end when every step succeeded: log M = log B(a+t,b)/B(a,b) - t log p0.
        log_b = float(betaln(a + t, b) - betaln(a, b))
        return float(min(1.0, math.exp((log_b - threshold) / t)))
    # log M_t is decreasing on (0, S/t]: +inf as p0 -> 0 (S > 0), and log M_t(S/t) <= 0 <
    # log(1/alpha) because a Beta mixture of p**S (1-p)**(t-S) is at most its maximum, at S/t.
    return float(
        brentq(lambda p: _log_mixture_martingale(p, successes, t, a, b) - threshold, 1e-300, p_hat)
    )


def failure_tolerant_trajectory(
    outcomes: Sequence[bool], confidence: float, prior: tuple[float, float] = (1.0, 1.0)
) -> list[float]:
    """Running-maximum failure-tolerant bound after each outcome (True = non-degraded)."""
    out: list[float] = []
    best = 0.0
    s = 0
    for t, ok in enumerate(outcomes, start=1):
        s += int(bool(ok))
        best = max(best, failure_tolerant_lower_bound(s, t, confidence, prior))
        out.append(best)
    return out
