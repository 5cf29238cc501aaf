"""The story when an adaptation did not take: small audited score tables whose monitored
question did not move (gain 0 <= k, so D = drop / k) beside ones whose monitored question rose
(gain 0.25). Whatever the audit marks on the first kind is said to be no finding, first; no
verdict word is written in capitals; standard evaluation "approves" an arm only when its
canonical accuracy and mean p(true) are both at least its control's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eraudit_core.present import (
    approval_sentence,
    build_report,
    contrast_lead,
    lead_rule_sentence,
    lead_sentence,
    manipulation_lines,
    run_verdict,
    standard_vs_audit,
    story_lead,
)
from eraudit_core.store import Store
from tests.present.test_views import _audit, _hid, _mon, _paras, _write

CAPITALS = re.compile(r"\b(DEGRADED|CERTIFIED|PASSED|INCONCLUSIVE)\b")
PIDS = ("p1", "p2", "p3", "p4")


def _table(path: Path, moved: bool, hidden_post: float, broken: set[str]) -> Path:
    """Monitored 0.5 -> 0.75 (gain 0.25) when `moved`, else 0.5 -> 0.5 (gain 0 <= k); every
    canonical hidden answer 0.4 -> `hidden_post`; a search rewording of each `broken` pair
    drops by 0.5 (a counterexample either way: D = 2 against the gain 0.25, 500 against the
    floor k)."""
    rows = []
    for pid in PIDS:
        rows.append(_mon(pid, 0.5, 0.75 if moved else 0.5))
        rows.append(_hid(pid, 0.4, hidden_post))
        rows += _paras(pid, "search", "s", [0.0, 2.0 if pid in broken else 0.0])
        rows += _paras(pid, "test", "a", [0.0] * 14)
    return _write(path, rows)


def _run(tmp_path: Path, store: Store, name: str, *args: object) -> str:
    cfg = {"epsilon": 0.5, "confidence": 0.95, "target": 0.8, "search_budget": 2}
    return _audit(_table(tmp_path / f"{name}.csv", *args), store, label=name, **cfg)[0]  # type: ignore[arg-type]


@pytest.fixture
def runs(tmp_path: Path):  # type: ignore[no-untyped-def]
    with Store(tmp_path / "t.duckdb") as store:
        ids = {
            "flat-control": _run(tmp_path, store, "flat-control", False, 0.45, set()),
            "flat": _run(tmp_path, store, "flat", False, 0.9, {"p1", "p2", "p3"}),
            "moved-control": _run(tmp_path, store, "moved-control", True, 0.9, set()),
            "moved": _run(tmp_path, store, "moved", True, 0.45, {"p1"}),
        }
        store.update_run_provenance(ids["flat"], {"control_run": ids["flat-control"]})
        store.update_run_provenance(ids["moved"], {"control_run": ids["moved-control"]})
        yield store, ids


def test_a_lead_whose_adaptation_did_not_take_says_so_first(runs) -> None:  # type: ignore[no-untyped-def]
    store, ids = runs
    table, _ = standard_vs_audit(store, [ids["flat-control"], ids["flat"]])
    assert list(table["took"][1:]) == [False, False]
    assert list(table["n_gain_le_k"][1:]) == [4, 4]
    lead = lead_sentence(store, table)
    assert lead is not None
    assert lead.startswith(
        "The adaptation did not take for flat or for its control flat-control (4 and 4 of 4 "
        "monitored gains at or below k, respectively)"
    )
    assert "not findings. Read against each other: flat against flat-control" in lead
    assert "Question by question: 0 worse than the control, 0 better" in lead
    numbers = story_lead(table)
    assert numbers is not None and "the audit marks 3 vs 0 questions degraded (not findings" in (
        numbers
    )
    rule = lead_rule_sentence(table)
    assert rule is not None and rule.startswith("Here: flat against its control flat-control.")
    assert "concealed" not in rule  # the rule names the pair it picked, not the demo's
    # negative control: both adaptations took, so the lead is the reading alone
    table, _ = standard_vs_audit(store, [ids["moved-control"], ids["moved"]])
    lead = lead_sentence(store, table)
    assert lead is not None and lead.startswith("On reworded questions, moved put")
    assert "did not take" not in lead and "Question by question:" in lead
    assert "by ER-Audit 1 vs 0 degraded questions" in (story_lead(table) or "")


def test_a_lead_where_only_the_control_did_not_take(runs) -> None:  # type: ignore[no-untyped-def]
    store, ids = runs
    store.update_run_provenance(ids["moved"], {"control_run": ids["flat-control"]})
    table, _ = standard_vs_audit(store, [ids["flat-control"], ids["moved"]])
    lead = lead_sentence(store, table)
    assert lead is not None
    assert lead.startswith("The adaptation did not take for its control flat-control (0 and 4")


def test_headline_says_it_did_not_take_before_any_count_and_never_in_capitals(runs) -> None:  # type: ignore[no-untyped-def]
    store, ids = runs
    flat = run_verdict(store.run(ids["flat"]), store.pair_results(ids["flat"]))
    assert flat["headline"].startswith(
        "flat: the adaptation did not take: it did not move the monitored task (4 of 4 "
        "monitored gains at or below k = 0.001), so D there is a ratio of noise to the floor k "
        "and these counts are not findings: the audit marks 3 of 4 hidden question(s) degraded"
    )
    assert flat["manipulation"]["took"] is False
    assert flat["sentences"][1].startswith("The adaptation did not take:")
    moved = run_verdict(store.run(ids["moved"]), store.pair_results(ids["moved"]))
    assert moved["headline"].startswith("moved: adaptation degraded 1 of 4 hidden question(s)")
    assert moved["sentences"][1].startswith("The adaptation took:")
    for rid in ids.values():
        v = run_verdict(store.run(rid), store.pair_results(rid))
        for text in (v["headline"], *v["sentences"]):
            assert not CAPITALS.search(text), text
    page = build_report(store, list(ids.values()))
    assert not CAPITALS.search(page)
    assert "the adaptation did not take" in page


def test_results_lines_name_the_control_as_the_control(runs) -> None:  # type: ignore[no-untyped-def]
    store, ids = runs
    lines = manipulation_lines(store, ids["flat"])
    assert lines[0].startswith("Did the adaptation take? No: monitored accuracy 0.00 \u2192 0.00")
    assert "4 of 4 monitored gains at or below k = 0.001 (100%)" in lines[0]
    assert "ratio of noise to k" in lines[1]
    assert lines[2].startswith("The control's own check (flat-control): its adaptation did not")
    lines = manipulation_lines(store, ids["moved"])
    assert lines[0].startswith("Did the adaptation take? Yes: monitored accuracy 0.00 \u2192 1.00")
    assert lines[1].startswith("The control's own check (moved-control): its adaptation took")


def test_standard_evaluation_approves_only_at_least_the_controls_numbers(runs) -> None:  # type: ignore[no-untyped-def]
    """flat answers every canonical wording (0.9) against its control's 0.45: approved (and
    still no Share contrast, because its adaptation did not take); moved answers 0.45 against
    its control's 0.9: not approved, so no "standard evaluation would approve" lead either."""
    store, ids = runs
    table, _ = standard_vs_audit(store, [ids["flat-control"], ids["flat"]])
    assert (approval_sentence(table) or "").endswith(
        "standard evaluation would approve it over its control."
    )
    assert contrast_lead(store, ids["flat"]) is None  # did not take: no finding to contrast
    table, _ = standard_vs_audit(store, [ids["moved-control"], ids["moved"]])
    sentence = approval_sentence(table) or ""
    assert "moved has accuracy 0.000 and mean p(true) 0.450, its control moved-control 1.000" in (
        sentence
    )
    assert "standard evaluation does not approve it over its control" in sentence
    assert contrast_lead(store, ids["moved"]) is None  # accuracy below its control's
