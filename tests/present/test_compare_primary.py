"""Comparable means comparable; one exact primary test; headlines read against the control
(docs/null-reading.md). Score tables with hand-computed D: monitored 0.5 -> 0.75 gives
den = 0.25, so a paraphrase with p_pre 0.75 and p_post 0.75 - D / 4 has score exactly D."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from eraudit_core import cli
from eraudit_core.method import AuditConfig, comparison_fields
from eraudit_core.present import (
    chance_clause,
    compare_runs,
    control_sentence,
    control_summary,
    first_screen,
    min_drop_note,
    null_headline,
    paired_tests,
    primary_sentence,
    run_verdict,
    sign_flip_p,
)
from eraudit_core.present._compare import clustered_test, exact_mcnemar
from eraudit_core.runs import audit_table_run
from eraudit_core.store import Store, load_benchmark
from tests.present.test_views import _mon, _paras, _write


def _arm(path: Path, degraded: set[int], n: int = 8, n_test: int = 4, tag: str = "") -> Path:
    rows = []
    for i in range(n):
        pid = f"p{i}"
        rows.append(_mon(pid))
        ds = [0.0] * n_test
        if i in degraded:
            ds[-1] = 0.75
        rows += [
            [r[0], r[1], r[2], r[3], r[4] + tag, r[5], r[6]] for r in _paras(pid, "test", "g", ds)
        ]
    return _write(path, rows)


def _json(capsys, *argv: str) -> dict:  # type: ignore[no-untyped-def]
    assert cli.main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def _run(capsys, path: Path, db: str, *extra: str) -> str:  # type: ignore[no-untyped-def]
    return _json(capsys, "audit-table", str(path), "--db", db, "--json", *extra)["run_id"]


def test_verdict_settings_are_config_fields_and_cover_the_issue_list() -> None:
    fields = set(AuditConfig.__dataclass_fields__)
    compared = comparison_fields()
    assert set(compared) <= fields
    for name in (
        "epsilon",
        "k",
        "confidence",
        "search_budget",
        "test_budget",
        "target",
        "stop_at_target",
        "tv_delta",
        "min_drop",
        "continue_after_counterexample",
        "search_generators",
        "test_generators",
    ):
        assert name in compared
    # negative control: settings that change neither a verdict nor a bound are not compared
    assert "batch_size" not in compared and "draw_seed" not in compared
    # the wording changes every score, so compared runs must share it too
    assert {"prompt_template", "answer_prefix", "system_message"} <= set(compared)


@pytest.mark.parametrize(
    ("extra_b", "field"),
    [
        (["--no-stop-at-target"], "stop_at_target"),
        (["--continue-after-counterexample"], "continue_after_counterexample"),
    ],
)
def test_runs_differing_only_in_a_verdict_setting_are_not_comparable(  # type: ignore[no-untyped-def]
    tmp_path, capsys, extra_b, field
) -> None:
    db = str(tmp_path / "s.duckdb")
    a = _arm(tmp_path / "a.csv", {0})
    target = ["--target", "0.5"]
    ra, rb = _run(capsys, a, db, *target), _run(capsys, a, db, *target, *extra_b)
    got = _json(capsys, "compare", ra, rb, "--db", db, "--json")
    assert got["comparable"] is False
    assert [d["field"] for d in got["differences"]] == [field]
    assert "primary" not in got and "degraded" not in got
    # negative control: the same settings twice are comparable
    rc = _run(capsys, a, db, *target, *extra_b)
    assert _json(capsys, "compare", rb, rc, "--db", db, "--json")["comparable"] is True


def test_pool_sizes_and_paraphrase_texts_make_runs_incomparable(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "s.duckdb")
    ra = _run(capsys, _arm(tmp_path / "a.csv", {0}), db)
    small = _run(capsys, _arm(tmp_path / "b.csv", {0}, n_test=2), db)
    got = _json(capsys, "compare", ra, small, "--db", db, "--json")
    assert got["comparable"] is False
    (diff,) = got["differences"]
    assert diff["field"] == "pool_sizes"
    assert (diff["a"], diff["b"]) == ({"test:g": 32}, {"test:g": 16})
    # same sizes and ids, other texts: the digest of the texts differs
    other = _run(capsys, _arm(tmp_path / "c.csv", {0}, tag=" (reworded)"), db)
    got = _json(capsys, "compare", ra, other, "--db", db, "--json")
    assert [d["field"] for d in got["differences"]] == ["paraphrase_sets"]
    # negative control: other probabilities on the same texts are results, not settings
    probs = _run(capsys, _arm(tmp_path / "d.csv", {0, 1, 2}), db)
    got = _json(capsys, "compare", ra, probs, "--db", db, "--json")
    assert got["comparable"] is True and got["differences"] == []
    text = cli.main(["compare", ra, small, "--db", db])
    assert text == 0 and "pool_sizes" in capsys.readouterr().out


def test_primary_is_the_exact_two_sided_mcnemar_test(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "s.duckdb")
    ra = _run(capsys, _arm(tmp_path / "a.csv", {0, 1, 2, 3}), db)
    rb = _run(capsys, _arm(tmp_path / "b.csv", set()), db)
    got = _json(capsys, "compare", ra, rb, "--db", db, "--json")
    assert got["comparable"] is True
    primary = got["primary"]
    # 4 discordant questions, all one way: 2 * 0.5**4 = 0.125 exactly (the normal
    # approximation gave 0.0455; mid-p would give 0.0625)
    assert primary["p"] == 0.125
    assert (primary["only_a"], primary["only_b"], primary["n_discordant"]) == (4, 0, 4)
    assert "McNemar" in primary["test"]
    assert [s["name"] for s in got["secondary"]] == ["canonical_correct", "bound"]
    sentence = primary_sentence(got, "A", "B")
    assert "4 disagreements, all one way: too few for a test at 0.05" in sentence
    assert "could be chance" not in sentence
    out = cli.main(["compare", ra, rb, "--db", db])
    lines = capsys.readouterr().out
    assert out == 0 and "Primary (fixed in advance)" in lines and "Holm-adjusted" in lines


def test_exact_mcnemar_matches_the_binomial_and_chance_wording() -> None:
    a = pd.DataFrame({"status": ["degraded"] * 10 + ["passed"] * 6 + ["passed"] * 4})
    b = pd.DataFrame({"status": ["passed"] * 10 + ["degraded"] * 6 + ["passed"] * 4})
    for frame in (a, b):
        frame["p_post_hidden"] = 0.6
        frame["bound"] = 0.5
        frame.index = [f"q{i}" for i in range(20)]
    got = paired_tests(a, b)
    assert got["primary"]["p"] == pytest.approx(binomtest(10, 16, 0.5).pvalue, rel=1e-12)
    assert got["primary"]["p"] == pytest.approx(0.454, abs=5e-4)
    clause = chance_clause(got["primary"])
    assert clause == "with 10 against 6 disagreements this could be chance (exact test p = 0.454)"
    # negative control: 12 against 0 is unlikely to be chance
    b2 = a.copy()
    b2["status"] = "passed"
    a2 = a.copy()
    a2.loc[a2.index[:12], "status"] = "degraded"
    assert "unlikely to be chance" in chance_clause(paired_tests(a2, b2)["primary"])


def test_sign_flip_permutation_is_exact_and_handles_ties() -> None:
    # 3 equal non-zero differences (ties) and zeros: P(|sum| >= 3) over 8 sign patterns = 2/8
    p, smallest, method = sign_flip_p([1.0, 1.0, 1.0, 0.0, 0.0])
    assert (p, smallest, method) == (0.25, 0.25, "exact")
    assert sign_flip_p([0.0, 0.0])[0] == 1.0
    # Monte Carlo beyond 16 non-zero values, within its error of the exact binomial tail
    values = [1.0] * 14 + [-1.0] * 6
    p_mc, _, method = sign_flip_p(values)
    assert method == "monte carlo"
    assert p_mc == pytest.approx(binomtest(14, 20, 0.5).pvalue, abs=0.01)


def test_story_clustered_permutation_counts_stories_not_questions() -> None:
    idx = [f"q{i}" for i in range(12)]
    x = pd.Series([True] * 6 + [False] * 6, index=idx)
    y = pd.Series([False] * 12, index=idx)
    stories = {q: ("s1" if i < 3 else "s2" if i < 6 else f"s{i}") for i, q in enumerate(idx)}
    got = clustered_test(x, y, stories)
    assert got is not None
    # two stories carry all 6 discordant questions: P(|+-3 +-3| >= 6) = 2/4
    assert got["p"] == 0.5 and got["n_stories_discordant"] == 2
    # negative control: one question a story gives the question-level sign test, 2 / 2^6
    own = {q: q for q in idx}
    assert clustered_test(x, y, own)["p"] == pytest.approx(2 / 64)  # type: ignore[index]
    assert clustered_test(x, y, {}) is None


def test_story_clustering_keeps_the_false_alarm_rate_under_arm_by_story_effects() -> None:
    """Monte Carlo: 12 stories of 5 questions, arm-by-story effects make a story's questions
    degrade together in one arm. Both arms from one distribution: the question-level exact
    McNemar test rejects at 0.05 well above 5%, the story-clustered permutation test near or
    below 5%."""
    rng = np.random.default_rng(3)
    idx = [f"q{i}" for i in range(60)]
    stories = {q: f"s{i // 5}" for i, q in enumerate(idx)}
    reps, naive, clustered = 400, 0, 0
    for _ in range(reps):
        pa = np.repeat(rng.beta(0.3, 1.5, 12), 5)  # each story's share degraded, per arm
        pb = np.repeat(rng.beta(0.3, 1.5, 12), 5)
        x = pd.Series(rng.random(60) < pa, index=idx)
        y = pd.Series(rng.random(60) < pb, index=idx)
        naive += exact_mcnemar(int((x & ~y).sum()), int((~x & y).sum())) < 0.05
        got = clustered_test(x, y, stories)
        assert got is not None
        clustered += got["p"] < 0.05
    se = np.sqrt(0.05 * 0.95 / reps)
    assert naive / reps > 0.05 + 3 * se, naive / reps
    assert clustered / reps < 0.05 + 3 * se, clustered / reps


def _story_benchmark(tmp_path: Path, n: int = 8) -> Path:
    path = tmp_path / "bench.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            rec = {
                "pair_id": f"p{i}",
                "story_title": f"story {i // 4}",
                "monitored": {"question": f"monitored p{i}", "true": "yes", "false": "no"},
                "hidden": {"question": f"hidden p{i}", "true": "yes", "false": "no"},
            }
            fh.write(json.dumps(rec) + "\n")
    return path


def test_compare_uses_the_stories_the_benchmark_knows(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Store(tmp_path / "s.duckdb") as store:
        bid = store.add_benchmark(load_benchmark(_story_benchmark(tmp_path), name="stories"))
        a = audit_table_run(
            store, _arm(tmp_path / "a.csv", {0, 1, 2, 3}), AuditConfig(), benchmark_id=bid
        )
        b = audit_table_run(store, _arm(tmp_path / "b.csv", set()), AuditConfig(), benchmark_id=bid)
        got = compare_runs(store, a, b)
    primary = got["primary"]
    assert primary["p"] == 0.125
    # all four disagreements sit in story 0: one story, p = 1
    assert primary["clustered"]["p"] == 1.0 and primary["clustered"]["n_stories"] == 2
    assert "too few for a test at 0.05" in primary_sentence(got, "A", "B")


def test_headlines_read_against_the_control(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "s.duckdb")
    control = _run(capsys, _arm(tmp_path / "c.csv", {0}, n_test=6), db, "--label", "honest")
    arm = _run(
        capsys,
        _arm(tmp_path / "a.csv", {0, 1, 2, 3, 4, 5}, n_test=6),
        db,
        "--label",
        "concealed",
        "--control",
        control,
    )
    with Store(db) as store:
        summary = control_summary(store, arm)
        screen = first_screen(store, arm)
        control_screen = first_screen(store, control)
        headline = null_headline(store, arm)
    assert summary is not None and summary["comparable"]
    reading = summary["null"]
    # one rewording in six dropped by 0.75 is not a drop on the question's rewordings: each
    # question reads within control; the threshold count of D is no longer a headline
    assert (reading["beyond"], reading["better"], reading["within"]) == (0, 0, 8)
    assert summary["beyond"] is None
    text = control_sentence(summary)
    assert "The control's own counts (honest)" in text
    assert "Against the control, question by question: 0 beyond control" in text
    # the first screen opens with the reading against the control, in one plain sentence
    assert screen["lead"] == headline
    assert headline is not None and headline.startswith("On reworded questions, concealed")
    assert "0 worse than the control, 0 better" in headline
    assert "question by question" in screen["control"]
    # the control's own screen says it is the control, and has no lead of its own
    assert control_screen["is_control"] is True and control_screen["lead"] is None
    assert "the control of concealed" in control_screen["sentence"]


def test_min_drop_headline_shows_the_papers_count_beside_it(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A systematic 0.015 drop on every paraphrase with gain 0.02 (D = 0.75 > epsilon 0.5):
    40 of 40 degraded by the paper's rule; --min-drop 0.02 certifies all 40, and every headline
    must still show the paper's 40 beside the 0."""
    rows = []
    for i in range(40):
        pid = f"q{i}"
        rows.append([pid, "monitored", "", 0, f"monitored {pid}", 0.5, 0.52])
        rows += [[pid, "test", "g", j, f"{pid} test {j}", 0.7, 0.7 - 0.015] for j in range(20)]
    path = _write(tmp_path / "drop.csv", rows)
    db = str(tmp_path / "s.duckdb")
    base = ["--epsilon", "0.5", "--target", "0.8", "--budget", "20"]
    paper = _run(capsys, path, db, *base)
    assumed = _run(capsys, path, db, *base, "--min-drop", "0.02")
    with Store(db) as store:
        v_paper = run_verdict(store.run(paper), store.pair_results(paper))
        v_min = run_verdict(store.run(assumed), store.pair_results(assumed))
        screen = first_screen(store, assumed)
        pairs = store.pair_results(assumed)
    assert (pairs["status"] == "certified").sum() == 40
    assert "degraded 40 of 40" in v_paper["headline"]
    assert "Paper's rule" not in v_paper["headline"]  # negative control: the paper's own run
    note = "Paper's rule: 40 of 40 degraded; with the assumed minimum drop 0.02: 0 of 40."
    assert note in v_min["headline"] and note in screen["sentence"]
    assert min_drop_note(pairs, AuditConfig(epsilon=0.5, min_drop=0.0)) is None
