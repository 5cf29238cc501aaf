"""The debate arms beside the paper: every number is the stored runs' own, recomputed here
from the raw pair results, and the "paper's direction" column follows the numbers (a
negative control swaps the arms)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eraudit_core.present import (
    PAPER_QUALITY_H,
    debate_findings,
    paper_comparison_frame,
    pattern_summary,
    primary_result,
)
from eraudit_core.store import Store
from tests import _synthetic as synthetic


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    db = tmp_path_factory.mktemp("paper") / "s.duckdb"
    with Store(db) as store:
        info = synthetic.build_synthetic_store(store, n_pairs=12, n_search=3, n_test=8)
    return db, info.run_ids


def test_findings_are_the_stored_runs_numbers(runs: tuple[Path, dict[str, str]]) -> None:
    db, ids = runs
    with Store(db) as store:
        got = debate_findings(store, ids["adversarial"], ids["honest"])
        for arm in ("adversarial", "honest"):
            pairs = store.pair_results(ids[arm])
            f = got[arm]
            assert f["n_pairs"] == 12
            hidden = pairs["p_post_hidden"].astype(float)
            assert f["hidden_accuracy"] == pytest.approx(float((hidden > 0.5).mean()))
            assert f["hidden_mtp"] == pytest.approx(float(hidden.mean()))
            assert f["n_degraded"] == int((pairs["status"] == "degraded").sum())
            # at the run's epsilon 0.1 and above, a question has a counterexample exactly when one
            # of its stored rewordings has D above it (the run stored every draw up to its first)
            max_d = store.steps(ids[arm]).groupby("pair_id")["d"].max()
            by_eps = f["counterexamples_by_epsilon"]
            assert by_eps == {e: int((max_d > e).sum()) for e in (0.1, 0.25, 0.5, 1.0, 2.0)}
            assert by_eps[0.1] == f["n_degraded"] == {"adversarial": 3, "honest": 0}[arm]
            # the paper's per-question statistic: a counterexample among the search rewordings
            steps = store.steps(ids[arm])
            search = steps[steps["stage"] == 1]
            hit = search["d"].astype(float) > float(store.run(ids[arm])["config"]["epsilon"])
            assert f["search_counterexamples"] == search.loc[hit, "pair_id"].nunique()
            gains = pairs["p_post_monitored"].astype(float) - pairs["p_pre_monitored"].astype(float)
            assert f["took"] is bool(2 * int((gains <= 0.001).sum()) < len(pairs))
            # the run's own confidence gives the run's own bounds
            stored = pairs["bound"].astype(float).fillna(0.0)
            ok = pairs["status"].isin(["certified", "passed"])
            assert f["mean_bound_by_confidence"][0.95] == pytest.approx(
                float(np.where(ok, stored, 0.0).mean()), abs=1e-9
            )
        # the synthetic arms stand on one base: the primary test is the exact McNemar on the
        # questions whose degraded verdicts differ, and its line gives those counts
        comparison = got["comparison"]
        assert comparison["comparable"] and comparison["differences"] == []
        only_a = int(got["adversarial"]["n_degraded"])
        assert comparison["primary"]["only_a"] == only_a and comparison["primary"]["only_b"] == 0
        assert comparison["primary"]["p"] == pytest.approx(0.5 ** (only_a - 1))
        assert primary_result(got).startswith(f"degraded only under debate-adversarial: {only_a},")


def test_arms_on_different_bases_get_no_primary_test(tmp_path: Path) -> None:
    """An honest arm scored from another seed's pre scores stands on another base: no test."""
    with Store(tmp_path / "s.duckdb") as store:
        kw = {"n_pairs": 12, "n_search": 3, "n_test": 8}
        arm = synthetic.build_synthetic_store(store, arms=("adversarial",), **kw)
        other = synthetic.build_synthetic_store(store, arms=("honest",), seed=1, **kw)
        got = debate_findings(store, arm.run_ids["adversarial"], other.run_ids["honest"])
    comparison = got["comparison"]
    assert not comparison["comparable"]
    assert "base" in [d["field"] for d in comparison["differences"]]
    assert "primary" not in comparison
    assert primary_result(got).startswith("not comparable (they differ in base")


def test_directions_follow_the_numbers_and_flip_with_the_arms(
    runs: tuple[Path, dict[str, str]],
) -> None:
    db, ids = runs
    with Store(db) as store:
        frame = paper_comparison_frame(debate_findings(store, ids["adversarial"], ids["honest"]))
        swapped = paper_comparison_frame(debate_findings(store, ids["honest"], ids["adversarial"]))
    col = frame.columns[3]
    assert col.startswith("paper's direction here")
    (label,) = [q for q in frame["quantity"] if q.startswith("questions with a counterexample in")]
    row = frame.set_index("quantity").loc[label]
    assert "search stage" in label and "at the paper's epsilon" in row.iloc[0]
    assert "103 vs 90 of 222" in row["paper (QuALITY-H, adversarial vs honest)"]
    assert PAPER_QUALITY_H["counterexamples"]["adversarial"] == 103
    a, h = (int(x.split(" ")[0]) for x in row.iloc[1].split(" vs "))
    assert row[col] == ("yes" if a > h else "no")
    # Negative control: with the arms swapped, every strict direction flips.
    demo_col = "this demo (debate-adversarial vs debate-honest)"
    for (_, r1), (_, r2) in zip(frame.iterrows(), swapped.iterrows(), strict=True):
        x, y = r1[demo_col].split(" of ")[0].split(" vs ")
        if x != y and r1[col]:
            assert r1[col] != r2[col], r1["quantity"]
    # the degraded verdicts are their own row, with no direction: the paper does not count them
    degraded = frame.set_index("quantity").loc["questions marked degraded (search or test stage)"]
    assert degraded[col] == "" and degraded.iloc[0] == "not reported per arm"


def _findings(
    searched: tuple[int, int], bounds: tuple[float, float], took: tuple[bool, bool] = (True, True)
) -> dict:
    def arm(n_search: int, bound: float, took: bool) -> dict:
        return {
            "n_pairs": 222,
            "n_degraded": 200,  # not the paper's statistic: never in the sentence
            "search_counterexamples": n_search,
            "took": took,
            "n_gain_le_k": 20 if took else 117,
            "mean_bound_by_confidence": {c: bound for c in (0.8, 0.9, 0.95, 0.99, 0.999)},
        }

    return {
        "adversarial": arm(searched[0], bounds[0], took[0]),
        "honest": arm(searched[1], bounds[1], took[1]),
    }


def test_the_pattern_sentence_says_whether_and_by_how_much() -> None:
    # the paper's own figures: more counterexamples and a lower bound for the adversarial arm
    got = pattern_summary(_findings((103, 90), (0.20, 0.25)))
    assert got.startswith("The paper's pattern appears here")
    assert "13 more questions with a search-stage counterexample" in got
    assert "(103 vs 90 of 222)" in got
    assert "0.050 below it at confidence 0.95 (below at 5 of 5" in got
    # negative controls: either half reversed and the pattern does not appear
    got = pattern_summary(_findings((161, 162), (0.174, 0.170)))
    assert got.startswith("The paper's pattern does not appear here")
    assert (
        "1 fewer question with a search-stage counterexample than debate-honest (161 vs 162 of 222)"
        in got
    )
    assert "0.004 above it" in got and "below at 0 of 5" in got
    assert pattern_summary(_findings((103, 90), (0.30, 0.25))).startswith(
        "The paper's pattern does not appear"
    )
    assert "as many questions" in pattern_summary(_findings((90, 90), (0.2, 0.25)))


def test_the_pattern_sentence_is_uninformative_when_an_adaptation_did_not_take() -> None:
    """With the paper's own figures but one arm whose adaptation did not take, the sentence
    says that first and sets the paper's figures beside the arms' for reference only."""
    for took in ((False, True), (True, False), (False, False)):
        got = pattern_summary(_findings((103, 90), (0.20, 0.25), took))
        assert got.startswith("Uninformative: the adaptation did not take"), got
        assert "appears here" not in got and "for reference only" in got
        assert "ratio of noise to the floor k" in got


def test_the_recipe_sentence_names_what_was_trained_from_the_fit_record() -> None:
    from eraudit_core.present import recipe_sentence

    gated = {
        "recipe": "reference objective",
        "hyperparameters": {"learning_rate": 0.0001, "epochs": 3},
        "seed": 0,
        "fit": {"capacity": {"name": "full-top2", "trainable_parameters": 7080768}},
    }
    got = recipe_sentence({"debate-honest": gated, "debate-adversarial": gated})
    assert (
        "reference objective; a full fine-tune of the top 2 layers, learning rate 0.0001, " in got
    )
    assert "one seed per arm" in got
    lora = {**gated, "fit": {"capacity": {"name": "lora-r8-top4"}}}
    assert "; capacity lora-r8-top4, learning rate" in recipe_sentence({"a": lora})
    bare = recipe_sentence({"a": {"recipe": "answer tokens", "seed": 0}})
    assert "answer tokens; one seed per arm" in bare
