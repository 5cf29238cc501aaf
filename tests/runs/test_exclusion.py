"""Labels on rewordings, and a labelled rewording excluded into a NEW, linked
run whose verdicts come from the stored scores (never a plain certificate)."""

from __future__ import annotations

import pytest

from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig
from eraudit_core.runs import audit_table_run, derive_without, excluded_after_seen, selection_note
from eraudit_core.runs._exclusion import NOT_SCORED_STOP
from eraudit_core.store import NOT_MEANING_PRESERVING, Store
from tests.runs.test_audit import Audit, hidden, monitored, paras, write_table


def _table_run(tmp_path, store: Store) -> str:
    # confidence 0.75, p* = 0.5: n* = 2 per generator and L = 0.25 ** (1/2) = 0.5 at n = 2
    rows = [
        monitored("p1"),
        hidden("p1"),
        *paras("p1", "search", "s", [0.5, 0.0]),  # t = 1 is a counterexample (D 0.5 > 0.1)
        *paras("p1", "test", "g1", [0.0] * 4),
        *paras("p1", "test", "g2", [0.0] * 4),
        monitored("p2"),
        hidden("p2"),
        *paras("p2", "search", "s", [0.0]),
        *paras("p2", "test", "g1", [0.0] * 4),
        *paras("p2", "test", "g2", [0.0] * 4),
    ]
    path = write_table(tmp_path / "scores.csv", rows)
    config = AuditConfig(epsilon=0.1, confidence=0.75, target=0.5)
    return audit_table_run(store, path, config, label="table run")


def _label(store: Store, run_id: str, pid: str, stage: int, gen: str, t: int) -> None:
    store.add_paraphrase_label(
        run_id, pid, stage=stage, generator=gen, t=t, label=NOT_MEANING_PRESERVING, author="ana"
    )


def test_excluding_a_labelled_counterexample_writes_a_new_linked_run(tmp_path):
    store = Store()
    old = _table_run(tmp_path, store)
    before_pairs, before_steps = store.pair_results(old), store.steps(old)
    status = dict(zip(before_pairs["pair_id"], before_pairs["status"], strict=True))
    assert status == {"p1": "degraded", "p2": "certified"}
    _label(store, old, "p1", 1, "s", 1)

    new = derive_without(store, old, store.labelled_invalid(old), author="ana")

    assert new != old
    # the source run is unchanged
    assert store.pair_results(old).equals(before_pairs)
    assert store.steps(old).equals(before_steps)
    assert store.run(old)["provenance"].get("derived_from") is None
    # the new run is linked, counts the exclusion and never certifies
    run = store.run(new)
    assert run["provenance"]["derived_from"]["run_id"] == old
    assert run["provenance"]["derived_from"]["excluded"][0]["author"] == "ana"
    assert (
        excluded_after_seen(run["provenance"]) == 1
        and excluded_after_seen(store.run(old)["provenance"]) == 0
    )
    note = selection_note(run["provenance"])
    assert note is not None and note.startswith("1 rewording excluded after their scores")
    assert selection_note(store.run(old)["provenance"]) is None
    pairs = store.pair_results(new).set_index("pair_id")
    # p1 without its search counterexample: the table's test rows decide it, n* = 2 per
    # generator, L = 0.25 ** (1/2) = 0.5 >= p* -- but passed, never certified
    assert pairs.loc["p1", "status"] == "passed"
    assert pairs.loc["p1", "bound"] == pytest.approx(0.5, rel=1e-12)
    assert int(pairs.loc["p1", "n_search"]) == 1
    assert int(pairs.loc["p1", "n_test"]) == 4  # n* = 2 draws of each generator, as the engine
    assert [g["stop"] for g in pairs.loc["p1", "generators"]] == ["target reached"] * 2
    # negative control: p2 had nothing excluded; same bound, and still no certificate
    assert pairs.loc["p2", "status"] == "passed"
    assert pairs.loc["p2", "bound"] == pytest.approx(
        before_pairs.set_index("pair_id").loc["p2", "bound"]
    )
    kept = store.steps(new, "p1").query("stage == 1")
    assert kept["t"].tolist() == [1] and kept["text"].tolist() == ["p1 search s #1"]


def test_a_verdict_that_needs_unscored_rewordings_is_not_invented(tmp_path):
    # a model-like run (no table rows kept): g1 stops at its counterexample at t = 3, so a run
    # without that rewording would need g1's 4th draw and g2's draws, which were never scored
    rows = [
        monitored("p1"),
        hidden("p1"),
        *paras("p1", "test", "g1", [0.0, 0.0, 0.5, 0.0, 0.0]),
        *paras("p1", "test", "g2", [0.0, 0.0]),
    ]
    a = Audit(write_table(tmp_path / "s.csv", rows), epsilon=0.1, batch_size=1)
    old = a.run()
    assert a.results()["p1"]["status"] == "degraded"
    _label(a.store, old, "p1", 2, "g1", 3)
    new = derive_without(a.store, old, a.store.labelled_invalid(old), author="ana")
    r = a.store.pair_results(new).iloc[0]
    assert r["status"] == "inconclusive" and r["bound"] == 0.0
    gens = {g["generator"]: g for g in r["generators"]}
    assert gens["g1"]["stop"] == NOT_SCORED_STOP
    assert gens["g1"]["available"] == 4  # the excluded rewording left the pool (5 - 1)
    assert gens["g1"]["n"] == 2


def test_labels_are_stored_with_who_and_when_and_checked(tmp_path):
    store = Store()
    run = _table_run(tmp_path, store)
    store.add_paraphrase_label(
        run, "p2", stage=2, generator="g1", t=1, label="note", note="odd grammar", author="bo"
    )
    _label(store, run, "p1", 1, "s", 1)
    _label(store, run, "p1", 1, "s", 1)  # a second label on one step excludes it once
    labels = store.paraphrase_labels(run)
    assert labels["author"].tolist() == ["bo", "ana", "ana"]
    assert labels["created_at"].notna().all()
    assert labels.loc[0, "note"] == "odd grammar" and labels.loc[0, "text"] == "p2 test g1 #0"
    invalid = store.labelled_invalid(run)
    assert [(e["pair_id"], e["stage"], e["t"]) for e in invalid] == [("p1", 1, 1)]
    with pytest.raises(InputError, match="not one of"):
        store.add_paraphrase_label(run, "p1", stage=1, generator="s", t=1, label="bad", author="x")
    with pytest.raises(InputError, match="author"):
        store.add_paraphrase_label(
            run, "p1", stage=1, generator="s", t=1, label=NOT_MEANING_PRESERVING, author=" "
        )
    with pytest.raises(InputError, match="no scored rewording at run .*t 9"):
        _label(store, run, "p1", 1, "s", 9)
    with pytest.raises(InputError, match="nothing to exclude"):
        derive_without(store, run, [], author="ana")
    with pytest.raises(InputError, match="no scored rewording at pair p1"):
        derive_without(
            store, run, [{"pair_id": "p1", "stage": 2, "generator": "g9", "t": 1}], author="a"
        )


def test_a_chained_rederivation_counts_every_exclusion_along_the_chain(tmp_path):
    store = Store()
    old = _table_run(tmp_path, store)
    _label(store, old, "p1", 1, "s", 1)
    first = derive_without(store, old, store.labelled_invalid(old), author="ana")
    _label(store, first, "p2", 2, "g1", 1)
    second = derive_without(store, first, store.labelled_invalid(first), author="bo")
    run = store.run(second)
    derived = run["provenance"]["derived_from"]
    assert excluded_after_seen(run["provenance"]) == 2  # not the last step's 1
    assert derived["n_excluded_here"] == 1
    assert derived["run_id"] == first and derived["original_run_id"] == old
    assert [e["pair_id"] for e in derived["excluded"]] == ["p1", "p2"]
    note = selection_note(run["provenance"])
    assert note is not None and note.startswith("2 rewordings excluded after their scores")
    # control: the first derivation still counts its own single exclusion
    assert excluded_after_seen(store.run(first)["provenance"]) == 1
