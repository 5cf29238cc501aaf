"""Cumulative-logit (proportional-odds) fits, likelihood-ratio tests and Wald contrasts.

    P(Y_i <= k) = sigma(theta_k - eta_{r,p}),   eta_{r,p} = beta_r + gamma_p + delta_{r,p}

fitted by maximum likelihood with statsmodels' OrderedModel (with an analytic gradient);
Type II LR statistic 2 (L1 - L0) ~ chi2(df); odds ratios exp(beta) with 95% CIs
exp(beta +- 1.96 se). Separation is flagged from non-overlapping groups or huge estimates.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.miscmodels.ordinal_model import OrderedModel
from statsmodels.tools.numdiff import approx_fprime

from eraudit_core.sensitivity._results import Contrast, LRTest

# Separation shows up as a coefficient running off to infinity; on a 1..10 judge scale no real
# effect has |log-odds| near 10 (an odds ratio of 22 000), nor a standard error that large.
SEPARATION_COEF = 10.0
SEPARATION_SE = 10.0
Z_95 = float(stats.norm.ppf(0.975))


# --------------------------------------------------------------------------------------------
# Cumulative-logit fitting
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OrdinalFit:
    """A fitted cumulative-logit model: coefficients (named), their SEs, cutpoints, log-lik."""

    coef: pd.Series
    se: pd.Series
    thresholds: np.ndarray
    llf: float
    converged: bool
    notes: tuple[str, ...]


class _CumulativeLogit(OrderedModel):
    """statsmodels' OrderedModel (logit link) with an analytic gradient.

    OrderedModel differentiates its log-likelihood numerically; with a panel-averaged 1..10
    score there are up to 27 cutpoints, which makes every fit take seconds. The likelihood,
    parametrisation and results are OrderedModel's; only the derivatives are supplied:
    with u_i = theta_{y_i+1} - eta_i, l_i = theta_{y_i} - eta_i, p_i = F(u_i) - F(l_i),
        d log p_i / d eta_i     = -(f(u_i) - f(l_i)) / p_i,
        d log p_i / d theta_j   = (f(u_i) [j = y_i + 1] - f(l_i) [j = y_i]) / p_i,
    and theta_1 = a, theta_j = a + sum_{m<=j} exp(c_m) maps them to OrderedModel's
    (a, c_2, ..., c_{K-1}). The Hessian is the numerical Jacobian of this gradient.
    """

    def score(self, params: np.ndarray) -> np.ndarray:
        params = np.asarray(params, dtype=float)
        k = self.k_vars
        thresh = self.transform_threshold_params(params)
        eta = self.exog @ params[:k] if k else np.zeros(self.nobs)
        y = np.asarray(self.endog, dtype=int)
        u = thresh[y + 1] - eta
        low = thresh[y] - eta
        fu = np.where(np.isfinite(u), stats.logistic.pdf(np.where(np.isfinite(u), u, 0)), 0.0)
        fl = np.where(np.isfinite(low), stats.logistic.pdf(np.where(np.isfinite(low), low, 0)), 0.0)
        p = np.clip(stats.logistic.cdf(u) - stats.logistic.cdf(low), 1e-300, None)
        d_eta = -(fu - fl) / p
        n_th = self.k_levels - 1
        d_theta = np.zeros(n_th)
        upper = y < n_th  # theta_{y+1} is finite: index y in the 0-based cutpoint vector
        np.add.at(d_theta, y[upper], fu[upper] / p[upper])
        lower = y > 0
        np.add.at(d_theta, y[lower] - 1, -fl[lower] / p[lower])
        tail = np.cumsum(d_theta[::-1])[::-1]  # sum_{j >= m} dL/dtheta_j
        grad_th = np.empty(n_th)
        grad_th[0] = tail[0]
        grad_th[1:] = np.exp(params[k + 1 :]) * tail[1:]
        grad_beta = self.exog.T @ d_eta if k else np.zeros(0)
        return np.concatenate([grad_beta, grad_th])

    def hessian(self, params: np.ndarray) -> np.ndarray:
        h = approx_fprime(np.asarray(params, dtype=float), self.score, centered=True)
        return np.asarray((h + h.T) / 2)


def fit_cumulative_logit(y: np.ndarray, design: pd.DataFrame) -> OrdinalFit:
    """Maximum-likelihood fit of P(Y <= k) = sigma(theta_k - X beta) (no intercept in X).

    The outcome levels are the distinct observed values of `y`, so unused scale points never
    create unidentified cutpoints. With no columns the MLE is the empirical distribution,
    L = sum_k n_k log(n_k / n), computed exactly.
    """
    levels, codes = np.unique(np.asarray(y, dtype=float), return_inverse=True)
    if len(levels) < 2:
        raise ValueError("constant outcome: a cumulative-logit model needs two or more levels")
    if design.shape[1] == 0:
        counts = np.bincount(codes).astype(float)
        llf = float(np.sum(counts * np.log(counts / counts.sum())))
        cum = np.cumsum(counts)[:-1] / counts.sum()
        empty = pd.Series(dtype=float)
        return OrdinalFit(empty, empty, np.log(cum / (1 - cum)), llf, True, ())
    model = _CumulativeLogit(codes, design.astype(float), distr="logit")
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = model.fit(method="bfgs", maxiter=5000, gtol=1e-7, disp=False)
        # Newton steps from the BFGS optimum tighten it to machine precision cheaply.
        try:
            res2 = model.fit(start_params=res.params, method="newton", maxiter=30, disp=False)
            if np.isfinite(res2.llf) and res2.llf >= res.llf - 1e-9:
                res = res2
        except (np.linalg.LinAlgError, ValueError):
            pass
    for w in caught:
        name = type(w.message).__name__
        if name == "ConvergenceWarning":
            notes.append("the optimiser did not converge (statsmodels ConvergenceWarning)")
        elif name == "HessianInversionWarning":
            notes.append("standard errors unavailable: the Hessian could not be inverted")
    k = design.shape[1]
    params = np.asarray(res.params, dtype=float)
    with np.errstate(invalid="ignore"):
        bse = np.asarray(res.bse, dtype=float)
    grad = model.score(params)
    converged = bool(np.max(np.abs(grad)) < 1e-3)
    return OrdinalFit(
        coef=pd.Series(params[:k], index=design.columns),
        se=pd.Series(bse[:k], index=design.columns),
        thresholds=model.transform_threshold_params(params)[1:-1],
        llf=float(res.llf),
        converged=converged,
        notes=tuple(dict.fromkeys(notes)),
    )


def dummies(values: pd.Series, levels: Sequence[str], prefix: str) -> pd.DataFrame:
    """Treatment coding: one 0/1 column per level except the first (the reference)."""
    return pd.DataFrame(
        {f"{prefix}[{lv}]": (values == lv).astype(float).to_numpy() for lv in levels[1:]},
        index=values.index,
    )


def full_rank(design: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Drop all-zero columns (empty cells) and columns linearly dependent on earlier ones."""
    kept: list[str] = []
    dropped: list[str] = []
    for col in design.columns:
        if not design[col].any():
            dropped.append(col)
            continue
        trial = design[[*kept, col]].to_numpy()
        if np.linalg.matrix_rank(trial) == len(kept) + 1:
            kept.append(col)
        else:
            dropped.append(col)
    return design[kept], dropped


def lr_test(full: OrdinalFit, reduced: OrdinalFit, df: int) -> LRTest:
    stat = max(0.0, 2.0 * (full.llf - reduced.llf))
    p = float(stats.chi2.sf(stat, df)) if df > 0 else float("nan")
    return LRTest(stat=stat, df=df, p=p)


def non_overlap(y_cond: np.ndarray, y_ref: np.ndarray) -> bool:
    """Strictly separated groups: every score in one is above every score in the other."""
    if len(y_cond) == 0 or len(y_ref) == 0:
        return False
    return bool(y_cond.min() > y_ref.max() or y_cond.max() < y_ref.min())


def wald_contrast(
    fit: OrdinalFit, col: str, condition: str, pair: str | None, separated: bool
) -> Contrast:
    b = float(fit.coef[col])
    se = float(fit.se[col])
    if np.isfinite(se) and se > 0:
        z = b / se
        p = float(2 * stats.norm.sf(abs(z)))
        lo, hi = b - Z_95 * se, b + Z_95 * se
    else:
        p, lo, hi = float("nan"), float("nan"), float("nan")
    huge = abs(b) > SEPARATION_COEF or not np.isfinite(se) or se > SEPARATION_SE
    with np.errstate(over="ignore"):
        return Contrast(
            condition=condition,
            log_odds=b,
            se=se,
            odds_ratio=float(np.exp(b)),
            ci_low=float(np.exp(lo)),
            ci_high=float(np.exp(hi)),
            p=p,
            pair=pair,
            separation=bool(separated or huge),
        )
