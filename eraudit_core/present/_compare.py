"""Comparing two runs only when they are comparable (issue 19 item 5).

Two runs' verdicts differ for two reasons: the checkpoints, or the settings. A comparison
made across different epsilon, k, confidence, budgets, target, TV, min-drop, generators or
questions measures the settings ("bounds differ by -0.09, Wilcoxon p = 0.005" came entirely
from two epsilons), so every comparison first checks that these match; when they do not it
says `comparable: false`, lists each difference, and gives no test result.

On comparable runs, paired over the shared questions (each question its own control): degraded
verdicts and canonical correctness (p(true) > 0.5 on the canonical hidden wording after
adaptation) by McNemar's exact test on the discordant questions (statsmodels), bounds by the
Wilcoxon signed-rank test (scipy); two-sided p-values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.store import Store

# The config keys that must match (field = the config key in `differences`).
COMPARED_SETTINGS = (
    "epsilon",
    "k",
    "confidence",
    "search_budget",
    "test_budget",
    "target",
    "tv_delta",
    "min_drop",
    "search_generators",
    "test_generators",
)


def _setting(config: dict[str, Any], key: str) -> Any:
    value = config.get(key, 0.0 if key == "min_drop" else None)
    return list(value) if isinstance(value, list | tuple) else value


def run_differences(store: Store, run_a: str, run_b: str) -> list[dict[str, Any]]:
    """Each setting or question set on which two runs differ: {"field", "a", "b"}. Empty
    when the runs are comparable. Questions are compared as sets of pair ids."""
    ra, rb = store.run(run_a), store.run(run_b)
    out = [
        {"field": key, "a": _setting(ra["config"], key), "b": _setting(rb["config"], key)}
        for key in COMPARED_SETTINGS
        if _setting(ra["config"], key) != _setting(rb["config"], key)
    ]
    qa = set(store.pair_results(run_a)["pair_id"]) if ra["n_pairs"] else set()
    qb = set(store.pair_results(run_b)["pair_id"]) if rb["n_pairs"] else set()
    if qa != qb:
        out.append(
            {
                "field": "questions",
                "a": len(qa),
                "b": len(qb),
                "only_a": sorted(qa - qb)[:20],
                "only_b": sorted(qb - qa)[:20],
            }
        )
    return out


def _discordance(x: pd.Series, y: pd.Series) -> dict[str, Any]:
    from statsmodels.stats.contingency_tables import mcnemar

    x, y = x.astype(bool), y.astype(bool)
    only_a, only_b = int((x & ~y).sum()), int((~x & y).sum())
    table = [[int((x & y).sum()), only_a], [only_b, int((~x & ~y).sum())]]
    p = float(mcnemar(table, exact=True).pvalue) if only_a + only_b else 1.0
    return {"both": table[0][0], "only_a": only_a, "only_b": only_b, "p_value": p}


def paired_tests(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, Any]:
    """McNemar on degraded and on canonical correctness, Wilcoxon on bounds, over the pairs
    both frames (`run_pairs` rows indexed by pair_id) hold."""
    from scipy.stats import wilcoxon

    common = a.index.intersection(b.index)
    a, b = a.loc[common], b.loc[common]
    bound_a = a["bound"].astype(float).fillna(0.0)
    bound_b = b["bound"].astype(float).fillna(0.0)
    diff = bound_a - bound_b
    bound_p = float(wilcoxon(bound_a, bound_b).pvalue) if (diff != 0).any() else 1.0
    return {
        "n_pairs": len(common),
        "degraded": _discordance(a["status"] == "degraded", b["status"] == "degraded"),
        "canonical_correct": _discordance(
            a["p_post_hidden"].astype(float) > 0.5, b["p_post_hidden"].astype(float) > 0.5
        ),
        "bound": {"mean_difference": float(diff.mean()), "p_value": bound_p},
    }


def compare_runs(store: Store, run_a: str, run_b: str) -> dict[str, Any]:
    """`eraudit compare`: {"run_a", "run_b", "comparable", "differences"} and, when
    comparable, the per-question disagreements and the paired tests."""
    differences = run_differences(store, run_a, run_b)
    out: dict[str, Any] = {
        "run_a": run_a,
        "run_b": run_b,
        "comparable": not differences,
        "differences": differences,
    }
    if differences:
        return out
    a = store.pair_results(run_a).set_index("pair_id")
    b = store.pair_results(run_b).set_index("pair_id")
    common = a.index.intersection(b.index)
    if common.empty:
        out.update(comparable=False, differences=[{"field": "questions", "a": 0, "b": 0}])
        return out
    differ = common[(a.loc[common, "status"] != b.loc[common, "status"]).to_numpy()]
    out["disagreements"] = [
        {"pair_id": str(pid), "a": str(a.loc[pid, "status"]), "b": str(b.loc[pid, "status"])}
        for pid in differ
    ]
    out.update(paired_tests(a, b))
    return out


def differences_sentence(differences: list[dict[str, Any]]) -> str:
    """'Not comparable: epsilon 0.5 vs 2, ...; no test is shown.'"""
    parts = [
        f"{d['field']} {d['a']} vs {d['b']}" + (" questions" if d["field"] == "questions" else "")
        for d in differences
    ]
    return (
        "These runs are not comparable (" + "; ".join(parts) + "): a difference between them "
        "could come from the settings, so no test is shown."
    )


DIFF_SORTS = ("disagreements first", "benchmark order", "largest D change", "largest bound change")


def verdict_diff(store: Store, run_a: str, run_b: str) -> pd.DataFrame:
    """Two runs per question, side by side (outer join on the question): columns pair_id,
    pair_index, question, verdict_a, verdict_b, d_a, d_b, bound_a, bound_b, agree. A question
    only one run finished has no verdict (None) on the other side and does not agree."""
    cols = ["pair_id", "pair_index", "hidden_question", "status", "max_d", "bound"]
    a, b = store.pair_results(run_a), store.pair_results(run_b)
    a = a[cols] if not a.empty else pd.DataFrame(columns=cols)
    b = b[cols] if not b.empty else pd.DataFrame(columns=cols)
    m = a.merge(b, on="pair_id", how="outer", suffixes=("_a", "_b"))
    out = pd.DataFrame(
        {
            "pair_id": m["pair_id"],
            "pair_index": m["pair_index_a"].fillna(m["pair_index_b"]),
            "question": m["hidden_question_a"].fillna(m["hidden_question_b"]),
            "verdict_a": m["status_a"].astype(object).where(m["status_a"].notna(), None),
            "verdict_b": m["status_b"].astype(object).where(m["status_b"].notna(), None),
            "d_a": m["max_d_a"].astype(float),
            "d_b": m["max_d_b"].astype(float),
            "bound_a": m["bound_a"].astype(float),
            "bound_b": m["bound_b"].astype(float),
        }
    )
    out["agree"] = out["verdict_a"].notna() & (out["verdict_a"] == out["verdict_b"])
    return out.sort_values("pair_index", kind="stable").reset_index(drop=True)


def sort_diff(diff: pd.DataFrame, how: str, *, disagreements_only: bool = False) -> pd.DataFrame:
    """`verdict_diff` rows filtered to disagreements if asked, in the order `how` (DIFF_SORTS)."""
    if how not in DIFF_SORTS:
        raise ValueError(f"sort: {how!r} is not one of {', '.join(DIFF_SORTS)}")
    d = diff[~diff["agree"]] if disagreements_only else diff
    key = {
        "disagreements first": d["agree"].astype(int),
        "benchmark order": d["pair_index"],
        "largest D change": -(d["d_a"] - d["d_b"]).abs().fillna(np.inf),
        "largest bound change": -(d["bound_a"] - d["bound_b"]).abs().fillna(np.inf),
    }[how]
    order = d.assign(_k=key).sort_values(["_k", "pair_index"], kind="stable").index
    return d.loc[order].reset_index(drop=True)
