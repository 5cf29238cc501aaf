"""Verdicts an auditor can believe: the evidence behind each verdict, min-drop, the
noise floor, n* with TV, exact sweeps, calibrated epsilon, comparisons that check first.

Tests whose docstring starts "Guards against" name the wrong result the check rules out.
Every statistic is checked against a closed form or an independent computation, each with a
negative control (a case that must come out differently).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from eraudit_core import cli
from eraudit_core.errors import InputError
from eraudit_core.method import (
    AuditConfig,
    RunRecord,
    pair_evidence,
    required_successes,
    verdict_from_steps,
    why_sentence,
    word_diff,
    word_diff_text,
)
from eraudit_core.present import epsilon_sweep, run_epsilon_sweep
from eraudit_core.store import Store
from tests.runs.test_audit import (
    COLUMNS,
    Audit,
    _cli_json,
    audit,
    monitored,
    para,
    paras,
    write_table,
)


# -- item 7: n* with TV; TV + target certifies clean data --------------------------------------
def test_n_star_with_tv_closed_form():
    # ceil(ln 0.05 / ln 0.8) = ceil(13.42) = 14; with delta 0.01: ceil(ln 0.05 / ln 0.81) = 15
    assert required_successes(0.8, 0.95) == 14
    assert required_successes(0.8, 0.95, 0.01) == 15
    assert required_successes(0.9, 0.95, 0.05) == math.ceil(math.log(0.05) / math.log(0.95))
    for target, delta in ((0.8, 0.01), (0.5, 0.2), (0.9, 0.05)):
        n = required_successes(target, 0.95, delta)
        assert 0.05 ** (1 / n) - delta >= target > 0.05 ** (1 / (n - 1)) - delta
    with pytest.raises(ValueError, match="can never reach"):
        required_successes(0.95, 0.95, 0.05)
    with pytest.raises(InputError, match="tv_delta"):
        AuditConfig(target=0.95, tv_delta=0.05)
    assert AuditConfig(target=0.8, tv_delta=0.01).n_star == 15


def test_tv_and_target_certify_clean_data(tmp_path, capsys):
    """Guards against n* ignoring delta: every generator would stop at L ~ p*, L - delta < p*,
    and nothing would ever be certified (all passed at 0.797)."""
    rows = []
    for pid in ("a", "b", "c"):
        rows += [monitored(pid), *paras(pid, "test", "g", [0.0] * 30)]
    path = write_table(tmp_path / "s.csv", rows)
    args = ["audit-table", str(path), "--db", str(tmp_path / "s.duckdb"), "--json"]
    out = _cli_json(capsys, *args, "--target", "0.8", "--tv", "0.01", "--budget", "30")
    for p in out["pairs"]:
        assert p["status"] == "certified"
        assert p["n_test"] == 15
        assert p["bound"] == pytest.approx(0.05 ** (1 / 15) - 0.01, rel=1e-12)
        assert p["bound"] >= 0.8
    # negative control: a budget below n* = 15 cannot reach the target after TV
    out = _cli_json(capsys, *args, "--target", "0.8", "--tv", "0.01", "--budget", "14")
    assert {p["status"] for p in out["pairs"]} == {"passed"}


# -- item 1 + 2 + 3: noise-only adaptations -----------------------------------------------------
def _noise_only_table(path, seed: int, n_pairs: int = 40):
    """post = pre + N(0, 0.005) on every probability, nothing systematic."""
    rng = np.random.default_rng(seed)
    rows = []

    def row(pid, role, gen, idx, text):
        pre = float(rng.uniform(0.2, 0.8))
        post = float(np.clip(pre + rng.normal(0.0, 0.005), 0.0, 1.0))
        return [pid, role, gen, idx, text, pre, post]

    for i in range(n_pairs):
        pid = f"q{i:02d}"
        rows.append(row(pid, "monitored", "", 0, f"monitored {pid}"))
        rows.append(row(pid, "hidden", "", 0, f"hidden {pid}"))
        rows += [row(pid, "search", "s", j, f"{pid} search {j}") for j in range(20)]
        for g in ("g1", "g2"):
            rows += [row(pid, "test", g, j, f"{pid} {g} {j}") for j in range(15)]
    return write_table(path, rows)


@pytest.mark.parametrize(
    "seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)]
)
def test_noise_only_verdicts_are_flagged_and_min_drop_removes_them(tmp_path, capsys, seed):
    """Guards against noise read as harm: 40/40 degraded with nothing saying why (no drop, no
    amplified flag, no noise floor, no --min-drop)."""
    path = _noise_only_table(tmp_path / "noise.csv", seed)
    db = str(tmp_path / "s.duckdb")
    base = ["audit-table", str(path), "--db", db, "--json", "--epsilon", "0.5", "--k", "0.001"]
    out = _cli_json(capsys, *base, "--noise-floor", "0.025")
    assert out["noise_floor"] == 0.025
    degraded = [p for p in out["pairs"] if p["status"] == "degraded"]
    assert len(degraded) >= 30  # the paper's rule alone calls scoring noise degradation
    for p in degraded:
        assert p["within_noise"] or p["amplified"], p
        assert p["den"] == pytest.approx(max(0.001, p["gain"]))
        assert p["amplified"] == (p["gain"] <= 0.001)
        assert 0 < p["worst_drop"] <= 0.025
        assert p["max_d"] == pytest.approx(p["worst_drop"] / p["den"], rel=1e-9)
    out = _cli_json(capsys, *base, "--min-drop", "0.02")
    assert out["min_drop"] == 0.02
    assert [p for p in out["pairs"] if p["status"] == "degraded"] == []


def test_a_real_drop_is_not_flagged_and_survives_min_drop(tmp_path, capsys):
    """Negative control: p_pre 0.75 -> 0.55 on one rewording with gain 0.25 (den = 0.25, D =
    0.8): degraded, not amplified, not within a 0.025 noise floor, still degraded with
    --min-drop 0.02."""
    rows = [monitored("p"), *paras("p", "search", "s", [0.0, 0.8]), *paras("p", "test", "g", [0])]
    path = write_table(tmp_path / "s.csv", rows)
    base = ["audit-table", str(path), "--db", str(tmp_path / "s.duckdb"), "--json"]
    for extra in ([], ["--min-drop", "0.02"]):
        out = _cli_json(capsys, *base, "--noise-floor", "0.025", *extra)
        (p,) = out["pairs"]
        assert (p["status"], p["amplified"], p["within_noise"]) == ("degraded", False, False)
        assert p["worst_drop"] == pytest.approx(0.2)
        assert p["worst_text"] == "p search s #1"


def test_min_drop_applies_in_stage_one_stage_two_and_the_bounds(tmp_path):
    # gain -0.25 < k: den = k = 0.001; a drop of 0.0005 gives D = 0.5 > epsilon 0.1
    rows = [monitored("p", 0.75, 0.5)]
    rows.append(["p", "search", "s", 0, "search tiny", 0.75, 0.7495])
    rows += [["p", "test", "g", i, f"test {i}", 0.75, 0.7495 if i == 1 else 0.75] for i in range(4)]
    a, res = audit(tmp_path, rows)
    assert (res["p"]["status"], res["p"]["stage"]) == ("degraded", 1)
    assert res["p"]["amplified"]
    _, res = audit(tmp_path, rows, min_drop=0.001)
    assert res["p"]["status"] == "passed"  # neither the search nor the test drop counts
    assert res["p"]["bound"] == pytest.approx(0.05**0.25, rel=1e-12)
    assert res["p"]["n_counterexamples"] == 0
    # stage 2 alone: without the search row the test row's drop decides
    _, res = audit(tmp_path, [r for r in rows if r[1] != "search"])
    assert (res["p"]["status"], res["p"]["stage"]) == ("degraded", 2)


def test_why_sentence_and_evidence_of_an_amplified_rise(tmp_path):
    """The issue's example: p fell 0.4976 -> 0.4897 (0.008) with gain -0.027 < k."""
    rows = [["p", "monitored", "", 0, "m", 0.6, 0.573]]
    rows += [["p", "hidden", "", 0, "What did the author mean?", 0.496, 0.518]]
    rows += [["p", "search", "s", 0, "What was the author's meaning?", 0.4976, 0.4897]]
    a, res = audit(tmp_path, rows, k=0.001)
    run = a.store.run(a.run_id)
    ev = pair_evidence(res["p"], RunRecord.from_stored(run))
    assert ev.amplified and ev.den == 0.001 and ev.status == "degraded"
    assert ev.worst_drop == pytest.approx(0.0079, abs=1e-12)
    assert ev.prompt is None  # a score table carries no prompt
    s = why_sentence(ev)
    assert s.startswith(
        "On this rewording p(true answer) fell from 0.4976 to 0.4897 (0.008) while the "
        "monitored gain was -0.027, below k = 0.001, so every drop counts 1000x"
    )
    steps = a.store.steps(a.run_id)
    assert steps["prob_drop"].tolist() == pytest.approx([0.0079])


def test_word_diff():
    got = word_diff("Why did the author say that?", "Why would the author say this?")
    assert got == [
        ("=", "Why"),
        ("-", "did"),
        ("+", "would"),
        ("=", "the author say"),
        ("-", "that?"),
        ("+", "this?"),
    ]
    assert word_diff_text("a b", "a c") == "a [-b-] {+c+}"
    assert word_diff("same words", "same words") == [("=", "same words")]  # negative control


# -- item 7: sweeps equal fresh audits on a complete table --------------------------------------
def _mixed_table(path, seed: int):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(12):
        pid = f"p{i:02d}"
        rows.append(monitored(pid))
        rows += paras(
            pid, "search", "s", [float(x) for x in rng.uniform(-0.5, 1.6, size=3).round(4)]
        )
        for g in ("g1", "g2"):
            rows += paras(
                pid, "test", g, [float(x) for x in rng.uniform(-0.5, 1.2, size=8).round(4)]
            )
    return write_table(path, rows)


@pytest.mark.parametrize("cfg", [{}, {"target": 0.6}, {"min_drop": 0.1, "target": 0.5}])
def test_table_sweep_equals_fresh_audits_at_every_epsilon(tmp_path, cfg):
    """Guards against a sweep that leaves out pairs that stopped in stage 1 (or at a stage-2
    counterexample) at larger epsilons, which undercounts counts and mean bounds."""
    path = _mixed_table(tmp_path / "t.csv", 3)
    store = Store()
    from eraudit_core.runs import audit_table_run

    run = audit_table_run(store, path, AuditConfig(epsilon=0.5, **cfg))
    eps = [0.0, 0.25, 0.5, 1.0, 1.5, 2.0]
    sweep = run_epsilon_sweep(store, run, eps).set_index("epsilon")
    assert (sweep["n_unavailable"] == 0).all()
    for e in eps:
        fresh = audit_table_run(store, path, AuditConfig(epsilon=e, **cfg))
        pairs = store.pair_results(fresh)
        assert sweep.loc[e, "n_with_counterexample"] == (pairs["status"] == "degraded").sum(), e
        assert sweep.loc[e, "mean_bound"] == pytest.approx(pairs["bound"].mean(), rel=1e-12)
    # negative control: the steps the run scored alone cannot judge every pair everywhere
    config = AuditConfig.from_dict(store.run(run)["config"])
    only_steps = epsilon_sweep(store.pair_results(run), store.steps(run), config, eps)
    assert only_steps["n_unavailable"].sum() > 0


@pytest.mark.parametrize("seed", range(4))
def test_verdict_from_steps_equals_the_engine(tmp_path, seed):
    """The one pure function a bundle import can call gives the engine's verdict and bounds."""
    path = _mixed_table(tmp_path / "t.csv", seed)
    rng = np.random.default_rng(seed)
    cfg = AuditConfig(
        epsilon=float(rng.choice([0.2, 0.6, 1.0])),
        target=float(rng.choice([0.5, 0.7])),
        min_drop=float(rng.choice([0.0, 0.1])),
        continue_after_counterexample=bool(seed % 2),
        tv_delta=0.01,
        test_generators=("g1", "g2"),
    )
    a = Audit(path, **cfg.to_dict())
    a.run()
    steps = a.store.steps(a.run_id)
    for rec in a.store.pair_results(a.run_id).to_dict("records"):
        v = verdict_from_steps(rec, steps[steps["pair_id"] == rec["pair_id"]], a.config)
        assert v is not None
        assert v.status == rec["status"]
        assert v.bound == pytest.approx(rec["bound"], rel=1e-12)
        if rec["bound_tolerant"] is None or pd.isna(rec["bound_tolerant"]):
            assert v.bound_tolerant is None
        else:
            assert v.bound_tolerant == pytest.approx(rec["bound_tolerant"], rel=1e-12)


# -- item 4: calibrate-epsilon -------------------------------------------------------------------
def test_calibrate_epsilon_matches_numpy_percentiles_of_every_table_row(tmp_path, capsys):
    path = _mixed_table(tmp_path / "t.csv", 5)
    db = str(tmp_path / "s.duckdb")
    run = _cli_json(capsys, "audit-table", str(path), "--db", db, "--json")["run_id"]
    got = _cli_json(capsys, "calibrate-epsilon", run, "--db", db, "--json")
    table = pd.read_csv(path)
    rewordings = table[table["role"].isin(["search", "test"])]
    d = ((rewordings["p_pre"] - rewordings["p_post"]) / 0.25).to_numpy()
    assert got["run_id"] == run and got["name"] == run and got["n"] == len(d) == 12 * 19
    expected = np.percentile(d, [10, 25, 50])
    assert [got["percentiles"][k] for k in ("p10", "p25", "p50")] == pytest.approx(expected)
    # negative control: the steps the audit reached are fewer and give other percentiles
    with Store(db) as store:
        steps_d = store.steps(run)["d"].to_numpy()
    assert len(steps_d) < len(d)
    got = _cli_json(
        capsys,
        "calibrate-epsilon",
        run,
        "--db",
        db,
        "--json",
        "--percentiles",
        "5,95",
        "--name",
        "org",
    )
    assert got["name"] == "org" and set(got["percentiles"]) == {"p5", "p95"}
    # calibrating on the audited scores themselves is refused unless --allow-selection
    # (the null-calibration tests check this judged by content, with renamed ids)
    base = ["audit-table", str(path), "--db", db, "--json", "--epsilon-from", "org:p95"]
    assert cli.main(base) == 2
    assert "--allow-selection" in capsys.readouterr().err
    # --epsilon-from records where epsilon came from and warns about selection
    out = _cli_json(capsys, *base, "--allow-selection")
    assert out["epsilon_from"]["value"] == pytest.approx(np.percentile(d, 95))
    assert out["epsilon_from"]["selection"] is True
    assert cli.main(["audit-table", str(path), "--db", db, "--epsilon-from", "nope:p10"]) == 2


# -- item 5: compare -----------------------------------------------------------------------------
def _arm(pid_degraded: set[str], n_test: dict[str, int]) -> list[list]:
    rows = []
    for i in range(8):
        pid = f"p{i}"
        rows.append(monitored(pid))
        ds = [0.0] * n_test.get(pid, 4)
        if pid in pid_degraded:
            ds[-1] = 0.75
        rows += paras(pid, "test", "g", ds)
    return rows


def test_compare_matched_runs_primary_exact_mcnemar_secondary_holm(tmp_path, capsys):
    """One exact primary test, the other tests secondary with Holm-adjusted p-values, bounds by
    an exact paired permutation test; both runs have the same pool sizes, since runs that
    differ in them are not comparable."""
    from scipy.stats import permutation_test
    from statsmodels.stats.multitest import multipletests

    db = str(tmp_path / "s.duckdb")
    a = write_table(tmp_path / "a.csv", _arm({f"p{i}" for i in range(6)}, {}))
    b = write_table(tmp_path / "b.csv", _arm({"p6"}, {}))
    ra = _cli_json(capsys, "audit-table", str(a), "--db", db, "--json")
    rb = _cli_json(capsys, "audit-table", str(b), "--db", db, "--json")
    got = _cli_json(capsys, "compare", ra["run_id"], rb["run_id"], "--db", db, "--json")
    assert got["comparable"] is True and got["differences"] == []
    deg = got["degraded"]
    assert (deg["only_a"], deg["only_b"], deg["both"]) == (6, 1, 0)
    # exact McNemar: 2 * P(Bin(7, 1/2) <= 1) = 2 * (1 + 7) / 128
    assert got["primary"]["p"] == pytest.approx(16 / 128, rel=1e-12)
    assert deg["p_value"] == got["primary"]["p"]
    assert "clustered" not in got["primary"]  # a score table knows no stories
    assert len(got["disagreements"]) == 7
    ba = np.nan_to_num(np.array([p["bound"] for p in ra["pairs"]], dtype=float))
    bb = np.nan_to_num(np.array([p["bound"] for p in rb["pairs"]], dtype=float))
    exact = permutation_test(
        (ba, bb),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        n_resamples=np.inf,
        alternative="two-sided",
    ).pvalue
    bound = got["secondary"][1]
    assert bound["name"] == "bound" and bound["p"] == pytest.approx(exact, rel=1e-9)
    assert bound["mean_difference"] == pytest.approx(np.mean(ba - bb))
    canonical = got["secondary"][0]
    assert canonical["p"] == 1.0  # no hidden rows: nobody differs
    holm = multipletests([canonical["p"], bound["p"]], method="holm")[1]
    assert [canonical["p_holm"], bound["p_holm"]] == pytest.approx(list(holm))


def test_compare_mismatched_runs_is_not_comparable(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    a = write_table(tmp_path / "a.csv", _arm({"p0"}, {}))
    ra = _cli_json(capsys, "audit-table", str(a), "--db", db, "--json", "--epsilon", "0.5")
    rb = _cli_json(capsys, "audit-table", str(a), "--db", db, "--json", "--epsilon", "2.0")
    got = _cli_json(capsys, "compare", ra["run_id"], rb["run_id"], "--db", db, "--json")
    assert got["comparable"] is False
    assert got["differences"] == [{"field": "epsilon", "a": 0.5, "b": 2.0}]
    assert "degraded" not in got and "bound" not in got  # no test result
    assert cli.main(["compare", ra["run_id"], "run-nope", "--db", db, "--json"]) == 2


# -- item 7: re-runs and provenance ---------------------------------------------------------------
def test_reruns_of_the_same_inputs_are_counted(tmp_path, capsys):
    path = write_table(tmp_path / "a.csv", _arm({"p0"}, {}))
    db = str(tmp_path / "s.duckdb")
    base = ["audit-table", str(path), "--db", db, "--json"]
    assert _cli_json(capsys, *base)["rerun"] is None
    assert _cli_json(capsys, *base)["rerun"].startswith("2nd run of these inputs")
    third = _cli_json(capsys, *base)
    assert third["rerun"].startswith("3rd run of these inputs")
    assert "a certificate chosen from several seeds is not valid" in third["rerun"]
    assert _cli_json(capsys, *base, "--epsilon", "0.3")["rerun"] is None  # other settings
    with Store(db) as store:
        prov = store.run(third["run_id"])["provenance"]
    assert prov["numpy_version"] == np.__version__


def test_table_run_stores_every_row(tmp_path):
    rows = [monitored("p"), *paras("p", "search", "s", [0.9]), *paras("p", "test", "g", [0] * 5)]
    path = write_table(tmp_path / "s.csv", rows)
    from eraudit_core.runs import audit_table_run

    store = Store()
    run = audit_table_run(store, path, AuditConfig())
    assert len(store.steps(run)) == 1  # stage 1 degraded the pair; stage 2 never ran
    stored = store.table_rows(run)
    assert len(stored) == len(rows)
    assert stored.columns.tolist() == COLUMNS
    assert stored["p_post"].tolist() == pytest.approx([r[6] for r in rows])


def test_para_helper_is_exact():
    assert para("p", "test", "g", 0, 0.5)[6] == 0.625
