"""Auditor-configuration sensitivity: the analysis of seed 003, appendices A and B (DESIGN.md §8).

Does an audit's verdict depend on how the auditor was configured? Per behaviour, each rollout's
judge scores are averaged over the judge panel and treated as an ordered outcome Y_i. A
cumulative-logit (proportional-odds) model

    P(Y_i <= k) = sigma(theta_k - eta_{r,p}),   eta_{r,p} = beta_r + gamma_p + delta_{r,p}

(reference condition and reference pair pinned to 0; positive beta moves mass to higher scores)
is fitted by maximum likelihood with statsmodels' OrderedModel, three times: pair only,
additive (resource + pair) and full (with the interaction). From these:

- Type II likelihood-ratio tests, 2 (L1 - L0) ~ chi2(df): resource main effect (additive vs
  pair only) and resource x pair interaction (full vs additive);
- Wald contrasts of each condition vs the reference from the additive fit, as odds ratios
  exp(beta) with 95% CIs exp(beta +- 1.96 se), Holm-corrected over the contrasts of a behaviour;
- per-pair contrasts from stratified fits (one model per pair, resource only, no correction);
- cell means of the panel score with 95% percentile-bootstrap CIs (seeded);
- judge agreement: ordinal Krippendorff alpha over (rollout x judge) and pairwise Spearman.

Pitfalls handled: score levels that never occur (levels are the observed values of the subset
being fitted), constant outcomes (no fit, a warning), separation (flagged from non-overlapping
groups or huge estimates), empty cells (interaction columns dropped, warned), a pair seen in a
single condition (left out of the models, as the paper left out refusal-only pairs), a single
judge (no agreement statistic). Every rollout left out is listed with its reason.

Input is the tidy table with columns `TIDY_COLUMNS` (one row per rollout x judge x dimension);
an optional `pair` column overrides the pair label built from auditor and target.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.miscmodels.ordinal_model import OrderedModel
from statsmodels.stats.multitest import multipletests
from statsmodels.tools.numdiff import approx_fprime

from eraudit_core.errors import InputError

TIDY_COLUMNS = (
    "rollout",
    "behaviour",
    "condition",
    "auditor",
    "target",
    "judge",
    "dimension",
    "score",
)
DROPPED_COLUMNS = ("rollout", "source", "reason")

# Separation shows up as a coefficient running off to infinity; on a 1..10 judge scale no real
# effect has |log-odds| near 10 (an odds ratio of 22 000), nor a standard error that large.
SEPARATION_COEF = 10.0
SEPARATION_SE = 10.0
Z_95 = float(stats.norm.ppf(0.975))


def pair_label(auditor: str, target: str) -> str:
    """The auditor-target pair as shown everywhere: `auditor -> target`."""
    return f"{auditor} -> {target}"


# --------------------------------------------------------------------------------------------
# Result records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LRTest:
    """A likelihood-ratio test: stat = 2 (L_full - L_reduced), chi-squared with df degrees."""

    stat: float
    df: int
    p: float


@dataclass(frozen=True)
class Contrast:
    """One condition vs the reference condition, on the odds scale of the cumulative logit.

    `odds_ratio` > 1 means higher judge scores under `condition`. `p_holm` is set for pooled
    contrasts (Holm over the behaviour's contrasts) and None for per-pair ones. `pair` is None
    for pooled contrasts.
    """

    condition: str
    log_odds: float
    se: float
    odds_ratio: float
    ci_low: float
    ci_high: float
    p: float
    p_holm: float | None = None
    pair: str | None = None
    separation: bool = False


@dataclass(frozen=True)
class CellMean:
    """Mean panel score of one (pair, condition) cell with a 95% percentile-bootstrap CI."""

    pair: str
    condition: str
    n: int
    mean: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class SpearmanPair:
    """Spearman rank correlation between two judges over the rollouts both scored."""

    judge_a: str
    judge_b: str
    rho: float | None
    p: float | None
    n: int


@dataclass(frozen=True)
class Agreement:
    """Judge agreement on the behaviour score (seed 003, appendix B)."""

    judges: tuple[str, ...]
    n_rollouts: int
    krippendorff_alpha_ordinal: float | None
    spearman: tuple[SpearmanPair, ...]


@dataclass(frozen=True)
class BehaviourResult:
    """Everything the analysis says about one behaviour."""

    behaviour: str
    dimension: str
    n_rollouts: int
    n_modelled: int
    reference_condition: str
    reference_pair: str | None
    conditions: tuple[str, ...]
    pairs: tuple[str, ...]
    score_levels: tuple[float, ...]
    lr_resource: LRTest | None
    lr_interaction: LRTest | None
    contrasts: tuple[Contrast, ...]
    per_pair: tuple[Contrast, ...]
    cell_means: tuple[CellMean, ...]
    agreement: Agreement
    warnings: tuple[str, ...]

    def cell_means_frame(self) -> pd.DataFrame:
        """Columns: pair, condition, n, mean, ci_low, ci_high."""
        cols = ["pair", "condition", "n", "mean", "ci_low", "ci_high"]
        return pd.DataFrame([c.__dict__ for c in self.cell_means], columns=cols)

    def contrasts_frame(self, per_pair: bool = False) -> pd.DataFrame:
        """Columns: pair (None when pooled), condition, odds_ratio, ci_low, ci_high, p, p_holm,
        log_odds, se, separation."""
        cols = [
            "pair",
            "condition",
            "odds_ratio",
            "ci_low",
            "ci_high",
            "p",
            "p_holm",
            "log_odds",
            "se",
            "separation",
        ]
        rows = self.per_pair if per_pair else self.contrasts
        return pd.DataFrame([c.__dict__ for c in rows], columns=cols)


@dataclass(frozen=True)
class SensitivityResult:
    """The analysis of every behaviour in a tidy table, plus what was left out and why."""

    reference_condition: str
    dimension: str | None
    behaviours: dict[str, BehaviourResult]
    dropped: pd.DataFrame = field(compare=False)
    warnings: tuple[str, ...] = ()

    def to_json_dict(self) -> dict[str, Any]:
        """The `eraudit sensitivity --json` object; NaN and infinities become null."""
        out: dict[str, Any] = {
            "reference_condition": self.reference_condition,
            "dimension": self.dimension,
            "behaviours": {name: _behaviour_json(b) for name, b in self.behaviours.items()},
            "dropped": [
                {k: str(v) for k, v in row.items()}
                for row in self.dropped.to_dict(orient="records")
            ],
            "warnings": list(self.warnings),
        }
        return out


def _num(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _lr_json(t: LRTest | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"stat": _num(t.stat), "df": t.df, "p": _num(t.p)}


def _contrast_json(c: Contrast) -> dict[str, Any]:
    d: dict[str, Any] = {
        "condition": c.condition,
        "odds_ratio": _num(c.odds_ratio),
        "ci_low": _num(c.ci_low),
        "ci_high": _num(c.ci_high),
        "p": _num(c.p),
    }
    if c.pair is None:
        d["p_holm"] = _num(c.p_holm)
    else:
        d = {"pair": c.pair, **d}
    d["log_odds"] = _num(c.log_odds)
    d["se"] = _num(c.se)
    d["separation"] = c.separation
    return d


def _behaviour_json(b: BehaviourResult) -> dict[str, Any]:
    return {
        "dimension": b.dimension,
        "n_rollouts": b.n_rollouts,
        "n_modelled": b.n_modelled,
        "reference_condition": b.reference_condition,
        "reference_pair": b.reference_pair,
        "conditions": list(b.conditions),
        "pairs": list(b.pairs),
        "score_levels": [float(v) for v in b.score_levels],
        "lr_resource": _lr_json(b.lr_resource),
        "lr_interaction": _lr_json(b.lr_interaction),
        "contrasts": [_contrast_json(c) for c in b.contrasts],
        "per_pair": [_contrast_json(c) for c in b.per_pair],
        "cell_means": [
            {
                "pair": c.pair,
                "condition": c.condition,
                "n": c.n,
                "mean": _num(c.mean),
                "ci_low": _num(c.ci_low),
                "ci_high": _num(c.ci_high),
            }
            for c in b.cell_means
        ],
        "agreement": {
            "judges": list(b.agreement.judges),
            "n_rollouts": b.agreement.n_rollouts,
            "krippendorff_alpha_ordinal": _num(b.agreement.krippendorff_alpha_ordinal),
            "spearman": {
                f"{s.judge_a} ~ {s.judge_b}": {"rho": _num(s.rho), "p": _num(s.p), "n": s.n}
                for s in b.agreement.spearman
            },
        },
        "warnings": list(b.warnings),
    }


# --------------------------------------------------------------------------------------------
# Validation and panel averaging
# --------------------------------------------------------------------------------------------


def validate_tidy(table: pd.DataFrame, source: str = "<table>") -> pd.DataFrame:
    """Check the tidy table and return a clean copy (string keys, float scores).

    A missing score (NaN) is a judge refusal and is kept (it is skipped when averaging). A score
    that is not a number, or outside 1..10, is an error naming the row and field.
    """
    missing = [c for c in TIDY_COLUMNS if c not in table.columns]
    if missing:
        raise InputError(
            f"{source}: missing column(s) {', '.join(missing)}; the tidy table needs "
            f"{', '.join(TIDY_COLUMNS)}"
        )
    cols = list(TIDY_COLUMNS) + (["pair"] if "pair" in table.columns else [])
    out = table[cols].copy().reset_index(drop=True)
    for col in cols:
        if col == "score":
            continue
        blank = out[col].isna() | (out[col].astype(str).str.strip() == "")
        if blank.any():
            row = int(np.flatnonzero(blank.to_numpy())[0])
            raise InputError(f"{source}: data row {row + 1}, field '{col}': empty value")
        out[col] = out[col].astype(str)
    scores = pd.to_numeric(out["score"], errors="coerce")
    bad = scores.isna() & out["score"].notna() & (out["score"].astype(str).str.strip() != "")
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(
            f"{source}: data row {row + 1} (rollout {str(out.at[row, 'rollout'])}), field 'score': "
            f"{out.at[row, 'score']!r} is not a number"
        )
    out_of_range = scores.notna() & ((scores < 1) | (scores > 10))
    if out_of_range.any():
        row = int(np.flatnonzero(out_of_range.to_numpy())[0])
        raise InputError(
            f"{source}: data row {row + 1} (rollout {str(out.at[row, 'rollout'])}), field 'score': "
            f"{scores.iloc[row]} is outside the judge scale 1..10"
        )
    out["score"] = scores.astype(float)
    dup = out.duplicated(subset=["rollout", "judge", "dimension"], keep=False)
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(
            f"{source}: data row {row + 1}: rollout {str(out.at[row, 'rollout'])} has more than one "
            f"score from judge {str(out.at[row, 'judge'])} on dimension {str(out.at[row, 'dimension'])}"
        )
    for col in ("behaviour", "condition", "auditor", "target") + (
        ("pair",) if "pair" in out.columns else ()
    ):
        n_values = out.groupby("rollout")[col].nunique()
        if (n_values > 1).any():
            rollout = str(n_values[n_values > 1].index[0])
            values = sorted(out.loc[out["rollout"] == rollout, col].unique())
            raise InputError(
                f"{source}: rollout {rollout}, field '{col}': one rollout has several values "
                f"({', '.join(values)})"
            )
    if "pair" not in out.columns:
        out["pair"] = [pair_label(a, t) for a, t in zip(out["auditor"], out["target"], strict=True)]
    return out


def panel_scores(
    tidy: pd.DataFrame, dimension: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Average each rollout's behaviour score over the judges that scored it.

    The behaviour score is the rows whose dimension equals the rollout's behaviour, or
    `dimension` when given. Returns (panel, dropped): panel has columns rollout, behaviour,
    condition, pair, n_judges, score; dropped has rollout, source, reason.
    """
    keys = tidy.drop_duplicates("rollout")[["rollout", "behaviour", "condition", "pair"]]
    wanted = tidy["dimension"] == (dimension if dimension else tidy["behaviour"])
    rows = tidy[wanted & tidy["score"].notna()]
    agg = rows.groupby("rollout")["score"].agg(["mean", "count"]).reset_index()
    agg.columns = ["rollout", "score", "n_judges"]
    panel = keys.merge(agg, on="rollout", how="left")
    lost = panel["score"].isna()
    dim_text = f"dimension '{dimension}'" if dimension else "its behaviour dimension"
    dropped = pd.DataFrame(
        {
            "rollout": panel.loc[lost, "rollout"],
            "source": "analysis",
            "reason": f"no judge score on {dim_text} (all judges refused or dimension absent)",
        },
        columns=list(DROPPED_COLUMNS),
    )
    panel = panel[~lost].copy()
    panel["n_judges"] = panel["n_judges"].astype(int)
    return panel.reset_index(drop=True), dropped.reset_index(drop=True)


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
        if name in ("ConvergenceWarning", "HessianInversionWarning"):
            notes.append(f"{name}: {w.message}")
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


def _dummies(values: pd.Series, levels: Sequence[str], prefix: str) -> pd.DataFrame:
    """Treatment coding: one 0/1 column per level except the first (the reference)."""
    return pd.DataFrame(
        {f"{prefix}[{lv}]": (values == lv).astype(float).to_numpy() for lv in levels[1:]},
        index=values.index,
    )


def _full_rank(design: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
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


def _lr(full: OrdinalFit, reduced: OrdinalFit, df: int) -> LRTest:
    stat = max(0.0, 2.0 * (full.llf - reduced.llf))
    p = float(stats.chi2.sf(stat, df)) if df > 0 else float("nan")
    return LRTest(stat=stat, df=df, p=p)


def _non_overlap(y_cond: np.ndarray, y_ref: np.ndarray) -> bool:
    """Strictly separated groups: every score in one is above every score in the other."""
    if len(y_cond) == 0 or len(y_ref) == 0:
        return False
    return bool(y_cond.min() > y_ref.max() or y_cond.max() < y_ref.min())


def _contrast(
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


# --------------------------------------------------------------------------------------------
# Cell means and agreement
# --------------------------------------------------------------------------------------------


def bootstrap_cell_means(
    panel: pd.DataFrame,
    pairs: Sequence[str],
    conditions: Sequence[str],
    n_boot: int = 2000,
    seed: int = 0,
) -> list[CellMean]:
    """Mean panel score per (pair, condition) with a 95% percentile-bootstrap CI.

    Each cell is resampled with replacement `n_boot` times; the CI is the 2.5th and 97.5th
    percentiles of the resampled means. Cell k (in pair-major order) uses the generator
    seeded with (seed, k), so a cell's CI does not depend on which other cells exist.
    """
    out: list[CellMean] = []
    for k, (pair, cond) in enumerate(itertools.product(pairs, conditions)):
        y = panel.loc[(panel["pair"] == pair) & (panel["condition"] == cond), "score"]
        values = y.to_numpy(dtype=float)
        if len(values) == 0:
            continue
        rng = np.random.default_rng([seed, k])
        idx = rng.integers(0, len(values), size=(n_boot, len(values)))
        means = values[idx].mean(axis=1)
        lo, hi = np.percentile(means, [2.5, 97.5])
        out.append(CellMean(pair, cond, len(values), float(values.mean()), float(lo), float(hi)))
    return out


def judge_agreement(scores: pd.DataFrame) -> tuple[Agreement, list[str]]:
    """Ordinal Krippendorff alpha and pairwise Spearman from rows (rollout, judge, score).

    Alpha uses every rollout with two or more judge scores (missing scores allowed), with the
    observed score values as the ordinal value domain. Spearman uses, per judge pair, the
    rollouts both judges scored.
    """
    notes: list[str] = []
    scores = scores.dropna(subset=["score"])
    wide = scores.pivot(index="rollout", columns="judge", values="score")
    judges = tuple(str(j) for j in wide.columns)
    if len(judges) < 2:
        notes.append("single judge: agreement statistics need two or more judges")
        return Agreement(judges, len(wide), None, ()), notes
    alpha: float | None = None
    pairable = wide[wide.notna().sum(axis=1) >= 2]
    domain = np.unique(pairable.to_numpy()[np.isfinite(pairable.to_numpy())])
    if len(pairable) == 0:
        notes.append("no rollout was scored by two judges: Krippendorff alpha undefined")
    elif len(domain) < 2:
        notes.append("all judges gave the same score everywhere: Krippendorff alpha undefined")
    else:
        alpha = float(
            krippendorff.alpha(
                reliability_data=pairable.to_numpy().T,
                value_domain=domain,
                level_of_measurement="ordinal",
            )
        )
    pairs: list[SpearmanPair] = []
    for a, b in itertools.combinations(judges, 2):
        both = wide[[a, b]].dropna()
        n = len(both)
        if n < 3 or both[a].nunique() < 2 or both[b].nunique() < 2:
            notes.append(f"Spearman {a} ~ {b} undefined (n={n} or a constant judge)")
            pairs.append(SpearmanPair(a, b, None, None, n))
            continue
        res = stats.spearmanr(both[a], both[b])
        pairs.append(SpearmanPair(a, b, float(res.statistic), float(res.pvalue), n))
    return Agreement(judges, len(wide), alpha, tuple(pairs)), notes


# --------------------------------------------------------------------------------------------
# The analysis
# --------------------------------------------------------------------------------------------


def analyse_behaviour(
    panel: pd.DataFrame,
    judge_rows: pd.DataFrame,
    behaviour: str,
    dimension: str,
    reference_condition: str,
    reference_pair: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> BehaviourResult:
    """The appendix-A models and appendix-B agreement for one behaviour's panel scores."""
    notes: list[str] = []
    conditions = [reference_condition] + sorted(
        c for c in panel["condition"].unique() if c != reference_condition
    )
    if reference_condition not in set(panel["condition"]):
        conditions = sorted(panel["condition"].unique())
    pairs_all = sorted(panel["pair"].unique())
    cells = bootstrap_cell_means(panel, pairs_all, conditions, n_boot=n_boot, seed=seed)
    seen = {(c.pair, c.condition) for c in cells}
    for p, c in itertools.product(pairs_all, conditions):
        if (p, c) not in seen:
            notes.append(f"empty cell: pair {p}, condition {c} has no rollouts")
    for c in cells:
        if c.n == 1:
            notes.append(f"cell {c.pair} / {c.condition} has one rollout: its CI is a point")
    agreement, agree_notes = judge_agreement(judge_rows)
    notes.extend(agree_notes)
    levels = tuple(float(v) for v in np.unique(panel["score"]))

    def result(
        n_modelled: int,
        ref_pair: str | None,
        pairs: Sequence[str],
        lr_res: LRTest | None = None,
        lr_int: LRTest | None = None,
        contrasts: Sequence[Contrast] = (),
        per_pair: Sequence[Contrast] = (),
    ) -> BehaviourResult:
        return BehaviourResult(
            behaviour=behaviour,
            dimension=dimension,
            n_rollouts=len(panel),
            n_modelled=n_modelled,
            reference_condition=reference_condition,
            reference_pair=ref_pair,
            conditions=tuple(conditions),
            pairs=tuple(pairs),
            score_levels=levels,
            lr_resource=lr_res,
            lr_interaction=lr_int,
            contrasts=tuple(contrasts),
            per_pair=tuple(per_pair),
            cell_means=tuple(cells),
            agreement=agreement,
            warnings=tuple(dict.fromkeys(notes)),
        )

    if reference_condition not in set(panel["condition"]):
        notes.append(
            f"reference condition {reference_condition!r} has no rollouts: no models fitted"
        )
        return result(0, None, pairs_all)
    # A pair seen in one condition only says nothing about the resource effect.
    n_cond = panel.groupby("pair")["condition"].nunique()
    single = sorted(n_cond[n_cond < 2].index)
    for p in single:
        notes.append(f"pair {p} has rollouts in one condition only: left out of the models")
    data = panel[~panel["pair"].isin(single)].reset_index(drop=True)
    pairs = sorted(data["pair"].unique())
    if reference_pair is not None and reference_pair in pairs:
        pairs = [reference_pair] + [p for p in pairs if p != reference_pair]
    elif reference_pair is not None:
        notes.append(f"reference pair {reference_pair!r} not modelled; using {pairs[0]!r}")
    if len(data) == 0 or data["score"].nunique() < 2:
        notes.append("constant outcome (one score level): no models fitted")
        return result(len(data), pairs[0] if pairs else None, pairs)
    conds_model = [c for c in conditions if c in set(data["condition"])]
    y = data["score"].to_numpy(dtype=float)
    x_res = _dummies(data["condition"], conds_model, "condition")
    x_pair = _dummies(data["pair"], pairs, "pair")
    x_int = pd.DataFrame(
        {
            f"{rc}:{pc}": x_res[rc] * x_pair[pc]
            for rc, pc in itertools.product(x_res.columns, x_pair.columns)
        },
        index=data.index,
    )
    x_full, dropped_int = _full_rank(pd.concat([x_res, x_pair, x_int], axis=1))
    x_add = x_full[[c for c in x_full.columns if c in x_res.columns or c in x_pair.columns]]
    x_pair_only = x_add[[c for c in x_add.columns if c in x_pair.columns]]
    if dropped_int:
        notes.append(f"interaction terms not estimable (empty cells): {', '.join(dropped_int)}")
    fits = {
        "pair-only": fit_cumulative_logit(y, x_pair_only),
        "additive": fit_cumulative_logit(y, x_add),
        "full": fit_cumulative_logit(y, x_full),
    }
    for name, f in fits.items():
        if not f.converged:
            notes.append(f"{name} fit did not converge")
        notes.extend(f"{name} fit: {n}" for n in f.notes)
    lr_res = _lr(fits["additive"], fits["pair-only"], x_add.shape[1] - x_pair_only.shape[1])
    lr_int = _lr(fits["full"], fits["additive"], x_full.shape[1] - x_add.shape[1])
    ref_y = data.loc[data["condition"] == reference_condition, "score"].to_numpy(dtype=float)
    contrasts: list[Contrast] = []
    for cond in conds_model[1:]:
        col = f"condition[{cond}]"
        if col not in x_add.columns:
            continue
        cy = data.loc[data["condition"] == cond, "score"].to_numpy(dtype=float)
        contrasts.append(_contrast(fits["additive"], col, cond, None, _non_overlap(cy, ref_y)))
    finite = [i for i, c in enumerate(contrasts) if np.isfinite(c.p)]
    if finite:
        adj = multipletests([contrasts[i].p for i in finite], method="holm")[1]
        for i, p_adj in zip(finite, adj, strict=True):
            c = contrasts[i]
            contrasts[i] = Contrast(**{**c.__dict__, "p_holm": float(p_adj)})
    for c in contrasts:
        if c.separation:
            notes.append(f"possible separation: pooled contrast {c.condition} (estimate unstable)")
    per_pair = _per_pair_contrasts(data, pairs, conds_model, reference_condition, notes)
    return result(len(data), pairs[0], pairs, lr_res, lr_int, contrasts, per_pair)


def _per_pair_contrasts(
    data: pd.DataFrame,
    pairs: Sequence[str],
    conditions: Sequence[str],
    reference_condition: str,
    notes: list[str],
) -> list[Contrast]:
    """Stratified fits: one resource-only cumulative-logit model per pair, no correction."""
    out: list[Contrast] = []
    for pair in pairs:
        sub = data[data["pair"] == pair].reset_index(drop=True)
        present = [c for c in conditions if c in set(sub["condition"])]
        if reference_condition not in present or len(present) < 2:
            notes.append(f"pair {pair}: no per-pair contrasts (reference condition missing)")
            continue
        if sub["score"].nunique() < 2:
            notes.append(f"pair {pair}: constant outcome, no per-pair fit")
            continue
        x = _dummies(sub["condition"], present, "condition")
        fit = fit_cumulative_logit(sub["score"].to_numpy(dtype=float), x)
        if not fit.converged:
            notes.append(f"pair {pair}: per-pair fit did not converge")
        ref_y = sub.loc[sub["condition"] == reference_condition, "score"].to_numpy(dtype=float)
        for cond in present[1:]:
            cy = sub.loc[sub["condition"] == cond, "score"].to_numpy(dtype=float)
            c = _contrast(fit, f"condition[{cond}]", cond, pair, _non_overlap(cy, ref_y))
            if c.separation:
                notes.append(f"possible separation: pair {pair}, condition {cond}")
            out.append(c)
    return out


def analyse(
    table: pd.DataFrame,
    reference_condition: str,
    dimension: str | None = None,
    reference_pair: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    source: str = "<table>",
) -> SensitivityResult:
    """Run the seed-003 analysis on every behaviour of a tidy table.

    Raises InputError when the table is malformed or the reference condition never occurs.
    """
    tidy = validate_tidy(table, source)
    if tidy.empty:
        raise InputError(f"{source}: the table has no rows")
    if reference_condition not in set(tidy["condition"]):
        found = ", ".join(sorted(tidy["condition"].unique()))
        raise InputError(
            f"{source}: field 'condition': reference condition {reference_condition!r} "
            f"does not occur (found: {found})"
        )
    if dimension is not None and dimension not in set(tidy["dimension"]):
        raise InputError(f"{source}: field 'dimension': no rows with dimension {dimension!r}")
    panel, dropped = panel_scores(tidy, dimension)
    results: dict[str, BehaviourResult] = {}
    all_notes: list[str] = []
    if len(dropped):
        all_notes.append(f"{len(dropped)} rollout(s) dropped; see 'dropped'")
    for behaviour in sorted(tidy["behaviour"].unique()):
        dim = dimension or behaviour
        pb = panel[panel["behaviour"] == behaviour].reset_index(drop=True)
        rows = tidy[(tidy["behaviour"] == behaviour) & (tidy["dimension"] == dim)]
        if pb.empty:
            all_notes.append(f"{behaviour}: no scored rollouts, not analysed")
            continue
        res = analyse_behaviour(
            pb,
            rows[["rollout", "judge", "score"]],
            behaviour,
            dim,
            reference_condition,
            reference_pair,
            n_boot=n_boot,
            seed=seed,
        )
        results[behaviour] = res
        all_notes.extend(f"{behaviour}: {w}" for w in res.warnings)
    return SensitivityResult(
        reference_condition=reference_condition,
        dimension=dimension,
        behaviours=results,
        dropped=dropped,
        warnings=tuple(all_notes),
    )


# --------------------------------------------------------------------------------------------
# ER-Audit runs as a sensitivity table
# --------------------------------------------------------------------------------------------

RUN_PAIR_COLUMNS = (
    "run_id",
    "run_label",
    "generator_condition",
    "checkpoint_pair",
    "pair_id",
    "max_d",
    "n_counterexamples",
    "status",
)
DEFAULT_MAX_D_EDGES = (0.0, 0.5, 1.0, 2.0)
FINISHED_STATUSES = ("degraded", "certified", "inconclusive")


def outcomes_from_run_pairs(
    runs: pd.DataFrame,
    outcome: str = "counterexample",
    max_d_edges: Sequence[float] = DEFAULT_MAX_D_EDGES,
    source: str = "<runs>",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Turn per-question ER-Audit results into a tidy sensitivity table.

    One row per audited question per run becomes one rollout: condition = the run's
    paraphrase-generator condition, pair = the checkpoint pair, judge = "er-audit" (one judge,
    so no agreement statistic). The outcome is either
    - "counterexample": score 2 if a counterexample was found (n_counterexamples > 0 or status
      degraded), else 1; behaviour "counterexample_found";
    - "max_d": max D binned on `max_d_edges` (right-closed), score 1 for D <= edges[0] up to
      len(edges) + 1; behaviour "max_d_binned".
    The same question in several runs is treated as independent rollouts (no question effect).
    Rows of unfinished runs, or with no max D for the max_d outcome, are returned in `dropped`.
    Returns (tidy, dropped).
    """
    missing = [c for c in RUN_PAIR_COLUMNS if c not in runs.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {', '.join(missing)}")
    if outcome not in ("counterexample", "max_d"):
        raise InputError(f"outcome must be 'counterexample' or 'max_d', not {outcome!r}")
    edges = np.asarray(list(max_d_edges), dtype=float)
    if outcome == "max_d" and (len(edges) == 0 or np.any(np.diff(edges) <= 0)):
        raise InputError(f"max_d_edges must be increasing, got {list(max_d_edges)}")
    df = runs.reset_index(drop=True)
    rollout = df["run_id"].astype(str) + "/" + df["pair_id"].astype(str)
    dup = rollout.duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(
            f"{source}: data row {i + 1}: run {str(df.at[i, 'run_id'])} lists question "
            f"{str(df.at[i, 'pair_id'])} twice"
        )
    status = df["status"].astype(str).str.lower()
    unfinished = ~status.isin(FINISHED_STATUSES)
    reasons = pd.Series("", index=df.index)
    reasons[unfinished] = "run status " + status[unfinished] + " is not a finished verdict"
    max_d = pd.to_numeric(df["max_d"], errors="coerce")
    n_ce = pd.to_numeric(df["n_counterexamples"], errors="coerce")
    if outcome == "max_d":
        no_d = ~unfinished & ~pd.Series(np.isfinite(max_d.to_numpy(dtype=float)), index=df.index)
        reasons[no_d] = "no max D recorded"
        behaviour = "max_d_binned"
        score = pd.Series(
            np.searchsorted(edges, max_d.fillna(0).to_numpy(), side="left") + 1,
            index=df.index,
            dtype=float,
        )
    else:
        no_n = ~unfinished & n_ce.isna() & (status != "degraded")
        reasons[no_n] = "no counterexample count recorded"
        behaviour = "counterexample_found"
        found = (n_ce.fillna(0) > 0) | (status == "degraded")
        score = found.astype(float) + 1.0
    keep = reasons == ""
    pair = df["checkpoint_pair"].astype(str)
    tidy = pd.DataFrame(
        {
            "rollout": rollout[keep],
            "behaviour": behaviour,
            "condition": df.loc[keep, "generator_condition"].astype(str),
            "auditor": "er-audit",
            "target": pair[keep],
            "judge": "er-audit",
            "dimension": behaviour,
            "score": score[keep],
            "pair": pair[keep],
        }
    ).reset_index(drop=True)
    dropped = pd.DataFrame(
        {"rollout": rollout[~keep], "source": source, "reason": reasons[~keep]},
        columns=list(DROPPED_COLUMNS),
    ).reset_index(drop=True)
    return tidy, dropped
