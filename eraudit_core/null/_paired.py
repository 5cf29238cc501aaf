"""Per question: does the arm lose more than its control on the same rewordings?

For each rewording x_j both runs scored (same text, same pre-adaptation score), the paired
difference is d_j = p_post_control(x_j) - p_post_arm(x_j). The pre score is shared, so d_j is
the arm's drop minus the control's drop, and it needs no monitored gain: nothing is divided by
a gain, so questions whose gain is at most k do not dominate the reading.

The test is a one-sample t test on the d_j of one question, one-sided each way at `level`.
Its variance comes from the d_j themselves, so an arm that moves scores more than its control
in both directions (a larger variance of d, not a shift of its mean) keeps the false-alarm rate
at 1 - level; tests/null/test_null_monte_carlo.py measures this and the power on simulated
tables (docs/null-reading.md). A sign-flip or Wilcoxon test would also be valid, but the
Wilcoxon test judges the median rather than the mean drop and the sign-flip test gains nothing
at 15 to 50 rewordings a question, where the t test's normal approximation of the mean holds.

Dispersion (is the arm noisier than the control?) is the Pitman-Morgan test for two paired
variances: var(a) = var(c) exactly when a + c and a - c are uncorrelated. It is reported in
words, never as harm.

Everything here works on a questions x rewordings matrix with NaN where a question has fewer
rewordings, so one vectorised call reads 200 questions (or 200 simulated runs of them).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

DEFAULT_LEVEL = 0.95
# Fewer paired rewordings than this and a question is "not assessable": the t test is exact
# only for normal differences, and below five its protection against skewed or heavy-tailed
# scores (probabilities pile up near 0 and 1) is poor, while its power is negligible anyway.
MIN_PAIRED = 5
# The arm "moves scores more than its control in both directions" when the Pitman-Morgan test
# says so at the reading's level and its spread is at least this many times the control's (the
# smallest ratio the review measured as harmful to a threshold rule).
DISPERSION_RATIO = 1.25

BEYOND = "beyond control"
BETTER = "better than control"
WITHIN = "within control"
NOT_ASSESSABLE = "not assessable"
NULL_VERDICTS = (BEYOND, BETTER, WITHIN, NOT_ASSESSABLE)
PAIRED_TEST = "one-sided paired t test on control minus arm post-adaptation scores"


@dataclass(frozen=True)
class PairedTests:
    """Per-question arrays (one entry a row of the input matrix)."""

    n: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    t: np.ndarray
    p_beyond: np.ndarray
    p_better: np.ndarray
    low: np.ndarray
    high: np.ndarray
    verdict: np.ndarray


def check_level(level: float) -> float:
    """The reading's level as a float strictly between 0.5 and 1 (one-sided each way)."""
    from eraudit_core.errors import InputError

    try:
        value = float(level)
    except (TypeError, ValueError):
        raise InputError(f"the null reading's level must be a number, got {level!r}") from None
    if not (np.isfinite(value) and 0.5 < value < 1.0):
        raise InputError(
            f"the null reading's level must lie strictly between 0.5 and 1 (e.g. 0.95), got "
            f"{level!r}"
        )
    return value


def paired_t(d: np.ndarray, level: float = DEFAULT_LEVEL) -> PairedTests:
    """One-sided t tests, each way, of the mean of every row of `d` (NaN = no rewording).

    `low`/`high` bound the two-sided 2 * level - 1 interval of the mean difference (90% at
    0.95): `beyond control` exactly when low > 0, `better than control` exactly when high < 0.
    A row whose differences are all equal has sd 0: its p is 0 in the direction of a non-zero
    mean and 1 otherwise. Rows with fewer than MIN_PAIRED values are `not assessable`.
    """
    level = check_level(level)
    d = np.atleast_2d(np.asarray(d, dtype=float))
    n = np.sum(~np.isnan(d), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nanmean(np.where(n[:, None] > 0, d, 0.0), axis=1)
        mean = np.where(n > 0, mean, np.nan)
        sd = np.sqrt(np.nansum((d - mean[:, None]) ** 2, axis=1) / np.maximum(n - 1, 1))
        se = sd / np.sqrt(np.maximum(n, 1))
        t = mean / se
    df = np.maximum(n - 1, 1)
    zero_sd = se == 0
    p_beyond = np.where(zero_sd, np.where(mean > 0, 0.0, 1.0), stats.t.sf(t, df))
    p_better = np.where(zero_sd, np.where(mean < 0, 0.0, 1.0), stats.t.cdf(t, df))
    half = stats.t.ppf(level, df) * se
    low, high = mean - half, mean + half
    alpha = 1.0 - level
    enough = n >= MIN_PAIRED
    verdict = np.where(
        ~enough,
        NOT_ASSESSABLE,
        np.where(p_beyond < alpha, BEYOND, np.where(p_better < alpha, BETTER, WITHIN)),
    )
    return PairedTests(n, mean, sd, t, p_beyond, p_better, low, high, verdict)


def paired_dispersion(arm: np.ndarray, control: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: (sd ratio arm / control, one-sided Pitman-Morgan p that the arm's variance is
    the larger). `arm` and `control` are the two runs' moves p_post - p_pre on the same
    rewordings (NaN where absent). The test: the correlation r of a + c with a - c, whose sign
    is that of var(a) - var(c); t = r sqrt((n - 2) / (1 - r^2)) on n - 2 degrees of freedom."""
    a = np.atleast_2d(np.asarray(arm, dtype=float))
    c = np.atleast_2d(np.asarray(control, dtype=float))
    ok = ~(np.isnan(a) | np.isnan(c))
    with warnings.catch_warnings():  # rows with fewer than two pairs give NaN, judged below
        warnings.simplefilter("ignore", RuntimeWarning)
        return _pitman_morgan(a, c, ok)


def _pitman_morgan(a: np.ndarray, c: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = ok.sum(axis=1)
    s = np.where(ok, a + c, np.nan)
    m = np.where(ok, a - c, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = s - np.nanmean(s, axis=1, keepdims=True)
        m = m - np.nanmean(m, axis=1, keepdims=True)
        r = np.nansum(s * m, axis=1) / np.sqrt(np.nansum(s * s, axis=1) * np.nansum(m * m, axis=1))
        r = np.clip(np.nan_to_num(r, nan=0.0), -1 + 1e-15, 1 - 1e-15)
        t = r * np.sqrt(np.maximum(n - 2, 0) / (1 - r * r))
        va = np.nanvar(np.where(ok, a, np.nan), axis=1, ddof=1)
        vc = np.nanvar(np.where(ok, c, np.nan), axis=1, ddof=1)
        ratio = np.sqrt(va / vc)
    p = np.where(n >= 3, stats.t.sf(t, np.maximum(n - 2, 1)), 1.0)
    return ratio, p


def more_dispersed(ratio: np.ndarray, p: np.ndarray, level: float = DEFAULT_LEVEL) -> np.ndarray:
    """Where the arm moves scores markedly more than its control in both directions."""
    return (p < 1.0 - level) & (ratio >= DISPERSION_RATIO)
