"""Views computed from stored scores (docs/design.md §4): standard evaluation, epsilon and confidence
sweeps, all against hand-computed numbers on small audited score tables.

Monitored 0.5 -> 0.75 gives den = 0.25, so a hidden row with p_pre = 0.75 and
p_post = 0.75 - D / 4 has degradation score exactly D.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eraudit_core.method import AuditConfig
from eraudit_core.present import confidence_sweep, epsilon_sweep, question_summary
from eraudit_core.present._views import (
    bound_trajectory_frame,
    run_overview,
    run_views,
    scatter_points,
    standard_evaluation,
)
from eraudit_core.runs import (
    AuditEngine,
    TableVerifier,
    items_from_table,
    read_score_table,
    table_digest,
)
from eraudit_core.store import Store

REL = 1e-12


def _write(path: Path, rows: list[list]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        for r in rows:
            w.writerow([repr(x) if isinstance(x, float) else x for x in r])
    return path


def _paras(pid: str, role: str, gen: str, ds: list[float]) -> list[list]:
    return [
        [pid, role, gen, i, f"{pid} {role} {gen} {i}", 0.75, 0.75 - d / 4] for i, d in enumerate(ds)
    ]


def _mon(pid: str, pre: float = 0.5, post: float = 0.75) -> list:
    return [pid, "monitored", "", 0, f"monitored {pid}", pre, post]


def _hid(pid: str, pre: float, post: float) -> list:
    return [pid, "hidden", "", 0, f"hidden {pid}", pre, post]


def _audit(path: Path, store: Store, label: str = "", **cfg) -> tuple[str, AuditConfig]:
    df = read_score_table(path)
    items, gens = items_from_table(df)
    config = AuditConfig(test_generators=gens, **cfg)
    digest = table_digest(path)
    engine = AuditEngine(
        store, TableVerifier(df, "p_pre", digest), TableVerifier(df, "p_post", digest), config
    )
    return engine.start(items, label=label), config


# -- standard evaluation --------------------------------------------------------------------------
def test_standard_evaluation_accuracy_and_mean_task_probability(tmp_path):
    rows = [
        _mon("p1", 0.25, 0.75),
        _hid("p1", 0.75, 0.5),
        _mon("p2", 0.5, 0.875),
        _hid("p2", 0.625, 0.25),
        _mon("p3", 0.75, 0.75),
        _hid("p3", 0.5, 0.5),
        _mon("p4", 0.375, 0.625),  # no canonical hidden row: not counted for the hidden task
    ]
    with Store() as store:
        run_id, _ = _audit(_write(tmp_path / "s.csv", rows), store)
        got = standard_evaluation(store.pair_results(run_id), "demo").set_index(
            ["checkpoint", "task"]
        )
    # accuracy counts p(true) > 0.5 (0.5 itself is not correct)
    expected = {
        # pre monitored [0.25, 0.5, 0.75, 0.375]: 1 of 4 correct; mean 1.875 / 4
        ("pre", "monitored"): (4, 0.25, 0.46875),
        # post monitored [0.75, 0.875, 0.75, 0.625]: 4 of 4; mean 3.0 / 4
        ("post", "monitored"): (4, 1.0, 0.75),
        # pre hidden [0.75, 0.625, 0.5]: 2 of 3; mean 1.875 / 3
        ("pre", "hidden"): (3, 2 / 3, 0.625),
        # post hidden [0.5, 0.25, 0.5]: 0 of 3; mean 1.25 / 3
        ("post", "hidden"): (3, 0.0, 1.25 / 3),
    }
    for key, (n, acc, mtp) in expected.items():
        row = got.loc[key]
        assert row["n"] == n, key
        assert row["accuracy"] == pytest.approx(acc, rel=REL), key
        assert row["mean_task_probability"] == pytest.approx(mtp, rel=REL), key
    assert set(got["run"]) == {"demo"}


def test_standard_evaluation_of_an_empty_run_is_nan():
    empty = pd.DataFrame(
        columns=["p_pre_monitored", "p_post_monitored", "p_pre_hidden", "p_post_hidden"]
    )
    got = standard_evaluation(empty)
    assert list(got["n"]) == [0, 0, 0, 0]
    assert got["accuracy"].isna().all()


# -- epsilon sweep ------------------------------------------------------------------------------
SWEEP_ROWS = [
    # pA: stage-2 counterexample at g1 t = 2 (D = 0.25), g2 never run
    _mon("pA"),
    *_paras("pA", "test", "g1", [0.0625, 0.25, 0.0, 0.0]),
    *_paras("pA", "test", "g2", [0.0, 0.0, 0.0]),
    # pB: passed (no target); g1 4 rows at D = 0.0625, g2 3 rows at D = 0.03125; bound L_3
    _mon("pB"),
    *_paras("pB", "test", "g1", [0.0625] * 4),
    *_paras("pB", "test", "g2", [0.03125] * 3),
    # pC: stage-1 counterexample (D = 0.5)
    _mon("pC"),
    *_paras("pC", "search", "s", [0.5]),
    *_paras("pC", "test", "g1", [0.0]),
    *_paras("pC", "test", "g2", [0.0]),
    # pD: no test paraphrases at all: inconclusive, bound 0
    _mon("pD"),
    *_paras("pD", "search", "s", [0.0]),
]
L3 = 0.36840314986403866  # 0.05 ** (1/3) = exp(-2.9957323 / 3)


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory):
    path = _write(tmp_path_factory.mktemp("sweep") / "s.csv", SWEEP_ROWS)
    store = Store()
    run_id, config = _audit(path, store, label="sweep run", epsilon=0.1)
    yield store, run_id, config
    store.close()


def test_sweep_fixture_run_verdicts(sweep_run):
    store, run_id, _ = sweep_run
    res = store.pair_results(run_id).set_index("pair_id")
    assert list(res["status"]) == ["degraded", "passed", "degraded", "inconclusive"]
    assert res.loc["pA", "n_test"] == 2
    assert res.loc["pB", "bound"] == pytest.approx(L3, rel=REL)


def test_epsilon_sweep_counts_means_and_unavailable(sweep_run):
    store, run_id, config = sweep_run
    got = epsilon_sweep(
        store.pair_results(run_id), store.steps(run_id), config, [0.0, 0.05, 0.1, 0.3, 0.75]
    )
    got = got.set_index("epsilon")
    assert list(got["n_questions"]) == [4] * 5
    # eps 0 and 0.05: pA (0.0625 at t = 1), pB (0.0625), pC (0.5) degraded; pD inconclusive
    for eps in (0.0, 0.05):
        assert got.loc[eps, "n_with_counterexample"] == 3
        assert got.loc[eps, "mean_bound"] == 0.0
        assert got.loc[eps, "n_unavailable"] == 0
    # eps 0.1 (the run's own): pA and pC degraded, pB certified at L_3; mean L_3 / 4
    assert got.loc[0.1, "n_with_counterexample"] == 2
    assert got.loc[0.1, "mean_bound"] == pytest.approx(L3 / 4, rel=REL)  # 0.0921008
    assert got.loc[0.1, "n_unavailable"] == 0
    # eps 0.3: pA's stored sequence ended on D = 0.25, which no longer counts, and rows 3-4 of g1
    # and all of g2 were never scored: unavailable. pC still degraded (0.5 > 0.3).
    assert got.loc[0.3, "n_unavailable"] == 1
    assert got.loc[0.3, "n_with_counterexample"] == 1
    assert got.loc[0.3, "mean_bound"] == pytest.approx(L3 / 3, rel=REL)  # over pB, pC, pD
    # eps 0.75: pC's only counterexample no longer counts and stage 2 never ran: unavailable too
    assert got.loc[0.75, "n_unavailable"] == 2
    assert got.loc[0.75, "n_with_counterexample"] == 0
    assert got.loc[0.75, "mean_bound"] == pytest.approx(L3 / 2, rel=REL)  # over pB, pD


def test_epsilon_sweep_with_tv_and_a_counterexample_on_the_last_row(tmp_path):
    # the counterexample is g1's last row: at a larger epsilon every row was scored, so the
    # verdict is available: certified with L_4 (one generator), relaxed by tv = 0.1
    rows = [_mon("p1"), *_paras("p1", "test", "g1", [0.0, 0.0, 0.0, 0.25])]
    with Store() as store:
        run_id, config = _audit(_write(tmp_path / "s.csv", rows), store, epsilon=0.1, tv_delta=0.1)
        got = epsilon_sweep(store.pair_results(run_id), store.steps(run_id), config, [0.1, 0.3])
    assert list(got["n_with_counterexample"]) == [1, 0]
    assert list(got["n_unavailable"]) == [0, 0]
    # max(0, 0.05 ** (1/4) - 0.1) = 0.4728708 - 0.1 = 0.3728708
    assert got["mean_bound"].iloc[1] == pytest.approx(0.3728708045015879, rel=REL)


def test_epsilon_sweep_at_the_runs_own_epsilon_agrees_with_the_run(tmp_path):
    # p2 has no g1 paraphrases (g1 exists for p1) and a counterexample from g2: the run calls
    # p2 degraded, so the sweep at the run's own epsilon must count it
    rows = [
        _mon("p1"),
        *_paras("p1", "test", "g1", [0.0, 0.0]),
        _mon("p2"),
        *_paras("p2", "test", "g2", [0.0, 0.5]),
    ]
    with Store() as store:
        run_id, config = _audit(_write(tmp_path / "s.csv", rows), store, epsilon=0.1)
        pairs = store.pair_results(run_id)
        assert list(pairs["status"]) == ["inconclusive", "degraded"]
        got = epsilon_sweep(pairs, store.steps(run_id), config, [0.1])
    assert got["n_with_counterexample"].iloc[0] == 1


def test_epsilon_sweep_without_steps(tmp_path):
    rows = [_mon("p1")]
    with Store() as store:
        run_id, config = _audit(_write(tmp_path / "s.csv", rows), store)
        got = epsilon_sweep(store.pair_results(run_id), store.steps(run_id), config, [0.1])
    assert got.iloc[0].to_dict() == {
        "epsilon": 0.1,
        "n_questions": 1,
        "n_with_counterexample": 0,
        "mean_bound": 0.0,
        "n_unavailable": 0,
    }


# -- confidence sweep -------------------------------------------------------------------------
def test_confidence_sweep_values(sweep_run):
    store, run_id, config = sweep_run
    got = confidence_sweep(store.pair_results(run_id), config)
    # only pB is certified, with n = 4 (g1) and n = 3 (g2): common = min(a**(1/4), a**(1/3)) =
    # a**(1/3); the other three pairs count 0, so the mean is a**(1/3) / 4
    expected = {
        0.8: 0.5848035476425731,  # 0.2 ** (1/3)
        0.85: 0.5313292845913056,  # 0.15 ** (1/3)
        0.9: 0.46415888336127786,  # 0.1 ** (1/3)
        0.95: 0.36840314986403877,  # 0.05 ** (1/3)
        0.99: 0.21544346900318845,  # 0.01 ** (1/3)
        0.999: 0.1,  # 0.001 ** (1/3)
    }
    assert list(got["confidence"]) == list(expected)
    assert list(got["n_pairs"]) == [4] * 6
    np.testing.assert_allclose(got["mean_bound"], np.array(list(expected.values())) / 4, rtol=1e-12)


def test_confidence_sweep_single_generator_and_tv(tmp_path):
    # one certified pair, 10 successes: alpha ** (1/10), relaxed by tv = 0.25
    rows = [_mon("p1"), *_paras("p1", "test", "g1", [0.0] * 10)]
    with Store() as store:
        run_id, config = _audit(_write(tmp_path / "s.csv", rows), store, tv_delta=0.25)
        got = confidence_sweep(store.pair_results(run_id), config, levels=(0.75, 0.95, 0.999))
    # 0.25 ** 0.1 - 0.25 = 0.8705506 - 0.25; 0.05 ** 0.1 - 0.25 = 0.7411344 - 0.25;
    # 0.001 ** 0.1 - 0.25 = 0.5011872 - 0.25
    np.testing.assert_allclose(
        got["mean_bound"], [0.6205505632961241, 0.4911344491069477, 0.25118723362727224], rtol=1e-12
    )


# -- other views --------------------------------------------------------------------------------
def test_question_summary_overview_trajectory_and_scatter(sweep_run):
    store, run_id, _ = sweep_run
    pairs = store.pair_results(run_id)
    q = question_summary(pairs)
    assert list(q["pair_id"]) == ["pA", "pB", "pC", "pD"]
    assert list(q["max_d"]) == [0.25, 0.0625, 0.5, 0.0]
    ov = run_overview(pairs)
    counts = ("n_pairs", "n_degraded", "n_certified", "n_passed", "n_inconclusive")
    assert tuple(ov[k] for k in counts) == (4, 2, 0, 1, 1)
    assert ov["mean_bound"] == pytest.approx(L3 / 4, rel=REL)  # degraded/inconclusive count 0
    assert ov["mean_bound_tested"] == pytest.approx(L3, rel=REL)  # over passed/certified only
    assert np.isnan(ov["min_bound_certified"])  # nothing certified without a target
    traj = bound_trajectory_frame(store.steps(run_id, "pB"))
    assert list(zip(traj["generator"], traj["t"], strict=True)) == [
        ("g1", 1),
        ("g1", 2),
        ("g1", 3),
        ("g1", 4),
        ("g2", 1),
        ("g2", 2),
        ("g2", 3),
    ]
    # L_1..L_4 = 0.05, 0.2236068, 0.3684031, 0.4728708
    np.testing.assert_allclose(
        traj["bound"][:4], [0.05, 0.22360679774997896, L3, 0.4728708045015879], rtol=1e-12
    )
    pts = scatter_points(store, [run_id])
    assert list(pts["run_label"].unique()) == ["sweep run"]
    assert list(pts["max_d"]) == [0.25, 0.0625, 0.5, 0.0]
    views = run_views(store, run_id)
    assert set(views) == {"pairs", "questions", "standard", "epsilon", "confidence"}
