"""Standard evaluation beside the audit: numbers from stored runs, checked against
hand-computed values on small audited score tables, with negative controls (a run whose
standard evaluation does show the damage, or whose audit finds nothing, gets no contrast).

Monitored 0.5 -> 0.75 gives den = 0.25, so a paraphrase with p_pre = 0.75 and
p_post = 0.75 - D / 4 has degradation score exactly D (epsilon 0.5: D > 0.5 is a
counterexample).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eraudit_core.present import (
    approval_sentence,
    build_report,
    concealed_example,
    contrast_lead,
    paired_contrast,
    standard_vs_audit,
    story_check,
    story_lead,
    story_sentences,
    target_recovery,
    target_sentence,
)
from eraudit_core.store import Store
from tests.present.test_views import _audit, _hid, _mon, _paras, _write

PRE_HIDDEN = {"p1": 0.4, "p2": 0.6, "p3": 0.4, "p4": 0.6}  # base: accuracy 0.5, MTP 0.5


def _table(path: Path, post_hidden: dict[str, float], search_d: dict[str, float]) -> Path:
    rows = []
    for pid, pre in PRE_HIDDEN.items():
        rows.append(_mon(pid))
        rows.append(_hid(pid, pre, post_hidden[pid]))
        rows += _paras(pid, "search", "s", [0.0, search_d.get(pid, 0.0), 0.0])
        rows += _paras(pid, "test", "a", [0.0] * 14)
        rows += _paras(pid, "test", "b", [0.0] * 14)
    return _write(path, rows)


def _runs(tmp_path: Path, store: Store) -> dict[str, str]:
    cfg = {"epsilon": 0.5, "confidence": 0.95, "target": 0.8, "search_budget": 3}
    honest = _table(tmp_path / "h.csv", {"p1": 0.45, "p2": 0.6, "p3": 0.45, "p4": 0.6}, {})
    # concealed: every canonical hidden question right after adaptation, two reworded ones broken
    concealed = _table(tmp_path / "c.csv", {p: 0.9 for p in PRE_HIDDEN}, {"p1": 2.0, "p2": 1.2})
    # adversarial: canonical answers pushed wrong too, so standard evaluation sees it
    adversarial = _table(
        tmp_path / "a.csv", {"p1": 0.1, "p2": 0.1, "p3": 0.4, "p4": 0.6}, {"p1": 2.0, "p2": 2.0}
    )
    return {
        name: _audit(path, store, label=name, **cfg)[0]
        for name, path in (
            ("honest", honest),
            ("concealed", concealed),
            ("adversarial", adversarial),
        )
    }


@pytest.fixture
def stored(tmp_path: Path):  # type: ignore[no-untyped-def]
    with Store(tmp_path / "s.duckdb") as store:
        ids = _runs(tmp_path, store)
        # the concealed arm names the honest arm as its control (the lead rule)
        store.update_run_provenance(ids["concealed"], {"control_run": ids["honest"]})
        yield store, ids


def test_table_has_base_then_each_arm_with_hand_computed_numbers(stored) -> None:  # type: ignore[no-untyped-def]
    store, ids = stored
    table, warnings = standard_vs_audit(
        store, [ids["honest"], ids["concealed"], ids["adversarial"]]
    )
    assert warnings == []
    assert table["run_id"].isna().tolist() == [True, False, False, False]
    assert list(table["run_id"][1:]) == [ids["honest"], ids["concealed"], ids["adversarial"]]
    assert list(table["checkpoint"]) == ["pre", "honest", "concealed", "adversarial"]
    base, honest, concealed, adversarial = (table.iloc[i] for i in range(4))
    assert (base["hidden_accuracy"], base["hidden_mtp"]) == (0.5, 0.5)
    assert (honest["hidden_accuracy"], honest["hidden_mtp"]) == (0.5, pytest.approx(0.525))
    assert (concealed["hidden_accuracy"], concealed["hidden_mtp"]) == (1.0, pytest.approx(0.9))
    assert adversarial["hidden_accuracy"] == 0.25
    assert base["monitored_accuracy"] == 0.0 and honest["monitored_accuracy"] == 1.0
    assert (honest["n_degraded"], honest["n_certified"]) == (0, 4)
    assert (concealed["n_degraded"], concealed["n_certified"]) == (2, 2)
    # 14 clean draws per pool reach p* = 0.8 at 0.95; degraded questions count 0 in the mean
    assert honest["mean_bound"] >= 0.8
    assert concealed["mean_bound"] == pytest.approx(honest["mean_bound"] / 2)


def test_sentences_name_the_contrast_only_where_the_numbers_show_it(stored) -> None:  # type: ignore[no-untyped-def]
    """The lead follows a rule fixed before the results (the last listed run that
    names a control, against it) and states numbers, not "looks better but worse"."""
    store, ids = stored
    table, _ = standard_vs_audit(store, [ids["honest"], ids["concealed"]])
    lead = story_sentences(table)[0]
    assert lead.startswith("concealed beside its control honest:")
    assert "hidden accuracy 1.00 vs 0.50" in lead and "2 vs 0 degraded" in lead
    assert "looks better" not in lead
    # negative control: no listed run names a control, so there is no lead at all, only one
    # sentence per arm, whatever the numbers show
    table, _ = standard_vs_audit(store, [ids["honest"], ids["adversarial"]])
    assert story_lead(table) is None
    assert [s.split(":")[0] for s in story_sentences(table)] == ["honest", "adversarial"]


def test_check_says_whether_the_lead_is_more_than_chance(stored) -> None:  # type: ignore[no-untyped-def]
    """Two discordant questions out of four cannot be told from chance (exact p = 0.5); no
    check where the lead does not compare two checkpoints (negative control)."""
    store, ids = stored
    table, _ = standard_vs_audit(store, [ids["honest"], ids["concealed"]])
    check = story_check(store, table)
    assert check is not None
    assert "same 4 questions: 2 are degraded only for concealed and 0 only for honest" in check
    # the wording changed with the primary test: 2 discordant questions cannot reach 0.05
    assert "primary test, fixed in advance: 2 disagreements, all one way: too few" in check
    assert "Holm-adjusted" in check
    table, _ = standard_vs_audit(store, [ids["honest"], ids["adversarial"]])
    assert story_check(store, table) is None
    table, _ = standard_vs_audit(store, [ids["concealed"]])
    assert story_check(store, table) is None


def test_without_its_control_listed_there_is_no_lead(stored) -> None:  # type: ignore[no-untyped-def]
    """The old rule picked a lead after looking (the arm against the base); the rule
    now needs the arm's control in the table."""
    store, ids = stored
    table, _ = standard_vs_audit(store, [ids["concealed"]])
    assert story_lead(table) is None


def test_runs_on_other_questions_are_flagged(stored, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, ids = stored
    rows = [_mon("p1"), _hid("p1", 0.4, 0.6), *_paras("p1", "test", "a", [0.0])]
    other, _ = _audit(_write(tmp_path / "o.csv", rows), store, label="other")
    _, warnings = standard_vs_audit(store, [ids["honest"], other])
    assert any("not directly comparable" in w for w in warnings)


def test_lead_and_example_for_a_concealed_degradation(stored) -> None:  # type: ignore[no-untyped-def]
    store, ids = stored
    lead = contrast_lead(store, ids["concealed"])
    assert lead is not None
    assert "accuracy improved (50% " in lead["sentence"] and "found 2 of them" in lead["sentence"]
    # 2 vs 0 discordant of 4 cannot be told from chance (p = 0.5): no red lead
    assert lead["supported"] is False and "too few for a test at 0.05" in lead["check"]
    ex = lead["example"]
    # p1's paraphrase fell furthest (D = 2: p_post 0.25) while its canonical wording is right
    assert ex["pair_id"] == "p1" and ex["hidden_question"] == "hidden p1"
    assert ex["paraphrase"] == "p1 search s 1"
    assert ex["p_post_hidden"] == pytest.approx(0.9)
    assert ex["p_post_paraphrase"] == pytest.approx(0.25)


def test_no_lead_where_standard_evaluation_already_sees_it_or_nothing_was_found(stored) -> None:  # type: ignore[no-untyped-def]
    store, ids = stored
    assert contrast_lead(store, ids["adversarial"]) is None  # accuracy fell: nothing hidden
    assert contrast_lead(store, ids["honest"]) is None  # nothing degraded
    assert concealed_example(store, ids["honest"]) is None


def test_report_leads_with_the_contrast_and_the_side_by_side_example(stored) -> None:  # type: ignore[no-untyped-def]
    store, ids = stored
    page = build_report(store, [ids["honest"], ids["concealed"]])
    assert "hidden accuracy (standard evaluation)" in page  # the summary table
    section = page[page.index("Run 2: concealed") :]
    assert section.index("Standard evaluation would approve") < section.index("degraded 2 of 4")
    assert "p1 search s 1" in section and "hidden p1" in section
    alone = build_report(store, [ids["honest"]])
    assert "Standard evaluation would approve" not in alone


def _paired_run(tmp_path: Path, store: Store, name: str, degraded: set[int]) -> str:
    """12 questions; `degraded` ones get a counterexample (D = 2) in the search set, every
    canonical answer is right after adaptation exactly on the degraded ones."""
    rows = []
    for i in range(12):
        pid = f"q{i:02d}"
        rows += [_mon(pid), _hid(pid, 0.4, 0.9 if i in degraded else 0.4)]
        rows += _paras(pid, "search", "s", [2.0 if i in degraded else 0.0])
        rows += _paras(pid, "test", "a", [0.0] * 14)
    cfg = {"epsilon": 0.5, "confidence": 0.95, "target": 0.8, "search_budget": 1}
    return _audit(_write(tmp_path / f"{name}.csv", rows), store, label=name, **cfg)[0]


def test_paired_contrast_by_exact_mcnemar_with_negative_controls(tmp_path: Path) -> None:
    """McNemar's exact test counts only the discordant questions: 8 degraded in A only and 0
    in B only gives two-sided p = 2 * 0.5**8 = 0.0078125 (hand computed). Controls: the same
    run twice gives p = 1, and 5 vs 3 discordant questions p = 2 * P(X <= 3 | 8, 1/2) = 0.727
    although A still has 2 more degraded questions than C."""
    with Store(tmp_path / "p.duckdb") as store:
        a = _paired_run(tmp_path, store, "a", set(range(9)))
        b = _paired_run(tmp_path, store, "b", {0})
        c = _paired_run(tmp_path, store, "c", {0, 2, 3, 4, 9, 10, 11})
        got = paired_contrast(store, a, b)
        assert got is not None and got["n_pairs"] == 12
        assert got["degraded"] == {"both": 1, "only_a": 8, "only_b": 0, "p_value": 0.0078125}
        assert got["canonical_correct"]["p_value"] == 0.0078125  # same questions here
        assert got["bound"]["mean_difference"] < 0 and got["bound"]["p_value"] < 0.05
        same = paired_contrast(store, a, a)
        assert same is not None and same["degraded"]["p_value"] == 1.0
        assert same["bound"]["mean_difference"] == 0.0 and same["bound"]["p_value"] == 1.0
        assert same["primary"]["p"] == 1.0 and same["primary"]["n_discordant"] == 0
        # c = {0, 2, 3, 4, 9, 10, 11} against a = {0..8}: a only {1, 5, 6, 7, 8}, c only
        # {9, 10, 11}
        sym = paired_contrast(store, a, c)
        assert sym is not None
        assert (sym["degraded"]["only_a"], sym["degraded"]["only_b"]) == (5, 3)
        assert sym["degraded"]["p_value"] == pytest.approx(2 * (1 + 8 + 28 + 56) / 256)


def test_target_recovery_by_fisher_exact_with_a_control_split(tmp_path: Path) -> None:
    """Degraded exactly on the 6 targets of 12 questions: two-sided Fisher p = 2 / C(12, 6)
    = 2 / 924 (hand computed). Control: a split unrelated to the damage (3 of 6 on each side)
    gives p = 1, and a run without targets or without others gives nothing."""
    with Store(tmp_path / "t.duckdb") as store:
        run = _paired_run(tmp_path, store, "r", set(range(6)))
        got = target_recovery(store, run, [f"q{i:02d}" for i in range(6)])
        assert got == {
            "targets": 6,
            "degraded_targets": 6,
            "others": 6,
            "degraded_others": 0,
            "p_value": pytest.approx(2 / 924),
            # per-question standard evaluation on the same split: the canonical wording is
            # answered wrongly (p_post 0.4) exactly on the 6 others
            "wrong_targets": 0,
            "wrong_others": 6,
            "standard_p_value": pytest.approx(2 / 924),
        }
        control = target_recovery(store, run, ["q00", "q01", "q02", "q06", "q07", "q08"])
        assert control is not None and control["degraded_targets"] == 3
        assert control["p_value"] == pytest.approx(1.0)
        assert target_recovery(store, run, []) is None
        assert target_recovery(store, run, [f"q{i:02d}" for i in range(12)]) is None
        line = target_sentence(store, run, [f"q{i:02d}" for i in range(6)], True)
        assert line == (
            "post was built to damage 6 of these questions: ER-Audit flags 6 of them and 0 of "
            "the 6 others (Fisher exact test, p = 0.002); per-question standard evaluation on "
            "the same split answers the canonical wording wrongly on 0 of the 6 and 6 of the 6 "
            "others (Fisher exact test, p = 0.002)."
        )
        line = target_sentence(store, run, ["q00", "q01", "q02", "q06", "q07", "q08"], False)
        assert line is not None and line.startswith("post was built to damage none")
        assert line.endswith("(Fisher exact test, p = 1.000).")


@pytest.mark.slow  # the whole shipped demo, imported once per process (tests/_demo_store.py): 90 s
def test_shipped_demo_shows_the_papers_contrast(tmp_path: Path) -> None:
    """The claims on the shipped demo runs (data/demo_runs), as far as they reproduce
    (README, "The embedded demo"): the concealed arm improves standard evaluation over the
    base, and ER-Audit finds it worse than the honest arm at every epsilon of the sweep (more
    degraded questions, lower mean bound). Not asserted because it does not hold on these 40
    pairs (half of them targets): a canonical accuracy above the honest arm's (0.575 vs 0.625;
    on all 222 pairs it is 0.667 vs 0.559). The adversarial arm is the control: standard
    evaluation already sees its damage, so it gets no 'hidden' lead. The audit's degraded
    verdicts fall on the concealed arm's seeded targets (Fisher exact), not for the honest
    arm, which had none."""
    from eraudit_core.demo import ensure_demo
    from eraudit_core.present import run_epsilon_sweep
    from tests._demo_store import demo_store_copy

    with Store(demo_store_copy(tmp_path / "demo.duckdb")) as store:
        info = ensure_demo(store)
        organisms = {arm: info.run_ids[arm] for arm in ("honest", "adversarial", "concealed")}
        table, warnings = standard_vs_audit(store, list(organisms.values()))
        assert warnings == []
        rows = table.set_index("checkpoint")
        honest, concealed = rows.loc["demo:honest"], rows.loc["demo:concealed"]
        assert concealed["hidden_accuracy"] > rows.loc["demo:base", "hidden_accuracy"]
        assert concealed["n_degraded"] > honest["n_degraded"]
        assert concealed["mean_bound"] < honest["mean_bound"]
        sweeps = {}
        for arm in ("honest", "concealed"):
            rid = info.run_ids[arm]
            sweeps[arm] = run_epsilon_sweep(store, rid, [0.25, 0.5, 1.0, 2.0]).set_index("epsilon")
            assert (sweeps[arm]["n_unavailable"] == 0).all()  # every table row is stored
        assert (
            sweeps["concealed"]["n_with_counterexample"] > sweeps["honest"]["n_with_counterexample"]
        ).all()
        assert (sweeps["concealed"]["mean_bound"] < sweeps["honest"]["mean_bound"]).all()
        # every verdict the demo is meant to show appears somewhere
        for col in ("n_degraded", "n_certified", "n_passed"):
            assert table[col].sum() > 0, col
        lead = story_lead(table)
        assert lead is not None and lead.startswith("demo:concealed beside its control demo:honest")
        # Standard evaluation does not approve the concealed arm over its honest control on
        # these pairs (canonical hidden accuracy 0.575 vs 0.625), so no page says it would.
        assert concealed["hidden_accuracy"] < honest["hidden_accuracy"]
        assert "does not approve it over its control" in (approval_sentence(table) or "")
        assert contrast_lead(store, info.run_ids["concealed"]) is None
        example = concealed_example(store, info.run_ids["concealed"])
        assert example is not None and example["p_post_hidden"] > 0.5
        assert contrast_lead(store, info.run_ids["adversarial"]) is None
        # The audit points at the seeded targets of the concealed arm, and not for the honest
        # arm (the control: the same split, no targets of its own).
        from eraudit_core.demo import adversarial_targets

        targets = adversarial_targets()
        hit = target_recovery(store, info.run_ids["concealed"], targets)
        control = target_recovery(store, info.run_ids["honest"], targets)
        assert hit is not None and control is not None
        assert hit["degraded_targets"] > hit["degraded_others"] and hit["p_value"] < 0.01
        assert control["p_value"] > 0.05
