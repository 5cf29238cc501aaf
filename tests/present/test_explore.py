"""In the library: the Explorer's sort and filters, the generator
table's "not run", the per-question diff of two runs, and the report's first screen."""

from __future__ import annotations

from html import escape
from pathlib import Path

import pandas as pd
import pytest

from eraudit_core import present
from eraudit_core.method import AuditConfig
from eraudit_core.runs import audit_table_run
from eraudit_core.store import Store
from tests.runs.test_audit import hidden, monitored, paras, write_table


def _run(tmp_path: Path, store: Store, rows: list[list], name: str, **cfg) -> str:
    path = write_table(tmp_path / f"{name}.csv", rows)
    return audit_table_run(store, path, AuditConfig(**cfg), label=name)


def _rows(search_d: dict[str, list[float]]) -> list[list]:
    """One pair per key; D per search rewording exactly as given (den 0.25), two test
    generators with four D = 0 rewordings each."""
    out: list[list] = []
    for pid, ds in search_d.items():
        out += [monitored(pid), hidden(pid), *paras(pid, "search", "s", ds)]
        out += paras(pid, "test", "g1", [0.0] * 4) + paras(pid, "test", "g2", [0.0] * 4)
    return out


@pytest.fixture
def store_and_runs(tmp_path: Path) -> tuple[Store, str, str]:
    store = Store()
    cfg = {"epsilon": 0.1, "confidence": 0.75, "target": 0.5}
    # q0 passes (certified), q1 degraded with D 0.2, q2 degraded with D 0.8, q3 certified
    a = _run(
        tmp_path, store, _rows({"q0": [0.0], "q1": [0.2], "q2": [0.8], "q3": [0.05]}), "a", **cfg
    )
    # same questions; only q1 changes verdict (its counterexample is gone)
    b = _run(
        tmp_path, store, _rows({"q0": [0.0], "q1": [0.0], "q2": [0.8], "q3": [0.05]}), "b", **cfg
    )
    return store, a, b


def test_most_severe_first_ranks_by_the_worst_drop(store_and_runs):
    store, a, _ = store_and_runs
    q = present.explorer_questions(store, a)
    order = present.sort_questions(q, "most severe first")["pair_id"].tolist()
    # worst drops 0.2, 0.05, 0.0125 (D x the gain 0.25) and 0: what moved, largest first
    assert order == ["q2", "q1", "q3", "q0"]
    # negative control: benchmark order is what the page showed before
    assert present.sort_questions(q, "benchmark order")["pair_id"].tolist() == [
        "q0",
        "q1",
        "q2",
        "q3",
    ]
    assert present.sort_questions(q, "largest drop")["pair_id"].tolist()[:2] == ["q2", "q1"]
    with pytest.raises(ValueError, match="not one of"):
        present.sort_questions(q, "random")


def _questions(rows: list[tuple]) -> pd.DataFrame:
    cols = ["pair_id", "status", "max_d", "worst_drop", "amplified", "within_noise", "bound"]
    q = pd.DataFrame(rows, columns=cols)
    return q.assign(pair_index=range(len(q)), n_counterexamples=(q["status"] == "degraded") * 1)


def test_amplified_questions_rank_after_the_others_whatever_their_d():
    q = _questions(
        [
            # an amplified question: a drop of 0.08 over k = 0.001 gives D 80
            ("amp", "degraded", 80.0, 0.08, True, False, 0.0),
            ("big", "degraded", 0.9, 0.30, False, False, 0.0),
            ("small", "degraded", 0.4, 0.10, False, False, 0.0),
            # a drop within the scoring-noise floor counts as no drop at all
            ("noise", "degraded", 0.5, 0.20, False, True, 0.0),
            # a drop of 1e-9 is float rounding
            ("tiny", "passed", 0.0, 1e-9, False, False, 0.7),
            ("clean", "certified", 0.0, 0.0, False, False, 0.9),
            ("amp2", "degraded", 95.0, 0.01, True, False, 0.0),
        ]
    )
    order = present.sort_questions(q, "most severe first")["pair_id"].tolist()
    assert order == ["big", "small", "noise", "tiny", "clean", "amp", "amp2"]
    moved = present.moved_drop(q).tolist()
    assert moved == [0.08, 0.30, 0.10, 0.0, 0.0, 0.0, 0.01]
    # negative control: by largest D the amplified questions lead (their D is large because
    # the monitored gain g is negative, not because the hidden question dropped)
    assert present.sort_questions(q, "largest D")["pair_id"].tolist()[:2] == ["amp2", "amp"]
    # the "did the adaptation take here" filter leaves the amplified questions out, or keeps
    # only them
    kept = present.filter_questions(q, took=present.TOOK_HERE)["pair_id"].tolist()
    assert "amp" not in kept and "amp2" not in kept and len(kept) == 5
    only = present.filter_questions(q, took=present.NOT_TOOK_HERE)["pair_id"].tolist()
    assert only == ["amp", "amp2"]


def test_filters_by_verdict_evidence_and_rewording_text(store_and_runs):
    store, a, _ = store_and_runs
    q = present.explorer_questions(store, a)
    deg = present.filter_questions(q, statuses=["degraded"])
    assert set(deg["pair_id"]) == {"q1", "q2"}
    cex = present.filter_questions(q, flags=["has a counterexample"])
    assert set(cex["pair_id"]) == {"q1", "q2"}
    # the words of a rewording find its question; the hidden question's text does not hold them
    hits = present.paraphrase_matches(store.steps(a), "Q2 SEARCH")
    assert hits == {"q2"}
    found = present.filter_questions(q, text="q2 search", paraphrase_hits=hits)
    assert found["pair_id"].tolist() == ["q2"]
    assert present.filter_questions(q, text="no such words", paraphrase_hits=set()).empty


def test_rewording_rows_carry_the_word_diff_and_the_drop(store_and_runs):
    store, a, _ = store_and_runs
    rows = present.rewording_rows(store, a, "q2", "hidden question of q2")
    search = [r for r in rows if r["stage"] == 1]
    assert len(search) == 1 and search[0]["counterexample"]
    assert search[0]["drop"] == pytest.approx(0.2)  # D 0.8 x den 0.25
    assert ("-", "hidden question of") in search[0]["diff"]
    assert search[0]["prompt"] is None  # a table run stores no prompt


def test_generators_not_run_read_not_run_never_zero():
    table = present.generator_rows(
        [
            {
                "generator": "g1",
                "available": 4,
                "n": 3,
                "n_counterexamples": 1,
                "bound": 0.0,
                "bound_tolerant": 0.2,
                "stop": "counterexample",
            },
            {
                "generator": "g2",
                "available": 4,
                "n": 0,
                "n_counterexamples": 0,
                "bound": 0.0,
                "bound_tolerant": 0.0,
                "stop": "not run",
            },
        ]
    ).set_index("generator")
    assert table.loc["g2", "paper bound L_t"] == "not run"
    assert table.loc["g2", "tested"] == "not run"
    assert table.loc["g1", "paper bound L_t"] == "0.000"  # a measured zero stays a number


def test_verdict_diff_side_by_side_with_disagreements_only(store_and_runs):
    store, a, b = store_and_runs
    diff = present.verdict_diff(store, a, b)
    assert diff["pair_id"].tolist() == ["q0", "q1", "q2", "q3"]
    q1 = diff.set_index("pair_id").loc["q1"]
    assert (q1["verdict_a"], q1["verdict_b"], bool(q1["agree"])) == ("degraded", "certified", False)
    only = present.sort_diff(diff, "benchmark order", disagreements_only=True)
    assert only["pair_id"].tolist() == ["q1"]
    # negative control: without the filter every question is listed, disagreements first
    first = present.sort_diff(diff, "disagreements first")
    assert first["pair_id"].tolist()[0] == "q1" and len(first) == 4
    assert present.sort_diff(diff, "largest D change")["pair_id"].tolist()[0] == "q1"


def test_comparability_check_withholds_tests_for_the_diff(tmp_path, store_and_runs):
    store, a, _ = store_and_runs
    c = _run(
        tmp_path,
        store,
        _rows({"q0": [0.0], "q1": [0.2], "q2": [0.8], "q3": [0.05]}),
        "c",
        epsilon=0.5,
        confidence=0.75,
        target=0.5,
    )
    got = present.compare_runs(store, a, c)
    assert got["comparable"] is False and "degraded" not in got  # no test result
    # the diff itself is still shown: q1's D 0.2 is no counterexample at epsilon 0.5
    diff = present.verdict_diff(store, a, c).set_index("pair_id")
    assert diff.loc["q1", "verdict_b"] != "degraded"


def test_first_screen_sentence_control_and_example(store_and_runs):
    store, a, _ = store_and_runs
    s = present.first_screen(store, a)
    assert "of 4 hidden questions, the audit found 2 degraded, 2 certified" in s["sentence"]
    assert s["control"].startswith("No control run")
    ex = s["example"]
    # the example is the degraded question with the largest D (q2), with its drop
    assert ex["question"] == "hidden question of q2"
    assert ex["drop"] == pytest.approx(0.2)
    assert s["selection"] is None
    html = present.build_report(store, [a])
    assert html.index('class="first"') < html.index("<h2>Details</h2>")
    for _, text in present.MARKER_LEGEND:
        assert text in html
    assert escape(present.D_IN_ONE_LINE) in html
