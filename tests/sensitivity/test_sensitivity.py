"""Tests of the seed-003 analysis against independent computations and planted effects."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import optimize, special, stats

from eraudit_core.errors import InputError
from eraudit_core.sensitivity import (
    analyse,
    bootstrap_cell_means,
    fit_cumulative_logit,
    judge_agreement,
    outcomes_from_run_pairs,
    validate_tidy,
)

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sensitivity" / "petri_like_rollouts.csv"


def load_generator():
    spec = importlib.util.spec_from_file_location(
        "make_sensitivity_sample", ROOT / "scripts" / "make_sensitivity_sample.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tidy_from_panel(panel: pd.DataFrame, judges: tuple[str, ...] = ("j1",)) -> pd.DataFrame:
    """One tidy row per judge for each (rollout, behaviour, condition, auditor, target, score)."""
    rows = []
    for r in panel.itertuples(index=False):
        for j in judges:
            rows.append(
                {
                    "rollout": r.rollout,
                    "behaviour": r.behaviour,
                    "condition": r.condition,
                    "auditor": r.auditor,
                    "target": r.target,
                    "judge": j,
                    "dimension": r.behaviour,
                    "score": float(r.score),
                }
            )
    return pd.DataFrame(rows)


def small_design(seed: int = 1, n_per_cell: int = 25) -> pd.DataFrame:
    """Scores 1..7 with level 5 never used, 3 conditions x 2 pairs, known effects."""
    rng = np.random.default_rng(seed)
    rows = []
    effect = {"none": 0.0, "codebase": -1.0, "transcripts": 1.5}
    pair_fx = {("a1", "t1"): 0.0, ("a2", "t1"): 0.7}
    k = 0
    for cond, (aud, tgt) in [(c, p) for c in effect for p in pair_fx]:
        for _ in range(n_per_cell):
            latent = effect[cond] + pair_fx[(aud, tgt)] + rng.logistic()
            score = 1 + int(np.sum(latent > np.array([-1.0, -0.3, 0.4, 1.2, 2.0, 2.8])))
            score = 4 if score == 5 else score  # leave score level 5 unused
            k += 1
            rows.append(
                {
                    "rollout": f"x{k}",
                    "behaviour": "b",
                    "condition": cond,
                    "auditor": aud,
                    "target": tgt,
                    "score": score,
                }
            )
    return pd.DataFrame(rows)


def direct_cumulative_logit_mle(y: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, float]:
    """Independent MLE: minimise -sum log(F(theta_y - xb) - F(theta_{y-1} - xb)) with scipy.

    Cutpoints are free parameters kept ordered by sorting-free reparametrisation
    theta = cumsum([t1, softplus(d2), ...]); the optimiser is Nelder-Mead then BFGS with
    numerical gradients, independent of statsmodels.
    """
    levels, codes = np.unique(y, return_inverse=True)
    n_th = len(levels) - 1
    k = x.shape[1]

    def thetas(p: np.ndarray) -> np.ndarray:
        inc = np.concatenate([[p[k]], np.logaddexp(0, p[k + 1 :])])
        return np.concatenate([[-np.inf], np.cumsum(inc), [np.inf]])

    def nll(p: np.ndarray) -> float:
        th = thetas(p)
        eta = x @ p[:k]
        prob = special.expit(th[codes + 1] - eta) - special.expit(th[codes] - eta)
        return -float(np.sum(np.log(np.clip(prob, 1e-300, None))))

    p0 = np.concatenate([np.zeros(k), [-1.0], np.zeros(n_th - 1)])
    r = optimize.minimize(nll, p0, method="Nelder-Mead", options={"maxiter": 20000})
    r = optimize.minimize(nll, r.x, method="BFGS", options={"gtol": 1e-8})
    return r.x[:k], -r.fun


def test_cumulative_logit_matches_direct_mle() -> None:
    data = small_design()
    x = pd.DataFrame(
        {
            "codebase": (data["condition"] == "codebase").astype(float),
            "transcripts": (data["condition"] == "transcripts").astype(float),
            "a2": (data["auditor"] == "a2").astype(float),
        }
    )
    y = data["score"].to_numpy(dtype=float)
    assert 5 not in set(y)  # the unused-level pitfall is part of the check
    fit = fit_cumulative_logit(y, x)
    beta, llf = direct_cumulative_logit_mle(y, x.to_numpy())
    assert fit.converged
    assert_allclose(fit.coef.to_numpy(), beta, atol=2e-4)
    assert_allclose(fit.llf, llf, rtol=1e-7)


def test_analysis_contrasts_and_lr_match_direct_fits() -> None:
    data = small_design(seed=2)
    result = analyse(tidy_from_panel(data), reference_condition="none", n_boot=200)
    b = result.behaviours["b"]
    y = data["score"].to_numpy(dtype=float)
    cb = (data["condition"] == "codebase").to_numpy(float)
    tr = (data["condition"] == "transcripts").to_numpy(float)
    a2 = (data["auditor"] == "a2").to_numpy(float)
    beta_add, ll_add = direct_cumulative_logit_mle(y, np.column_stack([cb, tr, a2]))
    _, ll_pair = direct_cumulative_logit_mle(y, a2[:, None])
    _, ll_full = direct_cumulative_logit_mle(y, np.column_stack([cb, tr, a2, cb * a2, tr * a2]))
    got = {c.condition: c for c in b.contrasts}
    assert_allclose(
        [got["codebase"].log_odds, got["transcripts"].log_odds], beta_add[:2], atol=5e-4
    )
    assert b.lr_resource is not None and b.lr_interaction is not None
    assert b.lr_resource.df == 2 and b.lr_interaction.df == 2
    assert_allclose(b.lr_resource.stat, 2 * (ll_add - ll_pair), atol=1e-5)
    assert_allclose(b.lr_interaction.stat, 2 * (ll_full - ll_add), atol=1e-5)
    assert_allclose(b.lr_resource.p, stats.chi2.sf(2 * (ll_add - ll_pair), 2), rtol=1e-4)
    # Wald interval and Holm: OR = exp(b), CI = exp(b +- 1.96 se), Holm over the two p-values.
    for c in b.contrasts:
        assert_allclose(c.odds_ratio, np.exp(c.log_odds))
        assert_allclose(c.ci_low, np.exp(c.log_odds - 1.959964 * c.se), rtol=1e-5)
        assert_allclose(c.p, 2 * stats.norm.sf(abs(c.log_odds / c.se)), rtol=1e-6)
    ps = sorted(c.p for c in b.contrasts)
    holm = sorted(c.p_holm for c in b.contrasts if c.p_holm is not None)
    assert_allclose(holm, [min(1, 2 * ps[0]), min(1, max(2 * ps[0], ps[1]))])


def test_standard_errors_match_numerical_hessian() -> None:
    data = small_design(seed=3)
    x = np.column_stack([(data["condition"] == c).to_numpy(float) for c in ("codebase",)])
    y = data["score"].to_numpy(dtype=float)
    fit = fit_cumulative_logit(y, pd.DataFrame(x, columns=["codebase"]))
    # Profile check: the Wald SE equals 1/sqrt(curvature of the profile log-likelihood).
    levels, codes = np.unique(y, return_inverse=True)

    def profile(b: float) -> float:
        def nll(th: np.ndarray) -> float:
            t = np.concatenate([[-np.inf], np.cumsum(np.r_[th[0], np.exp(th[1:])]), [np.inf]])
            eta = x[:, 0] * b
            p = special.expit(t[codes + 1] - eta) - special.expit(t[codes] - eta)
            return -float(np.sum(np.log(p)))

        th0 = np.r_[fit.thresholds[0], np.log(np.diff(fit.thresholds))]
        return -optimize.minimize(nll, th0, method="BFGS", options={"gtol": 1e-9}).fun

    b0, h = float(fit.coef.iloc[0]), 1e-3
    curv = -(profile(b0 + h) - 2 * profile(b0) + profile(b0 - h)) / h**2
    assert_allclose(fit.se.iloc[0], 1 / np.sqrt(curv), rtol=2e-3)


def test_krippendorff_alpha_published_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4-observer,
    # 12-unit example with missing values: ordinal alpha = 0.815 (nominal .743, interval .849).
    n = None
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    rows = [
        {"rollout": f"u{u}", "judge": f"obs{o}", "score": v}
        for o, obs in enumerate(data)
        for u, v in enumerate(obs)
        if v is not None
    ]
    agreement, _ = judge_agreement(pd.DataFrame(rows))
    assert agreement.krippendorff_alpha_ordinal == pytest.approx(0.815, abs=5e-4)


def test_spearman_pairs_use_common_rollouts() -> None:
    rows = [
        {"rollout": f"r{i}", "judge": j, "score": s}
        for i, (a, b, c) in enumerate([(1, 2, 1), (2, 3, 5), (3, 3, 2), (4, 5, None), (5, 6, 4)])
        for j, s in (("A", a), ("B", b), ("C", c))
        if s is not None
    ]
    agreement, _ = judge_agreement(pd.DataFrame(rows))
    by = {(s.judge_a, s.judge_b): s for s in agreement.spearman}
    assert by[("A", "B")].n == 5 and by[("A", "C")].n == 4
    assert by[("A", "B")].rho == pytest.approx(stats.spearmanr([1, 2, 3, 4, 5], [2, 3, 3, 5, 6])[0])


def test_bootstrap_cell_means_are_seeded_percentile_intervals() -> None:
    panel = pd.DataFrame(
        {"pair": "p", "condition": "none", "score": [1.0, 2.0, 2.0, 3.0, 7.0, 4.0]}
    )
    a = bootstrap_cell_means(panel, ["p"], ["none"], n_boot=4000, seed=5)
    b = bootstrap_cell_means(panel, ["p"], ["none"], n_boot=4000, seed=5)
    assert a == b
    cell = a[0]
    assert cell.n == 6 and cell.mean == pytest.approx(19 / 6)
    rng = np.random.default_rng([5, 0])
    values = panel["score"].to_numpy()
    means = values[rng.integers(0, 6, size=(4000, 6))].mean(axis=1)
    assert (cell.ci_low, cell.ci_high) == tuple(np.percentile(means, [2.5, 97.5]))
    assert cell.ci_low < cell.mean < cell.ci_high


def test_recovers_planted_effects_on_synthetic_sample() -> None:
    gen = load_generator()
    table = gen.make_sample(seed=gen.DEFAULT_SEED)
    result = analyse(table, reference_condition="none", n_boot=200)
    rh = result.behaviours["reward_hacking"]
    pooled = {c.condition: c for c in rh.contrasts}
    assert rh.lr_resource is not None and rh.lr_resource.p < 1e-6
    # Transcripts: planted +2.5 in every pair; judge noise attenuates a little.
    assert 1.5 < pooled["transcripts"].log_odds < 3.2
    assert pooled["transcripts"].p_holm is not None and pooled["transcripts"].p_holm < 1e-4
    # Codebase: planted -2.0 in grok-auditor pairs only, so the pooled effect is about -1
    # and the interaction is detected.
    assert pooled["codebase"].ci_high < 1
    assert rh.lr_interaction is not None and rh.lr_interaction.p < 0.05
    for c in rh.per_pair:
        if c.condition == "codebase" and c.pair.startswith("grok-4.5"):
            assert -3.2 < c.log_odds < -0.8 and c.ci_high < 1
        elif c.condition == "codebase":
            assert c.ci_low < 1 < c.ci_high
        else:
            assert c.log_odds > 1.0 and c.ci_low > 1
    # No effect planted on harmful compliance or sycophancy.
    for name in ("harmful_compliance", "sycophancy"):
        b = result.behaviours[name]
        assert b.lr_resource is not None and b.lr_resource.p > 0.05
        assert b.lr_interaction is not None and b.lr_interaction.p > 0.05
        for c in b.contrasts:
            assert c.ci_low < 1 < c.ci_high
            assert abs(c.log_odds) < 0.7
    # Judges were simulated with moderate noise: agreement is substantial but not perfect.
    for b in result.behaviours.values():
        alpha = b.agreement.krippendorff_alpha_ordinal
        assert alpha is not None and 0.6 < alpha < 0.95
    # The rollout every judge refused is listed, not silently lost.
    assert len(result.dropped) == 1


def test_committed_sample_is_the_generator_output() -> None:
    gen = load_generator()
    committed = pd.read_csv(SAMPLE)
    regenerated = gen.make_sample(seed=gen.DEFAULT_SEED)
    pd.testing.assert_frame_equal(committed, regenerated, check_dtype=False)
    assert SAMPLE.stat().st_size < 1_000_000


def test_pitfalls_constant_single_judge_empty_cell_single_condition_pair() -> None:
    data = small_design(seed=4, n_per_cell=8)
    # Empty cell: pair a2/t1 never ran under transcripts.
    data = data[~((data["auditor"] == "a2") & (data["condition"] == "transcripts"))]
    # A pair seen only under codebase (like the paper's refusal-only pairs).
    extra = data[data["condition"] == "codebase"].head(5).assign(auditor="a3")
    extra["rollout"] = extra["rollout"] + "z"
    # A behaviour with constant scores.
    const = data.assign(behaviour="flat", score=1, rollout=data["rollout"] + "c")
    table = tidy_from_panel(pd.concat([data, extra, const]))
    result = analyse(table, reference_condition="none", n_boot=200)
    b = result.behaviours["b"]
    text = " | ".join(b.warnings)
    assert "empty cell: pair a2 -> t1, condition transcripts" in text
    assert "pair a3 -> t1 has rollouts in one condition only" in text
    assert "single judge" in text
    assert b.agreement.krippendorff_alpha_ordinal is None
    assert b.lr_interaction is not None and b.lr_interaction.df == 1
    assert "a3 -> t1" not in b.pairs and len(b.contrasts) == 2
    flat = result.behaviours["flat"]
    assert flat.lr_resource is None and flat.contrasts == ()
    assert any("constant outcome" in w for w in flat.warnings)
    json.dumps(result.to_json_dict(), allow_nan=False)


def test_separation_is_flagged() -> None:
    rows = []
    for i in range(12):
        for cond, score in (("none", 1 + i % 3), ("codebase", 8 + i % 3)):
            rows.append(
                {
                    "rollout": f"{cond}{i}",
                    "behaviour": "b",
                    "condition": cond,
                    "auditor": "a",
                    "target": "t",
                    "score": score,
                }
            )
    result = analyse(tidy_from_panel(pd.DataFrame(rows)), "none", n_boot=200)
    b = result.behaviours["b"]
    assert b.contrasts[0].separation
    assert b.per_pair[0].separation
    assert any("separation" in w for w in b.warnings)
    json.dumps(result.to_json_dict(), allow_nan=False)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.drop(columns=["judge"]), "missing column(s) judge"),
        (lambda t: t.assign(score=t["score"].where(t.index != 3, 11.0)), "data row 4"),
        (lambda t: t.assign(score=t["score"].astype(object).where(t.index != 2, "x")), "'x'"),
        (lambda t: t.assign(condition=t["condition"].where(t.index != 0, "")), "field 'condition'"),
    ],
)
def test_bad_tables_raise_input_error(change, message) -> None:
    table = tidy_from_panel(small_design(n_per_cell=2))
    with pytest.raises(InputError, match=None) as err:
        validate_tidy(change(table), "t.csv")
    assert message in str(err.value) and "t.csv" in str(err.value)


def test_unknown_reference_condition_is_input_error() -> None:
    with pytest.raises(InputError, match="reference condition 'baseline'"):
        analyse(tidy_from_panel(small_design(n_per_cell=2)), "baseline")


def test_inconsistent_rollout_is_input_error() -> None:
    table = tidy_from_panel(small_design(n_per_cell=2), judges=("j1", "j2"))
    table.loc[1, "condition"] = "other"
    with pytest.raises(InputError, match=r"rollout x1, field 'condition'"):
        validate_tidy(table)


def run_pairs_frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for run, cond in (("r1", "gpt"), ("r2", "rules"), ("r3", "gpt+rules")):
        for pair in ("honest", "adversarial"):
            for q in range(30):
                p_found = {"honest": 0.1, "adversarial": 0.3}[pair] * (
                    2.5 if "rules" in cond else 1
                )
                found = rng.random() < p_found
                rows.append(
                    {
                        "run_id": f"{run}-{pair}",
                        "run_label": f"{cond} on {pair}",
                        "generator_condition": cond,
                        "checkpoint_pair": pair,
                        "pair_id": f"q{q}",
                        "max_d": float(rng.uniform(1.2, 3))
                        if found
                        else float(rng.uniform(-1, 0.9)),
                        "n_counterexamples": int(found) * 2,
                        "status": "degraded" if found else "certified",
                    }
                )
    return pd.DataFrame(rows)


def test_outcomes_from_run_pairs_feeds_the_analysis() -> None:
    runs = run_pairs_frame()
    runs.loc[0, "status"] = "running"
    tidy, dropped = outcomes_from_run_pairs(runs)
    assert list(dropped["rollout"]) == ["r1-honest/q0"]
    assert set(tidy["score"]) == {1.0, 2.0}
    expected = (runs["n_counterexamples"] > 0).astype(float) + 1
    assert_allclose(tidy["score"].to_numpy(), expected.to_numpy()[1:])
    result = analyse(tidy, reference_condition="gpt", n_boot=200)
    b = result.behaviours["counterexample_found"]
    assert set(b.pairs) == {"honest", "adversarial"}
    assert {c.condition for c in b.contrasts} == {"rules", "gpt+rules"}
    binned, _ = outcomes_from_run_pairs(runs, outcome="max_d", max_d_edges=(0.0, 1.0, 2.0))
    d = runs["max_d"].to_numpy()[1:]
    assert_allclose(binned["score"], 1 + (d > 0) + (d > 1) + (d > 2))
    with pytest.raises(InputError, match="missing column"):
        outcomes_from_run_pairs(runs.drop(columns=["status"]))


@pytest.mark.slow
def test_recovery_and_null_calibration_over_seeds() -> None:
    """Over 10 fresh seeds: mean recovered effects near the planted ones, few false alarms."""
    gen = load_generator()
    cb_grok, cb_gpt, tr, null_hits = [], [], [], 0
    for seed in range(100, 110):
        result = analyse(gen.make_sample(seed=seed), reference_condition="none", n_boot=100)
        rh = result.behaviours["reward_hacking"]
        tr.append(next(c.log_odds for c in rh.contrasts if c.condition == "transcripts"))
        for c in rh.per_pair:
            if c.condition == "codebase":
                (cb_grok if c.pair.startswith("grok") else cb_gpt).append(c.log_odds)
        for name in ("harmful_compliance", "sycophancy"):
            b = result.behaviours[name]
            assert b.lr_resource is not None
            null_hits += b.lr_resource.p < 0.05
    assert np.mean(tr) == pytest.approx(2.5, abs=0.4)
    assert np.mean(cb_grok) == pytest.approx(-2.0, abs=0.4)
    assert np.mean(cb_gpt) == pytest.approx(0.0, abs=0.3)
    # 20 null tests at level 0.05: P(more than 4 rejections) < 0.003 if the test is calibrated.
    assert null_hits <= 4
