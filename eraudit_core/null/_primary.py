"""The one test a run is judged by, fixed before it runs: arm against control with questions
as the units.

Each question contributes one number, the mean over its paired rewordings of p_post_control -
p_post_arm (`_paired.py`). The primary test is a two-sided test that the mean of these over
questions is 0, with its 95% interval. Two adaptations move single questions up or down at
random (a question-level shift shared by all its rewordings): that variation is part of the
spread of the per-question means, so the test stays valid under it (measured in
tests/null/test_null_monte_carlo.py). When the benchmark knows each question's story, the
standard error is clustered by story (OLS on a constant, cluster-robust, t on stories - 1
degrees of freedom): questions of one story move together. When every question has its own
story the clustered and the plain one-sample t test are the same number, and the result says so.

The paper's degraded verdicts are compared by the exact McNemar test as a secondary test
(with canonical correctness), Holm-adjusted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

PRIMARY_LEVEL = 0.95
PRIMARY_TEST = "one-sample t test over questions of the per-question mean paired difference"
CLUSTERED_PRIMARY_TEST = (
    "story-clustered t test over questions of the per-question mean paired difference"
)


def exact_mcnemar(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: binomial test of only_a of the n = only_a + only_b
    discordant questions at 1/2 (not mid-p). 4 vs 0 gives 0.125."""
    n = only_a + only_b
    return float(stats.binomtest(only_a, n, 0.5).pvalue) if n else 1.0


def primary_test(
    means: Sequence[float] | np.ndarray,
    stories: Sequence[str] | None = None,
    level: float = PRIMARY_LEVEL,
) -> dict[str, Any]:
    """{"test", "p", "interval", "mean_difference", "n_questions", "n_stories", "clustered",
    "clustering_note"} for per-question mean differences (control minus arm: positive = the
    arm lost more). `stories` (one per question) clusters the standard error when some story
    holds two or more questions."""
    x = np.asarray(means, dtype=float)
    keep = ~np.isnan(x)
    x = x[keep]
    n = int(x.size)
    out: dict[str, Any] = {
        "test": PRIMARY_TEST,
        "p": None,
        "interval": None,
        "level": level,
        "mean_difference": float(x.mean()) if n else None,
        "n_questions": n,
        "n_stories": None,
        "clustered": False,
        "clustering_note": None,
    }
    if n < 2:
        out["clustering_note"] = f"{n} assessable question(s): no test over questions"
        return out
    groups = None
    if stories is not None:
        labels = np.asarray(list(stories), dtype=object)[keep]
        n_stories = len(set(labels))
        out["n_stories"] = n_stories
        if n_stories < n:
            groups = np.unique(labels, return_inverse=True)[1]
        else:
            out["clustering_note"] = (
                f"every question has its own story ({n_stories} stories): clustering by story "
                "changes nothing"
            )
    if groups is not None and len(set(groups)) >= 2:
        import statsmodels.api as sm

        fit = sm.OLS(x, np.ones(n)).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
        p = float(fit.pvalues[0])
        low, high = (float(v) for v in fit.conf_int(alpha=1 - level)[0])
        out.update(test=CLUSTERED_PRIMARY_TEST, clustered=True)
        out["clustering_note"] = (
            f"{n} questions in {len(set(groups))} stories: the standard error is clustered by story"
        )
    else:
        sd = float(x.std(ddof=1))
        if sd == 0:
            p = 1.0 if x.mean() == 0 else 0.0
            low = high = float(x.mean())
        else:
            res = stats.ttest_1samp(x, 0.0)
            p = float(res.pvalue)
            ci = res.confidence_interval(confidence_level=level)
            low, high = float(ci.low), float(ci.high)
    out.update(p=p, interval=[low, high])
    return out


def secondary_tests(
    degraded: tuple[np.ndarray, np.ndarray], correct: tuple[np.ndarray, np.ndarray]
) -> list[dict[str, Any]]:
    """The paper's verdicts compared, arm vs control over the shared questions: exact McNemar
    on degraded verdicts and on canonical correctness, each with its Holm-adjusted p."""
    from statsmodels.stats.multitest import multipletests

    out: list[dict[str, Any]] = []
    for name, (a, c), what in (
        ("degraded", degraded, "the paper's degraded verdicts"),
        ("canonical_correct", correct, "canonical correctness (p(true) > 0.5)"),
    ):
        a, c = np.asarray(a, dtype=bool), np.asarray(c, dtype=bool)
        only_a, only_c = int((a & ~c).sum()), int((~a & c).sum())
        out.append(
            {
                "name": name,
                "test": f"exact two-sided McNemar on {what}",
                "only_arm": only_a,
                "only_control": only_c,
                "p": exact_mcnemar(only_a, only_c),
            }
        )
    holm = multipletests([s["p"] for s in out], method="holm")[1]
    for s, p in zip(out, holm, strict=True):
        s["p_holm"] = float(p)
    return out


def format_p(p: float) -> str:
    """A p-value for readers: three decimals, or "p < 0.001"."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def points(x: float) -> str:
    """A probability difference in percentage points: one decimal from 1 point up, two below
    (0.02 points is not shown as 0.0), never "-0.00"."""
    value = 100 * x
    text = f"{value:.1f}" if abs(value) >= 1 else f"{value:.2f}"
    return "0" if float(text) == 0 else text


def primary_sentence(
    name: str, control: str, primary: Mapping[str, Any], counts: Mapping[str, int]
) -> str:
    """The lead a non-programmer can repeat: the average difference in points with its 95%
    interval and p, then the questions worse and better than the control."""
    worse, better, within = counts["beyond"], counts["better"], counts["within"]
    missing = counts.get("not_assessable", 0)
    tail = (
        f"Question by question: {worse} worse than the control, {better} better, {within} "
        f"within its rewording noise" + (f", {missing} not assessable." if missing else ".")
    )
    if primary.get("p") is None:
        return f"{name} against {control}: too few questions for the primary test. {tail}"
    mean = float(primary["mean_difference"])
    low, high = (float(v) for v in primary["interval"])
    p = float(primary["p"])
    interval = f"95% interval {points(low)} to {points(high)} points, {format_p(p)}"
    if p < 1 - float(primary.get("level", PRIMARY_LEVEL)):
        way = "less" if mean > 0 else "more"
        head = (
            f"On reworded questions, {name} put {points(abs(mean))} points {way} probability "
            f"on the true answer than its control {control} did, on average over "
            f"{primary['n_questions']} questions"
        )
    else:
        head = (
            f"On reworded questions, {name} put about the same probability on the true answer "
            f"as its control {control}, on average over {primary['n_questions']} questions "
            f"(extra loss {points(mean)} points"
        )
        return f"{head}; {interval}). {tail}"
    return f"{head} ({interval}). {tail}"
