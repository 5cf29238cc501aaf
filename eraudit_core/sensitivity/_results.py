"""Typed results of the sensitivity analysis and their JSON form (the CLI contract)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

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
    """Judge agreement on the behaviour score (the Petri paper, appendix B)."""

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
            # Never null: the dimension given, or "per-behaviour" (each behaviour's own
            # dimension, named like it; see "dimensions").
            "dimension": self.dimension or "per-behaviour",
            "dimensions": {name: b.dimension for name, b in self.behaviours.items()},
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
