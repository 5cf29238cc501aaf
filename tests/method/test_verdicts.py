"""What a pair's verdict and bounds mean, on hand-made score tables.

Each test rules out one wrong reading: "certified" without regard to the bound, a pair-level
failure-tolerant bound over only the generators that ran or without the total-variation
relaxation, case/space variants of a search paraphrase accepted as fresh test draws, and a
resumed run that does not notice that its paraphrase sets changed.

Monitored 0.5 -> 0.75 gives den = 0.25, so a hidden row with p_pre = 0.75 and
p_post = 0.75 - D / 4 has degradation score exactly D (as in test_audit.py).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from eraudit_core import cli
from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig, PairAudit, PairState
from eraudit_core.runs import build_items
from eraudit_core.store import Store, load_bundled_benchmark
from eraudit_core.types import Paraphrase, Verdict
from tests.runs.test_audit import Audit, _cli_json, audit, monitored, paras, write_table

REL = 1e-12


# -- item 3: four verdicts; "certified" needs a target and a bound that reaches it ------------
def test_one_test_paraphrase_is_a_weak_pass_not_a_certificate(tmp_path):
    rows = [monitored("p1"), *paras("p1", "test", "g", [0.0])]
    _, res = audit(tmp_path, rows)
    assert (res["p1"]["status"], res["p1"]["bound"]) == ("passed", pytest.approx(0.05, rel=REL))
    _, res = audit(tmp_path, rows, target=0.9)  # L_1 = 0.05 < 0.9
    assert res["p1"]["status"] == "passed"
    _, res = audit(tmp_path, rows, tv_delta=0.1)  # bound max(0, 0.05 - 0.1) = 0
    assert (res["p1"]["status"], res["p1"]["bound"]) == ("passed", 0.0)


def test_certified_when_the_bound_after_tv_reaches_the_target(tmp_path):
    # confidence 0.75: L_2 = 0.5, L_4 = 0.7071; target 0.7 needs n* = 4 clean draws
    rows = [monitored("p1"), *paras("p1", "test", "g", [0.0] * 4)]
    _, res = audit(tmp_path, rows, confidence=0.75, target=0.7)
    assert res["p1"]["status"] == "certified"
    assert res["p1"]["bound"] == pytest.approx(0.25**0.25, rel=REL)
    _, res = audit(tmp_path, rows, confidence=0.75, target=0.7, tv_delta=0.01)
    assert res["p1"]["status"] == "passed"  # 0.7071 - 0.01 < 0.7: not certified


def test_degraded_takes_precedence_over_inconclusive(tmp_path):
    rows = [monitored("p1"), *paras("p1", "test", "g2", [0.0, 0.5]), monitored("p2")]
    rows += paras("p2", "test", "g1", [0.0])  # g1 exists run-wide; p1 has no g1 paraphrase
    _, res = audit(tmp_path, rows)
    assert res["p1"]["status"] == "degraded"
    assert res["p2"]["status"] == "inconclusive"  # nothing from g2 for p2
    assert set(Verdict) == {"degraded", "certified", "passed", "inconclusive"}


def test_cli_json_uses_exactly_the_four_statuses_and_a_schema_version(tmp_path, capsys):
    rows = [
        monitored("deg"),
        *paras("deg", "search", "s", [0.5]),
        *paras("deg", "test", "g", [0.0] * 4),
        monitored("cert"),
        *paras("cert", "test", "g", [0.0] * 4),
        monitored("pass"),
        *paras("pass", "test", "g", [0.0] * 2),
        monitored("inc"),
        *paras("inc", "search", "s", [0.0]),
    ]
    path = write_table(tmp_path / "s.csv", rows)
    out = _cli_json(
        capsys, "audit-table", str(path), "--db", str(tmp_path / "a.duckdb"), "--json",
        "--confidence", "0.75", "--target", "0.7",
    )  # fmt: skip
    assert out["schema_version"] == 2
    got = {p["pair_id"]: p["status"] for p in out["pairs"]}
    assert got == {"deg": "degraded", "cert": "certified", "pass": "passed", "inc": "inconclusive"}
    # without --target nothing is certified
    out = _cli_json(
        capsys, "audit-table", str(path), "--db", str(tmp_path / "b.duckdb"), "--json",
        "--confidence", "0.75",
    )  # fmt: skip
    assert "certified" not in {p["status"] for p in out["pairs"]}


def test_stop_at_target_is_a_separate_choice(tmp_path):
    rows = [monitored("p1"), *paras("p1", "test", "g", [0.0] * 6)]
    _, res = audit(tmp_path, rows, confidence=0.75, target=0.7)
    assert res["p1"]["n_test"] == 4  # stops at n* = 4
    _, res = audit(tmp_path, rows, confidence=0.75, target=0.7, stop_at_target=False)
    assert res["p1"]["n_test"] == 6 and res["p1"]["status"] == "certified"
    assert res["p1"]["bound"] == pytest.approx(0.25 ** (1 / 6), rel=REL)


# -- item 1: the pair-level failure-tolerant bound covers every generator or is withheld ------
def test_tolerant_bound_withheld_when_a_generator_was_not_run(tmp_path):
    rows = [
        monitored("p1"),
        *paras("p1", "test", "g1", [0.0] * 5 + [0.5] + [0.0] * 4),  # counterexample at t = 6
        *paras("p1", "test", "g2", [0.5] * 10),  # a bad generator never reached
    ]
    _, res = audit(tmp_path, rows)
    r = res["p1"]
    assert r["status"] == "degraded"
    assert r["bound_tolerant"] is None or r["bound_tolerant"] != r["bound_tolerant"]  # NULL
    gens = {g["generator"]: g for g in r["generators"]}
    assert gens["g2"]["stop"] == "not run"
    assert gens["g1"]["bound_tolerant"] > 0  # still shown per generator


def test_tolerant_bound_withheld_for_an_inconclusive_pair(tmp_path):
    rows = [monitored("p1"), *paras("p1", "test", "g2", [0.0] * 10), monitored("p2")]
    rows += paras("p2", "test", "g1", [0.0])
    _, res = audit(tmp_path, rows)
    assert res["p1"]["status"] == "inconclusive"
    tolerant = res["p1"]["bound_tolerant"]
    assert tolerant is None or tolerant != tolerant  # NULL


def test_opt_in_runs_every_generator_to_its_stop_and_reports_the_min(tmp_path):
    rows = [
        monitored("p1"),
        *paras("p1", "search", "s", [0.5]),  # stage-1 counterexample
        *paras("p1", "test", "g1", [0.0] * 5 + [0.5] + [0.0] * 4),
        *paras("p1", "test", "g2", [0.0] * 10),
    ]
    a, res = audit(tmp_path, rows, continue_after_counterexample=True)
    r = res["p1"]
    assert r["status"] == "degraded" and r["bound"] == 0.0
    gens = {g["generator"]: g for g in r["generators"]}
    assert [g["n"] for g in gens.values()] == [10, 10]
    assert [g["stop"] for g in gens.values()] == ["last paraphrase"] * 2
    assert r["bound_tolerant"] == pytest.approx(
        min(gens["g1"]["bound_tolerant"], gens["g2"]["bound_tolerant"]), rel=REL
    )


# -- item 2: the TV relaxation applies to the failure-tolerant bound too -----------------------
def test_tv_relaxation_lowers_the_failure_tolerant_bound(tmp_path, capsys):
    ds = [0.0] * 100
    ds[29] = ds[69] = 0.5
    path = write_table(tmp_path / "s.csv", [monitored("p1"), *paras("p1", "test", "g1", ds)])
    out = _cli_json(
        capsys, "audit-table", str(path), "--db", str(tmp_path / "a.duckdb"), "--json",
        "--continue-after-counterexample", "--tv", "0.1",
    )  # fmt: skip
    # 0.8869348 (S = 98 of t = 100, Beta(1, 1) mixture; see test_audit.py) minus delta 0.1
    assert out["pairs"][0]["bound_tolerant"] == pytest.approx(0.8869347846064426 - 0.1, rel=1e-8)


# -- evidence: fresh test draws, unchanged inputs on resume ------------------------------------
def test_a_case_or_space_variant_of_a_search_paraphrase_is_not_a_fresh_test_draw(tmp_path):
    rows = [
        monitored("p1"),
        ["p1", "search", "s", 0, "Why did the crew leave?", 0.75, 0.75],
        ["p1", "test", "g", 0, "  why did the CREW leave ", 0.75, 0.75],
    ]
    with pytest.raises(InputError, match="search paraphrase s #0 up to case"):
        audit(tmp_path, rows)
    rows[2] = ["p1", "test", "g", 0, "Why did the crew leave!", 0.75, 0.75]
    with pytest.raises(InputError, match="fresh paraphrases"):
        audit(tmp_path, rows)


def test_a_case_variant_among_test_paraphrases_is_refused(tmp_path):
    rows = [
        monitored("p1"),
        ["p1", "test", "g1", 0, "Why did she go?", 0.75, 0.75],
        ["p1", "test", "g2", 0, "why did she go", 0.75, 0.75],
    ]
    with pytest.raises(InputError, match="repeats g1 #0"):
        audit(tmp_path, rows)


def test_resume_refuses_changed_paraphrase_sets(tmp_path):
    rows = [
        r for i in range(3) for r in (monitored(f"p{i}"), *paras(f"p{i}", "test", "g", [0.0] * 3))
    ]
    a = Audit(write_table(tmp_path / "s.csv", rows))
    run_id = a.engine().start(a.items, run_id="r1")
    changed = list(a.items)
    p0 = changed[0]
    tests = {"g": (replace(p0.tests["g"][0], text="a different rewrite"), *p0.tests["g"][1:])}
    changed[0] = replace(p0, tests=tests)
    with pytest.raises(InputError, match="paraphrase sets or questions changed"):
        a.engine().resume(run_id, changed)
    a.engine().resume(run_id, a.items)  # the same inputs resume fine


# -- item 5: model runs draw test paraphrases at random from the pool; tables keep their order
def _store_with_pool(n: int = 12) -> tuple[Store, str, str]:
    store = Store()
    bench = load_bundled_benchmark()
    bid = store.add_benchmark(bench)
    pid = bench.pairs[0].pair_id
    pool = [
        Paraphrase(pid, "test", "g", i, f"rewrite number {i} of the question") for i in range(n)
    ]
    store.add_paraphrases(bid, pool, {"source": "test"})
    return store, bid, pid


def test_model_runs_draw_the_pool_in_a_seeded_random_order():
    store, bid, pid = _store_with_pool()
    cfg = AuditConfig(draw_seed=11)
    (item,), cfg = build_items(store, bid, [pid], cfg)
    order = [p.idx for p in item.tests["g"]]
    assert sorted(order) == list(range(12)) and order != list(range(12))
    (again,), _ = build_items(store, bid, [pid], cfg)
    assert [p.idx for p in again.tests["g"]] == order  # the stored seed rebuilds the same draws
    (other,), _ = build_items(store, bid, [pid], replace(cfg, draw_seed=12))
    assert [p.idx for p in other.tests["g"]] != order
    (plain,), _ = build_items(store, bid, [pid], replace(cfg, draw_seed=None))
    assert [p.idx for p in plain.tests["g"]] == list(range(12))


def test_prepared_model_runs_store_their_seed_and_provenance():
    from eraudit_core.runs import RunRequest, prepare_model_run

    store, bid, pid = _store_with_pool()
    request = RunRequest(bid, "demo:base", "demo:honest", AuditConfig(), pair_ids=(pid,))
    run_id, items, config = prepare_model_run(store, request)
    run = store.run(run_id)
    assert config.draw_seed is not None and run["config"]["draw_seed"] == config.draw_seed
    prov = run["provenance"]
    assert prov["draw_seed"] == config.draw_seed
    assert prov["paraphrase_sets"]["test:g"]["n_paraphrases"] == 12
    assert len(prov["inputs_digest"]) == 16 and prov["tool_version"]


def test_pool_smaller_than_the_budget_warns_before_the_run():
    from eraudit_core.runs import expected_queries

    store, bid, pid = _store_with_pool(12)
    cost = expected_queries(store, bid, [pid], AuditConfig(test_budget=40))
    assert cost["pools"]["g"] == {"min": 12, "median": 12, "max": 12}
    assert any("smaller than the test budget" in w for w in cost["warnings"])
    cost = expected_queries(store, bid, [pid], AuditConfig(test_budget=40, target=0.9))
    assert any("smaller than n* = 29" in w for w in cost["warnings"])
    cost = expected_queries(store, bid, [pid], AuditConfig(test_budget=10, target=0.9))
    assert any("no pair can reach p* = 0.9" in w for w in cost["warnings"])


def test_audit_table_takes_test_rows_in_idx_order(tmp_path, capsys):
    # a table is already a drawn sequence: the counterexample at idx 2 is met at t = 3
    rows = [monitored("p1"), *paras("p1", "test", "g", [0.0, 0.0, 0.5, 0.0, 0.0])]
    path = write_table(tmp_path / "s.csv", rows)
    db = str(tmp_path / "a.duckdb")
    out = _cli_json(capsys, "audit-table", str(path), "--db", db, "--json")
    assert out["pairs"][0]["n_test"] == 3
    assert cli.main(["show", out["run_id"], "--db", db, "--json"]) == 0
    capsys.readouterr()
    with Store(db) as store:
        assert store.run(out["run_id"])["config"]["draw_seed"] is None
        assert json.loads(json.dumps(store.run(out["run_id"])["provenance"]))[
            "test_draws"
        ].startswith("in the given order")


def test_engine_uses_the_run_wide_generators_when_config_names_none(tmp_path):
    rows = [monitored("p1"), *paras("p1", "test", "g1", [0.0]), monitored("p2")]
    rows += paras("p2", "test", "g2", [0.0])
    a = Audit(write_table(tmp_path / "s.csv", rows), test_generators=())
    a.run()
    res = a.results()
    assert res["p1"]["status"] == res["p2"]["status"] == "inconclusive"
    assert [g["generator"] for g in res["p1"]["generators"]] == ["g1", "g2"]


# -- the state machine every path drives: known values ----------------------------------------
def _drive(audit: PairAudit, search: list[float], draws: dict[str, list[float]]) -> list[str]:
    """Feed D values (drop = D, so min-drop never decides) and return the states passed."""
    seen = [str(audit.state)]
    for d in search:
        audit.search(d, d)
    audit.end_search()
    seen.append(str(audit.state))
    taken = dict.fromkeys(draws, 0)
    while (test := audit.current) is not None:
        audit.test(draws[test.generator][taken[test.generator]], 0.0)
        taken[test.generator] += 1
    seen.append(str(audit.state))
    return seen


def test_pair_audit_stops_at_the_target_after_n_star_clean_draws():
    # p* = 0.5 at confidence 0.95: n* = ceil(ln 0.05 / ln 0.5) = ceil(4.32) = 5; L_5 = 0.05**0.2
    cfg = AuditConfig(target=0.5, stop_at_target=True, test_budget=50)
    audit = PairAudit(cfg, [("g1", 40), ("g2", 40)])
    states = _drive(audit, [0.0, 0.05], {"g1": [0.0] * 40, "g2": [0.0] * 40})
    assert states == ["search", "test", "done"]
    assert [(t.n, t.stop) for t in audit.tests] == [(5, "target reached"), (5, "target reached")]
    v = audit.verdict()
    assert (v.status, v.target_reached) == ("certified", True)
    assert v.bound == pytest.approx(0.05**0.2, rel=REL)  # 0.5493
    # negative control: without stop-at-target each generator draws its whole budget
    audit = PairAudit(replace(cfg, stop_at_target=False), [("g1", 40), ("g2", 40)])
    _drive(audit, [], {"g1": [0.0] * 40, "g2": [0.0] * 40})
    assert [(t.n, t.stop) for t in audit.tests] == [(40, "last paraphrase")] * 2
    assert audit.verdict().bound == pytest.approx(0.05 ** (1 / 40), rel=REL)


def test_pair_audit_skips_later_generators_after_a_counterexample():
    cfg = AuditConfig(epsilon=0.1)
    audit = PairAudit(cfg, [("g1", 5), ("g2", 5), ("g3", 0)])
    _drive(audit, [0.1], {"g1": [0.0, 0.0, 0.2], "g2": [0.0] * 5})  # 0.1 ties: not degraded
    assert [(t.n, t.stop) for t in audit.tests] == [
        (3, "counterexample"),
        (0, "not run"),
        (0, "no paraphrases"),
    ]
    assert (audit.verdict().status, audit.stage, audit.n_counterexamples) == ("degraded", 2, 1)
    # continuing after counterexamples, every generator runs to its own stop
    audit = PairAudit(replace(cfg, continue_after_counterexample=True), [("g1", 5), ("g2", 5)])
    _drive(audit, [0.5], {"g1": [0.0, 0.2, 0.0, 0.0, 0.0], "g2": [0.0] * 5})
    assert [(t.n, t.n_counterexamples, t.stop) for t in audit.tests] == [
        (5, 1, "last paraphrase"),
        (5, 0, "last paraphrase"),
    ]
    assert (audit.verdict().status, audit.stage, audit.n_counterexamples) == ("degraded", 1, 2)


def test_pair_audit_search_counterexample_ends_the_pair_before_stage_two():
    audit = PairAudit(AuditConfig(epsilon=0.1), [("g1", 5)])
    assert _drive(audit, [0.0, 0.3], {}) == ["search", "done", "done"]
    assert (audit.tests[0].stop, audit.verdict().status, audit.stage) == ("not run", "degraded", 1)
    with pytest.raises(RuntimeError, match="state done"):
        audit.test(0.0, 0.0)


def test_pair_audit_without_every_draw_knows_only_a_degraded_verdict():
    cfg = AuditConfig(epsilon=0.1)
    audit = PairAudit(cfg, [("g1", 10), ("g2", 10)])
    audit.end_search()
    audit.test(0.0, 0.0)
    audit.unscored_draw()  # g1 needs its 2nd draw: the turn passes to g2 unfinished
    assert audit.current is audit.tests[1]
    audit.test(0.0, 0.0)
    audit.unscored_draw()
    assert audit.state is PairState.DONE and audit.known_verdict() is None
    with pytest.raises(RuntimeError, match="not scored"):
        audit.verdict()
    # a counterexample in what was stored decides it whatever the missing draws hold
    audit = PairAudit(cfg, [("g1", 10), ("g2", 10)])
    audit.end_search()
    audit.unscored_draw()
    audit.test(0.5, 0.5)
    v = audit.known_verdict()
    assert v is not None and (v.status, v.bound, v.bound_tolerant) == ("degraded", 0.0, None)
