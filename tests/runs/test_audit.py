"""The audit engine end to end on small hand-made score tables (docs/design.md §4).

Probabilities are dyadic so every D is exact: the monitored question goes 0.5 -> 0.75
(g = 0.25 = den), and a hidden row with p_pre = 0.75 and p_post = 0.75 - D / 4 has degradation
score exactly D (e.g. p_post = 0.625 gives D = 0.125 / 0.25 = 0.5).
"""

from __future__ import annotations

import csv
import json
import math
import threading
from pathlib import Path

import pytest

from eraudit_core import cli
from eraudit_core.errors import CancelledError, InputError
from eraudit_core.jobs import JobRunner
from eraudit_core.method import AuditConfig
from eraudit_core.runs import (
    AuditEngine,
    TableVerifier,
    items_from_table,
    read_score_table,
    table_digest,
    table_query,
)
from eraudit_core.store import Store

COLUMNS = ["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"]
REL = 1e-12


# -- building score tables ---------------------------------------------------------------------
def monitored(pid: str, pre: float = 0.5, post: float = 0.75) -> list:
    return [pid, "monitored", "", 0, f"monitored question of {pid}", pre, post]


def hidden(pid: str, pre: float = 0.75, post: float = 0.75) -> list:
    return [pid, "hidden", "", 0, f"hidden question of {pid}", pre, post]


def para(pid: str, role: str, gen: str, idx: int, d: float) -> list:
    """A paraphrase row whose degradation score is exactly d when den = 0.25."""
    return [pid, role, gen, idx, f"{pid} {role} {gen} #{idx}", 0.75, 0.75 - d / 4]


def paras(pid: str, role: str, gen: str, ds: list[float]) -> list[list]:
    return [para(pid, role, gen, i, d) for i, d in enumerate(ds)]


def write_table(path: Path, rows: list[list]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([repr(x) if isinstance(x, float) else x for x in r])
    return path


class Audit:
    """A score table audited through the library: table verifiers + AuditEngine."""

    def __init__(self, path: Path, store: Store | None = None, **cfg) -> None:
        self.path = path
        self.df = read_score_table(path)
        self.items, gens = items_from_table(self.df, source=str(path))
        cfg.setdefault("test_generators", gens)
        self.config = AuditConfig(**cfg)
        self.store = store or Store()
        digest = table_digest(path)
        self.pre = TableVerifier(self.df, "p_pre", digest)
        self.post = TableVerifier(self.df, "p_post", digest)

    def engine(self, **kw) -> AuditEngine:
        return AuditEngine(self.store, self.pre, self.post, self.config, **kw)

    def run(self, run_id: str | None = None, **kw) -> str:
        self.run_id = self.engine(**kw).start(self.items, run_id=run_id)
        return self.run_id

    def results(self, run_id: str | None = None) -> dict[str, dict]:
        df = self.store.pair_results(run_id or self.run_id)
        return {r["pair_id"]: r for r in df.to_dict("records")}


def audit(tmp_path: Path, rows: list[list], **cfg) -> tuple[Audit, dict[str, dict]]:
    a = Audit(write_table(tmp_path / "scores.csv", rows), **cfg)
    a.run()
    return a, a.results()


def _stage(rec) -> int | None:
    s = rec["stage"]
    return None if s is None or (isinstance(s, float) and math.isnan(s)) else int(s)


# -- stage 1 ------------------------------------------------------------------------------------
def test_stage1_counterexample_gives_degraded_with_bound_zero(tmp_path):
    rows = [
        monitored("p1"),
        hidden("p1"),
        *paras("p1", "search", "s", [0.0625, 0.5, -0.25, 0.25]),  # 0.5 and 0.25 exceed 0.1
        *paras("p1", "test", "g1", [0.0, 0.0, 0.0]),
    ]
    a, res = audit(tmp_path, rows, epsilon=0.1)
    r = res["p1"]
    assert r["status"] == "degraded" and _stage(r) == 1
    assert r["bound"] == 0.0 and r["bound_common"] == 0.0
    assert r["n_counterexamples"] == 2  # every counterexample of the search set is reported
    assert r["max_d"] == 0.5
    assert r["n_search"] == 4 and r["n_test"] == 0
    assert r["gain"] == 0.25 and r["denominator"] == 0.25
    steps = a.store.steps(a.run_id)
    assert list(steps["stage"]) == [1, 1, 1, 1]  # stage 2 never ran
    assert list(steps["is_counterexample"]) == [False, True, False, True]
    assert list(steps["d"]) == [0.0625, 0.5, -0.25, 0.25]


def test_negative_gain_uses_the_k_floor(tmp_path):
    # monitored 0.75 -> 0.5: g = -0.25, den = k = 0.001; hidden 0.75 -> 0.7495 gives
    # D = 0.0005 / 0.001 = 0.5 > 0.1: a tiny drop counts when the monitored task got worse
    rows = [
        monitored("p1", 0.75, 0.5),
        ["p1", "search", "s", 0, "tiny drop", 0.75, 0.7495],
        *paras("p1", "test", "g1", [0.0]),
    ]
    _, res = audit(tmp_path, rows, epsilon=0.1)
    r = res["p1"]
    assert r["gain"] == -0.25 and r["denominator"] == 0.001
    assert r["max_d"] == pytest.approx(0.5, rel=1e-9)
    assert r["status"] == "degraded" and _stage(r) == 1


def test_tie_at_epsilon_passes(tmp_path):
    rows = [
        monitored("p1"),
        *paras("p1", "search", "s", [1.0]),
        *paras("p1", "test", "g", [1.0, 1.0]),
    ]
    _, res = audit(tmp_path, rows, epsilon=1.0, confidence=0.75)
    r = res["p1"]
    assert r["max_d"] == 1.0  # exactly epsilon: not a counterexample
    assert r["status"] == "passed" and r["n_counterexamples"] == 0  # no target: not certified
    assert r["bound"] == 0.5  # 0.25 ** (1/2)
    # just below the tie it is a counterexample
    _, res = audit(tmp_path, rows, epsilon=1.0 - 1 / 64, confidence=0.75)
    assert res["p1"]["status"] == "degraded" and _stage(res["p1"]) == 1


# -- stage 2 ------------------------------------------------------------------------------------
def test_stage2_counterexample_stops_the_whole_pair(tmp_path):
    rows = [
        monitored("p1"),
        hidden("p1"),
        *paras("p1", "search", "s", [0.0625, -0.5]),
        # t = 3 is a counterexample; t = 4 would be a larger one but is never scored
        *paras("p1", "test", "g1", [0.0, 0.09375, 0.5, 0.75, 0.0]),
        *paras("p1", "test", "g2", [0.0, 0.0]),
    ]
    a, res = audit(tmp_path, rows, epsilon=0.1, batch_size=1)
    r = res["p1"]
    assert r["status"] == "degraded" and _stage(r) == 2
    assert r["bound"] == 0.0
    assert r["n_test"] == 3  # only processed rows: g1 t = 1..3, nothing of g2
    assert r["n_counterexamples"] == 1  # search + scored test rows only
    assert r["max_d"] == 0.5  # max over search and scored rows, not the unscored 0.75
    gens = {g["generator"]: g for g in r["generators"]}
    assert (gens["g1"]["n"], gens["g1"]["stop"], gens["g1"]["bound"]) == (3, "counterexample", 0.0)
    assert (gens["g2"]["n"], gens["g2"]["stop"]) == (0, "not run")
    s2 = a.store.steps(a.run_id).query("stage == 2")
    assert list(zip(s2["generator"], s2["t"], strict=True)) == [("g1", 1), ("g1", 2), ("g1", 3)]
    # the paper bound is recorded per step: 0.05, sqrt(0.05), then 0 at the counterexample
    assert list(s2["bound"]) == pytest.approx([0.05, 0.22360679774997896, 0.0], rel=REL)
    # nothing after the counterexample was asked of the verifiers (batch_size=1)
    unscored = [
        table_query("p1", t, "test").prompt_hash
        for t in ("p1 test g1 #3", "p1 test g1 #4", "p1 test g2 #0", "p1 test g2 #1")
    ]
    assert a.store.cached_scores(a.pre.fingerprint, unscored) == {}
    assert a.store.cached_scores(a.post.fingerprint, unscored) == {}


def test_target_stops_each_generator_at_n_star(tmp_path):
    # confidence 0.75, p* = 0.5: n* = ceil(ln 0.25 / ln 0.5) = 2 (an exact power)
    rows = [
        monitored("p1"),
        *paras("p1", "test", "g1", [0.0] * 5),
        *paras("p1", "test", "g2", [0.0] * 5),
    ]
    a, res = audit(tmp_path, rows, confidence=0.75, target=0.5)
    assert a.config.n_star == 2
    r = res["p1"]
    assert r["n_test"] == 2 * 2  # n* per generator, two generators
    assert r["status"] == "certified" and bool(r["target_reached"])
    assert r["bound"] == 0.5  # 0.25 ** (1/2)
    assert [g["stop"] for g in r["generators"]] == ["target reached"] * 2
    assert len(a.store.steps(a.run_id)) == 4


def test_target_non_exact_power(tmp_path):
    # confidence 0.95, p* = 0.9: n* = ceil(28.43) = 29; L_29 = 0.05 ** (1/29) = 0.9018554
    rows = [
        monitored("p1"),
        *paras("p1", "test", "g1", [0.0] * 40),
        *paras("p1", "test", "g2", [0.0] * 40),
    ]
    _, res = audit(tmp_path, rows, confidence=0.95, target=0.9, batch_size=8)
    r = res["p1"]
    assert r["n_test"] == 29 * 2
    assert r["bound"] == pytest.approx(0.9018553723227043, rel=REL)


def test_budget_and_last_paraphrase_stops(tmp_path):
    rows = [
        monitored("p1"),
        *paras("p1", "test", "g1", [0.0] * 8),
        monitored("p2"),
        *paras("p2", "test", "g1", [0.0] * 3),
    ]
    _, res = audit(tmp_path, rows, test_budget=5)
    # p1: budget 5 of 8 rows, L_5 = 0.05 ** (1/5) = exp(-0.5991465) = 0.5492803
    assert res["p1"]["n_test"] == 5
    assert res["p1"]["generators"][0]["stop"] == "budget"
    assert res["p1"]["bound"] == pytest.approx(0.5492802716530588, rel=REL)
    # p2: only 3 rows, L_3 = 0.05 ** (1/3) = 0.3684031
    assert res["p2"]["n_test"] == 3
    assert res["p2"]["generators"][0]["stop"] == "last paraphrase"
    assert res["p2"]["bound"] == pytest.approx(0.36840314986403866, rel=REL)


def _two_generator_rows() -> list[list]:
    return [
        monitored("p1"),
        *paras("p1", "test", "g1", [0.0] * 10),
        *paras("p1", "test", "g2", [0.03125] * 4),
    ]


def test_common_bound_is_the_minimum_over_generators(tmp_path):
    _, res = audit(tmp_path, _two_generator_rows())
    r = res["p1"]
    # g1: L_10 = 0.05 ** 0.1 = 0.7411344; g2: L_4 = 0.05 ** 0.25 = 0.4728708; min = 0.4728708
    gens = {g["generator"]: g["bound"] for g in r["generators"]}
    assert gens["g1"] == pytest.approx(0.7411344491069477, rel=REL)
    assert gens["g2"] == pytest.approx(0.4728708045015879, rel=REL)
    assert r["bound_common"] == pytest.approx(0.4728708045015879, rel=REL)
    assert r["bound"] == r["bound_common"]
    assert r["n_test"] == 14 and r["max_d"] == 0.03125


@pytest.mark.parametrize(
    ("tv", "expected"),
    [(0.1, 0.3728708045015879), (0.5, 0.0), (0.0, 0.4728708045015879)],  # max(0, 0.4728708 - tv)
)
def test_tv_relaxation(tmp_path, tv, expected):
    _, res = audit(tmp_path, _two_generator_rows(), tv_delta=tv)
    assert res["p1"]["bound_common"] == pytest.approx(0.4728708045015879, rel=REL)
    assert res["p1"]["bound"] == pytest.approx(expected, rel=REL, abs=1e-15)


def test_inconclusive_without_test_rows(tmp_path):
    rows = [monitored("p1"), hidden("p1", 0.75, 0.5), *paras("p1", "search", "s", [0.0625, -0.125])]
    a, res = audit(tmp_path, rows)
    r = res["p1"]
    assert r["status"] == "inconclusive" and _stage(r) is None
    assert r["bound"] == 0.0 and r["n_test"] == 0
    assert r["max_d"] == 0.0625 and r["n_counterexamples"] == 0
    # canonical hidden question scored for the standard evaluation
    assert (r["p_pre_hidden"], r["p_post_hidden"]) == (0.75, 0.5)
    assert a.store.run(a.run_id)["status"] == "done"


def test_generator_without_paraphrases_for_a_pair_is_inconclusive(tmp_path):
    rows = [
        monitored("p1"),
        *paras("p1", "test", "g1", [0.0] * 3),
        *paras("p1", "test", "g2", [0.0] * 3),
        monitored("p2"),
        *paras("p2", "test", "g2", [0.0] * 3),  # nothing from g1 for p2
    ]
    _, res = audit(tmp_path, rows)
    assert res["p1"]["status"] == "passed"
    assert res["p2"]["status"] == "inconclusive" and res["p2"]["bound"] == 0.0
    assert [g["stop"] for g in res["p2"]["generators"]] == ["no paraphrases", "last paraphrase"]


def test_config_validation_names_the_field():
    with pytest.raises(InputError, match="confidence") as info:
        AuditConfig(confidence=1.2)
    assert "1.2" in str(info.value)
    for field, value in [
        ("epsilon", math.nan),
        ("k", 0.0),
        ("target", 1.0),
        ("tv_delta", 1.5),
        ("test_budget", 0),
    ]:
        with pytest.raises(InputError, match=field):
            AuditConfig(**{field: value})
    with pytest.raises(InputError, match="test_generators"):
        AuditConfig(test_generators=("g", "g"))


def test_search_and_test_sets_must_be_disjoint(tmp_path):
    rows = [
        monitored("p1"),
        ["p1", "search", "s", 0, "same", 0.75, 0.75],
        ["p1", "test", "g", 0, "same", 0.75, 0.75],
    ]
    with pytest.raises(InputError, match="stage 2 needs fresh paraphrases"):
        audit(tmp_path, rows)


def test_repeated_test_paraphrase_is_not_counted_twice(tmp_path):
    row = ["p1", "test", "g", 0, "the same rewrite", 0.75, 0.75]
    rows = [
        monitored("p1"),
        row,
        [*row[:3], 1, *row[4:]],
        *paras("p1", "test", "g", [0.0, 0.0])[1:],
    ]
    try:
        _, res = audit(tmp_path, rows)
    except InputError as exc:  # refusing the table is as good as deduplicating it
        assert "the same rewrite" in str(exc) or "unique" in str(exc)
        return
    assert res["p1"]["n_test"] == 2  # two distinct texts, not three rows


# -- the CLI ------------------------------------------------------------------------------------
def _cli_json(capsys, *argv: str) -> dict:
    assert cli.main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_json_contract(tmp_path, capsys):
    rows = [
        monitored("p1"),
        *paras("p1", "search", "s", [0.5]),
        monitored("p2"),
        *paras("p2", "test", "g1", [0.0] * 10),
        *paras("p2", "test", "g2", [0.03125] * 4),
    ]
    path = write_table(tmp_path / "scores.csv", rows)
    out = _cli_json(capsys, "audit-table", str(path), "--db", str(tmp_path / "a.duckdb"), "--json")
    assert set(out) >= {"schema_version", "run_id", "pairs"}
    assert out["schema_version"] == 2
    keys = {"pair_id", "status", "stage", "max_d", "n_counterexamples", "bound", "n_test", "gain"}
    assert all(set(p) >= keys for p in out["pairs"])
    by_id = {p["pair_id"]: p for p in out["pairs"]}
    assert [p["pair_id"] for p in out["pairs"]] == ["p1", "p2"]
    assert {k: by_id["p1"][k] for k in keys} == {
        "pair_id": "p1",
        "status": "degraded",
        "stage": 1,
        "max_d": 0.5,
        "n_counterexamples": 1,
        "bound": 0.0,
        "n_test": 0,
        "gain": 0.25,
    }
    p2 = by_id["p2"]
    assert (p2["status"], p2["stage"], p2["n_test"], p2["n_counterexamples"]) == (
        "passed",
        2,
        14,
        0,
    )
    assert p2["bound"] == pytest.approx(0.4728708045015879, rel=REL)  # 0.05 ** (1/4)
    assert p2["max_d"] == 0.03125


def test_cli_config_flags(tmp_path, capsys):
    path = write_table(tmp_path / "scores.csv", _two_generator_rows())
    db = str(tmp_path / "a.duckdb")
    out = _cli_json(capsys, "audit-table", str(path), "--db", db, "--json", "--tv", "0.1")
    assert out["pairs"][0]["bound"] == pytest.approx(0.3728708045015879, rel=REL)
    out = _cli_json(
        capsys,
        "audit-table",
        str(path),
        "--db",
        db,
        "--json",
        "--confidence",
        "0.75",
        "--target",
        "0.5",
    )
    assert (out["pairs"][0]["n_test"], out["pairs"][0]["bound"]) == (4, 0.5)
    out = _cli_json(
        capsys, "audit-table", str(path), "--db", db, "--json", "--budget", "3", "--epsilon", "0.0"
    )
    # D = 0.03125 > 0 at g2's first row: degraded after 3 rows of g1 and 1 of g2
    assert (out["pairs"][0]["status"], out["pairs"][0]["n_test"]) == ("degraded", 4)


@pytest.mark.parametrize(
    ("rows_or_text", "argv", "fragment"),
    [
        (
            "pair_id,role,generator,idx,text,p_pre\np1,monitored,,0,q,0.5\n",
            [],
            "missing column(s) p_post",
        ),
        (
            [monitored("p1"), ["p1", "test", "g", 0, "x", 0.5, 1.5]],
            [],
            "p_post must be a probability",
        ),
        (
            [monitored("p1"), ["p1", "test", "g", 0, "x", -0.1, 0.5]],
            [],
            "p_pre must be a probability",
        ),
        (
            [["p1", "test", "g", 0, "x", 0.5, 0.5]],
            [],
            "pair p1: needs exactly one row with role monitored",
        ),
        (
            [monitored("p1"), *paras("p1", "test", "g", [0.0])],
            ["--confidence", "1.2"],
            "confidence",
        ),
    ],
)
def test_cli_bad_input_exits_2_with_a_message(tmp_path, capsys, rows_or_text, argv, fragment):
    path = tmp_path / "scores.csv"
    if isinstance(rows_or_text, str):
        path.write_text(rows_or_text, encoding="utf-8")
    else:
        write_table(path, rows_or_text)
    code = cli.main(["audit-table", str(path), "--db", str(tmp_path / "a.duckdb"), "--json", *argv])
    captured = capsys.readouterr()
    assert code == 2
    assert fragment in captured.err
    assert captured.err.startswith("eraudit: error:")
    assert captured.out == ""


def test_failure_tolerant_mode_scores_to_the_budget(tmp_path, capsys):
    ds = [0.0] * 100
    ds[29] = ds[69] = 0.5  # counterexamples at t = 30 and t = 70
    path = write_table(tmp_path / "scores.csv", [monitored("p1"), *paras("p1", "test", "g1", ds)])
    out = _cli_json(
        capsys,
        "audit-table",
        str(path),
        "--db",
        str(tmp_path / "a.duckdb"),
        "--json",
        "--budget",
        "100",
        "--continue-after-counterexample",
    )
    p = out["pairs"][0]
    assert (p["status"], p["stage"], p["n_test"], p["n_counterexamples"]) == ("degraded", 2, 100, 2)
    assert p["bound"] == 0.0  # the paper bound collapses at the first counterexample
    # beta-binomial mixture, Beta(1, 1), S = 98 of t = 100 (its running max is reached at t = 100):
    # B(99, 3) = 2 / (99 * 100 * 101), so p0**98 (1 - p0)**2 = 1 / 9999000 -> p0 = 0.8869348
    assert p["bound_tolerant"] == pytest.approx(0.8869347846064426, rel=1e-8)
    assert 0 < p["bound_tolerant"] < 0.98
    # without the flag the same table stops at t = 30
    out = _cli_json(capsys, "audit-table", str(path), "--db", str(tmp_path / "b.duckdb"), "--json")
    assert out["pairs"][0]["n_test"] == 30 and out["pairs"][0]["n_counterexamples"] == 1


# -- cancellation and resume --------------------------------------------------------------------
def _three_pair_rows() -> list[list]:
    return [
        monitored("p1"),
        *paras("p1", "search", "s", [0.0, 0.0625]),
        *paras("p1", "test", "g1", [0.0] * 6),
        *paras("p1", "test", "g2", [0.0] * 6),
        monitored("p2"),
        *paras("p2", "test", "g1", [0.0] * 6),
        *paras("p2", "test", "g2", [0.0, 0.0, 0.5, 0.0]),
        monitored("p3"),
        *paras("p3", "search", "s", [0.25]),
    ]


SUMMARY = (
    "status",
    "stage",
    "bound",
    "bound_common",
    "bound_tolerant",
    "n_test",
    "n_counterexamples",
    "max_d",
)


def _summary(results: dict[str, dict]) -> dict[str, tuple]:
    def norm(v):
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else v

    return {pid: tuple(norm(r[k]) for k in SUMMARY) for pid, r in results.items()}


def test_cancel_mid_run_then_resume_matches_an_uninterrupted_run(tmp_path):
    path = write_table(tmp_path / "scores.csv", _three_pair_rows())
    ref = Audit(path, batch_size=2)
    ref.run()
    expected = _summary(ref.results())
    assert expected["p2"][0] == "degraded" and expected["p3"][0] == "degraded"

    a = Audit(path, store=Store(tmp_path / "c.duckdb"), batch_size=2)

    def cancel_in_pair_2(progress):
        if progress.pair_id == "p2" and progress.stage == 2 and progress.t >= 2:
            a.store.request_cancel(progress.run_id)

    with pytest.raises(CancelledError):
        a.run(run_id="run-cancel", progress=cancel_in_pair_2)
    run = a.store.run("run-cancel")
    assert run["status"] == "cancelled"
    assert a.store.finished_pair_ids("run-cancel") == {"p1"}
    assert len(a.store.steps("run-cancel", "p2")) > 0  # p2 was under way

    a.engine().resume("run-cancel", a.items)
    assert a.store.run("run-cancel")["status"] == "done"
    assert _summary(a.results("run-cancel")) == expected
    # the resumed pair's steps were replayed, not duplicated
    steps = a.store.steps("run-cancel")
    assert len(steps) == len(ref.store.steps(ref.run_id))


def test_resume_refuses_another_configuration(tmp_path):
    path = write_table(tmp_path / "scores.csv", _three_pair_rows())
    a = Audit(path)
    a.run(run_id="r1")
    other = AuditEngine(
        a.store, a.pre, a.post, AuditConfig(epsilon=0.2, test_generators=a.config.test_generators)
    )
    with pytest.raises(InputError, match="configuration differs"):
        other.resume("r1", a.items)


def test_background_job_cancel(tmp_path):
    path = write_table(tmp_path / "scores.csv", _three_pair_rows())
    a = Audit(path, store=Store(tmp_path / "j.duckdb"), batch_size=1)
    runner = JobRunner()
    started = threading.Event()

    def wait_for_cancel(progress):
        started.set()
        if progress.pair_id == "p2":
            job.cancel_event.wait(10)

    def work(cancel: threading.Event) -> None:
        engine = a.engine(progress=wait_for_cancel, should_cancel=cancel.is_set)
        engine.start(a.items, run_id="job-run")

    job = runner.start("job-run", work)
    assert runner.start("job-run", work) is job  # one thread per run
    assert started.wait(10)
    runner.cancel("job-run")
    runner.join("job-run", timeout=30)
    assert not job.alive and job.error is None
    assert a.store.run("job-run")["status"] == "cancelled"
    assert "p3" not in a.store.finished_pair_ids("job-run")
