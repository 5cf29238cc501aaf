"""The null reading's statistics against scipy/statsmodels closed forms and known values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from eraudit_core.errors import InputError
from eraudit_core.null import (
    BETTER,
    BEYOND,
    CLUSTERED_PRIMARY_TEST,
    MIN_PAIRED,
    NOT_ASSESSABLE,
    PRIMARY_TEST,
    WITHIN,
    exact_mcnemar,
    paired_dispersion,
    paired_t,
    primary_sentence,
    primary_test,
    secondary_tests,
)


def test_paired_t_equals_scipy_one_sided_t_tests_row_by_row_with_missing_values():
    rng = np.random.default_rng(0)
    d = rng.normal(0.01, 0.02, size=(30, 12))
    d[::3, 8:] = np.nan  # questions with fewer rewordings
    got = paired_t(d, 0.95)
    for i, row in enumerate(d):
        x = row[~np.isnan(row)]
        assert got.n[i] == x.size
        assert got.p_beyond[i] == pytest.approx(
            stats.ttest_1samp(x, 0.0, alternative="greater").pvalue, rel=1e-10
        )
        assert got.p_better[i] == pytest.approx(
            stats.ttest_1samp(x, 0.0, alternative="less").pvalue, rel=1e-10
        )
        ci = stats.ttest_1samp(x, 0.0).confidence_interval(0.90)
        assert (got.low[i], got.high[i]) == pytest.approx((ci.low, ci.high), rel=1e-10)
        expected = BEYOND if ci.low > 0 else BETTER if ci.high < 0 else WITHIN
        assert got.verdict[i] == expected


def test_known_values_and_edge_cases():
    # mean 1, sd sqrt(0.5), n 5: t = sqrt(10) on 4 df; Student's t with 4 df has the closed
    # form sf(t) = 1/2 - x (1 + (1 - x^2) / 2) / 2 with x = t / sqrt(t^2 + 4)
    got = paired_t(np.array([[0.0, 1.0, 1.0, 2.0, 1.0]]), 0.95)
    assert got.t[0] == pytest.approx(np.sqrt(10))
    x = np.sqrt(10) / np.sqrt(14)
    assert got.p_beyond[0] == pytest.approx(0.5 - x * (1 + (1 - x * x) / 2) / 2, rel=1e-10)
    few = paired_t(np.array([[0.1, 0.2, 0.3, 0.4] + [np.nan] * 4]))
    assert MIN_PAIRED == 5 and few.verdict[0] == NOT_ASSESSABLE
    flat = paired_t(np.array([[0.02] * 6, [-0.02] * 6, [0.0] * 6]))
    assert list(flat.verdict) == [BEYOND, BETTER, WITHIN]
    assert paired_t(np.full((1, 6), np.nan)).verdict[0] == NOT_ASSESSABLE
    with pytest.raises(InputError, match="level"):
        paired_t(np.zeros((1, 6)), 1.2)


def test_pitman_morgan_equals_the_correlation_test_of_sums_and_differences():
    rng = np.random.default_rng(1)
    a = rng.normal(0, 1.5, size=(5, 40))
    c = rng.normal(0, 1.0, size=(5, 40))
    ratio, p = paired_dispersion(a, c)
    for i in range(5):
        r = stats.pearsonr(a[i] + c[i], a[i] - c[i], alternative="greater")
        assert p[i] == pytest.approx(r.pvalue, rel=1e-8)
        assert ratio[i] == pytest.approx(np.std(a[i], ddof=1) / np.std(c[i], ddof=1))


def test_exact_mcnemar_known_values():
    assert exact_mcnemar(4, 0) == pytest.approx(0.125)
    assert exact_mcnemar(10, 6) == pytest.approx(stats.binomtest(10, 16).pvalue)
    assert exact_mcnemar(0, 0) == 1.0


def test_primary_plain_equals_scipy_and_clustering_with_one_question_a_story_changes_nothing():
    rng = np.random.default_rng(2)
    x = rng.normal(0.005, 0.03, size=60)
    plain = primary_test(x)
    ref = stats.ttest_1samp(x, 0.0)
    assert plain["test"] == PRIMARY_TEST
    assert plain["p"] == pytest.approx(ref.pvalue)
    ci = ref.confidence_interval(0.95)
    assert plain["interval"] == pytest.approx([ci.low, ci.high])
    own = primary_test(x, stories=[f"s{i}" for i in range(60)])
    assert own["p"] == pytest.approx(ref.pvalue) and not own["clustered"]
    assert "changes nothing" in own["clustering_note"]


def test_clustered_primary_matches_statsmodels_and_holds_level_when_stories_move_together():
    import statsmodels.api as sm

    rng = np.random.default_rng(3)
    stories = np.repeat(np.arange(40), 5)
    x = rng.normal(0, 0.01, 200) + rng.normal(0, 0.03, 40)[stories]
    got = primary_test(x, stories=[f"s{s}" for s in stories])
    fit = sm.OLS(x, np.ones(200)).fit(cov_type="cluster", cov_kwds={"groups": stories}, use_t=True)
    assert got["test"] == CLUSTERED_PRIMARY_TEST and got["clustered"]
    assert got["p"] == pytest.approx(float(fit.pvalues[0]))
    # Monte Carlo: story-level shifts; the plain test over-rejects, the clustered one does not
    plain_hits = clustered_hits = 0
    for _ in range(300):
        x = rng.normal(0, 0.01, 200) + rng.normal(0, 0.03, 40)[stories]
        plain_hits += primary_test(x)["p"] < 0.05
        clustered_hits += primary_test(x, stories=[str(s) for s in stories])["p"] < 0.05
    assert plain_hits / 300 > 0.2
    assert clustered_hits / 300 <= 0.09


def test_secondary_mcnemar_is_holm_adjusted():
    a = np.array([1] * 10 + [0] * 30, dtype=bool)
    c = np.array([0] * 10 + [0] * 30, dtype=bool)
    got = secondary_tests((a, c), (c, c))
    assert got[0]["p"] == pytest.approx(exact_mcnemar(10, 0))
    assert got[0]["p_holm"] == pytest.approx(min(1.0, 2 * got[0]["p"]))
    assert got[1]["p"] == 1.0 and got[1]["p_holm"] == 1.0


def test_primary_sentence_says_points_interval_and_both_counts():
    pr = primary_test(np.full(50, 0.02) + np.linspace(-0.01, 0.01, 50))
    text = primary_sentence(
        "arm", "ctl", pr, {"beyond": 30, "better": 4, "within": 16, "not_assessable": 0}
    )
    assert "2.0 points less" in text and "30 worse" in text and "4 better" in text
    same = primary_test(np.linspace(-0.01, 0.01, 50))
    assert "about the same" in primary_sentence(
        "arm", "ctl", same, {"beyond": 1, "better": 2, "within": 47}
    )
