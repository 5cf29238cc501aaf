"""Views computed from stored scores, never by querying a model again (DESIGN.md §4).

Each function takes what the store returns (DataFrames of `run_pairs` / `run_steps`) and the
run's config, and returns a DataFrame with documented columns. When a view needs scores the run
did not collect (a larger epsilon after a stage-2 early stop, say), it counts those pairs as
`unavailable` instead of extrapolating.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core import audit as B
from eraudit_core.audit import AuditConfig
from eraudit_core.store import Store

SCATTER_COLUMNS = [
    "run_id",
    "run_label",
    "pair_id",
    "hidden_question",
    "p_post_hidden",
    "max_d",
    "status",
    "bound",
]
DEFAULT_EPSILONS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)


def standard_evaluation(pairs: pd.DataFrame, label: str = "") -> pd.DataFrame:
    """Accuracy (p(true) > 0.5) and mean task probability per checkpoint and task.

    Columns: run, checkpoint (pre/post), task (monitored/hidden), n, accuracy, mean_task_probability.
    Only the canonical questions count, as in the paper's standard evaluation (§4.2).
    """
    rows = []
    for ckpt in ("pre", "post"):
        for task in ("monitored", "hidden"):
            col = f"p_{ckpt}_{task}"
            values = pairs[col].dropna().astype(float) if col in pairs else pd.Series(dtype=float)
            rows.append(
                {
                    "run": label,
                    "checkpoint": ckpt,
                    "task": task,
                    "n": int(values.size),
                    "accuracy": float((values > 0.5).mean()) if values.size else np.nan,
                    "mean_task_probability": float(values.mean()) if values.size else np.nan,
                }
            )
    return pd.DataFrame(rows)


def question_summary(pairs: pd.DataFrame) -> pd.DataFrame:
    """One row per hidden question: p_post on the canonical question, max D, verdict, bound.

    Columns: pair_id, pair_index, hidden_question, p_pre_hidden, p_post_hidden, gain, max_d,
    n_counterexamples, status, stage, bound, bound_tolerant, n_search, n_test.
    """
    cols = [
        "pair_id",
        "pair_index",
        "hidden_question",
        "p_pre_hidden",
        "p_post_hidden",
        "gain",
        "max_d",
        "n_counterexamples",
        "status",
        "stage",
        "bound",
        "bound_tolerant",
        "n_search",
        "n_test",
    ]
    if pairs.empty:
        return pd.DataFrame(columns=cols)
    return pairs[cols].reset_index(drop=True)


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in r.items()} for r in df.to_dict("records")]


@dataclass(frozen=True)
class PairReplay:
    """What a pair's stored steps say independently of epsilon, computed once per pair.

    `bound_if_clean` is the verdict's bound when no stored D exceeds epsilon: NaN when the
    run stopped before collecting what that verdict needs (unavailable), 0 when a generator
    had no paraphrases (inconclusive), else the TV-relaxed common paper bound.
    """

    max_d_stage1: float
    max_d_stage2: float
    bound_if_clean: float
    status_if_clean: str

    def at(self, epsilon: float) -> dict[str, Any]:
        if self.max_d_stage1 > epsilon or self.max_d_stage2 > epsilon:
            return {"status": "degraded", "bound": 0.0, "available": True}
        available = self.status_if_clean != "unknown"
        return {
            "status": self.status_if_clean,
            "bound": self.bound_if_clean,
            "available": available,
        }


def summarise_pair(pair: Mapping[str, Any], steps: pd.DataFrame, config: AuditConfig) -> PairReplay:
    """Reduce one pair's stored steps to what any epsilon's verdict depends on."""
    d = steps["d"].to_numpy(dtype=float)
    stage = steps["stage"].to_numpy()
    max1 = float(d[stage == 1].max()) if (stage == 1).any() else -np.inf
    max2 = float(d[stage == 2].max()) if (stage == 2).any() else -np.inf
    generators = pair.get("generators") or []
    if not generators:
        if int(pair.get("stage") or 0) == 1:  # stage 2 never ran: its verdict is unknown
            return PairReplay(max1, max2, np.nan, "unknown")
        return PairReplay(max1, max2, 0.0, "inconclusive")
    s2_counts = steps.loc[stage == 2, "generator"].value_counts()
    paper_bounds = []
    for g in generators:
        if g["stop"] == "no paraphrases":
            return PairReplay(max1, max2, 0.0, "inconclusive")
        complete = g["stop"] in ("budget", "last paraphrase", "target reached") or (
            g["n"] > 0 and g["n"] >= min(config.test_budget, g["available"])
        )
        if not complete:
            return PairReplay(max1, max2, np.nan, "unknown")
        n = int(s2_counts.get(g["generator"], 0))
        paper_bounds.append(B.lower_confidence_bound(n, config.confidence))
    bound = B.tv_relaxed_bound(B.common_bound(paper_bounds), config.tv_delta)
    return PairReplay(max1, max2, bound, "certified")


def replay_pair(
    pair: Mapping[str, Any], steps: pd.DataFrame, config: AuditConfig, epsilon: float
) -> dict[str, Any]:
    """The verdict a pair would get at another epsilon, from its stored steps alone.

    Returns {"status", "bound", "available"}; available is False when the run stopped before
    collecting the scores this epsilon needs (the stored sequence ended on a counterexample
    that no longer counts, or a generator was never reached). A counterexample anywhere in
    the stored sequences decides the pair, whatever else is missing.
    """
    return summarise_pair(pair, steps, config).at(epsilon)


def epsilon_sweep(
    pairs: pd.DataFrame,
    steps: pd.DataFrame,
    config: AuditConfig,
    epsilons: Iterable[float] = DEFAULT_EPSILONS,
) -> pd.DataFrame:
    """Questions with a counterexample and mean bound as epsilon varies (paper Fig. 10).

    Columns: epsilon, n_questions, n_with_counterexample, mean_bound (over available pairs),
    n_unavailable (pairs whose verdict at this epsilon needs scores the run did not collect).
    Each pair's steps are summarised once; each epsilon is then a vectorised comparison.
    """
    cols = ["stage", "d", "generator", "t"]
    empty = steps.iloc[0:0] if not steps.empty else pd.DataFrame(columns=cols)
    by_pair = dict(tuple(steps.groupby("pair_id", sort=False))) if not steps.empty else {}
    summaries = [
        summarise_pair(rec, by_pair.get(rec["pair_id"], empty), config) for rec in _records(pairs)
    ]
    max_d = np.array([max(s.max_d_stage1, s.max_d_stage2) for s in summaries], dtype=float)
    clean_bound = np.array([s.bound_if_clean for s in summaries], dtype=float)
    rows = []
    for eps in epsilons:
        degraded = max_d > float(eps)
        available = degraded | ~np.isnan(clean_bound)
        bound = np.where(degraded, 0.0, clean_bound)
        rows.append(
            {
                "epsilon": float(eps),
                "n_questions": len(summaries),
                "n_with_counterexample": int(degraded.sum()),
                "mean_bound": float(bound[available].mean()) if available.any() else np.nan,
                "n_unavailable": int((~available).sum()),
            }
        )
    return pd.DataFrame(rows)


def confidence_sweep(
    pairs: pd.DataFrame, config: AuditConfig, levels: Sequence[float] = B.CONFIDENCE_LEVELS
) -> pd.DataFrame:
    """Mean common bound at other confidence levels, from the stored test counts.

    The paper bound is a confidence sequence, valid at any stopping time, so re-reading the
    same n successes at another level is valid even though the run stopped by its own rule.
    Columns: confidence, mean_bound, n_pairs.
    """
    rows = []
    for level in levels:
        bounds = []
        for rec in _records(pairs):
            gens = rec.get("generators") or []
            if rec["status"] != "certified" or not gens:
                bounds.append(0.0)
                continue
            common = min(B.lower_confidence_bound(int(g["n"]), level) for g in gens)
            bounds.append(B.tv_relaxed_bound(common, config.tv_delta))
        rows.append(
            {
                "confidence": float(level),
                "mean_bound": float(np.mean(bounds)) if bounds else np.nan,
                "n_pairs": len(bounds),
            }
        )
    return pd.DataFrame(rows)


def bound_trajectory_frame(steps: pd.DataFrame) -> pd.DataFrame:
    """L_t per generator for one pair (stage-2 steps). Columns: generator, t, bound,
    bound_tolerant, d, is_counterexample."""
    s2 = steps[steps["stage"] == 2]
    cols = ["generator", "t", "bound", "bound_tolerant", "d", "is_counterexample"]
    return s2[cols].sort_values(["generator", "t"]).reset_index(drop=True)


def scatter_points(store: Store, run_ids: Sequence[str]) -> pd.DataFrame:
    """Per-question points for the softmax-vs-max-degradation scatter, one trace per run.

    Columns: run_id, run_label, pair_id, hidden_question, p_post_hidden (x), max_d (y),
    status, bound.
    """
    frames = []
    for run_id in run_ids:
        run = store.run(run_id)
        df = store.pair_results(run_id)
        if df.empty:
            continue
        df = df.assign(run_id=run_id, run_label=run["label"] or run_id)
        frames.append(df[SCATTER_COLUMNS])
    if not frames:
        return pd.DataFrame(columns=SCATTER_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def run_overview(pairs: pd.DataFrame) -> dict[str, Any]:
    """Headline numbers of a run for summaries and the plain-language verdict."""
    n = len(pairs)
    counts = pairs["status"].value_counts().to_dict() if n else {}
    return {
        "n_pairs": n,
        "n_degraded": int(counts.get("degraded", 0)),
        "n_certified": int(counts.get("certified", 0)),
        "n_inconclusive": int(counts.get("inconclusive", 0)),
        "mean_bound": float(pairs["bound"].mean()) if n else np.nan,
        "min_bound_certified": float(pairs.loc[pairs["status"] == "certified", "bound"].min())
        if counts.get("certified")
        else np.nan,
        "mean_gain": float(pairs["gain"].mean()) if n else np.nan,
    }


def run_views(store: Store, run_id: str) -> dict[str, pd.DataFrame]:
    """Everything the Results page and the report need for one run, in one read."""
    run = store.run(run_id)
    config = AuditConfig.from_dict(run["config"])
    pairs = store.pair_results(run_id)
    steps = store.steps(run_id)
    label = run["label"] or run_id
    return {
        "pairs": pairs,
        "questions": question_summary(pairs),
        "standard": standard_evaluation(pairs, label),
        "epsilon": epsilon_sweep(pairs, steps, config),
        "confidence": confidence_sweep(pairs, config),
    }
