"""The parts around the engine: migration 5 (evidence recomputed for stored runs),
the scoring-noise floor module, and wording that claims no more than the numbers."""

from __future__ import annotations

import json

import duckdb
import pytest
import torch

from eraudit_core.method import noise_floor_record
from eraudit_core.present import build_report, run_verdict
from eraudit_core.present.report._verdict_wording import floor_confidence
from eraudit_core.store import Store
from eraudit_core.store._schema import MIGRATIONS, SCHEMA_VERSION
from eraudit_core.types import Query
from eraudit_core.verifier import (
    PROBE_SET,
    measure_noise_floor,
    run_noise_floor,
    served_drift,
)
from tests.runs.test_audit import _cli_json, monitored, paras, write_table


def test_migration_5_recomputes_the_evidence_of_stored_runs(tmp_path):
    path = tmp_path / "v4.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER, applied_at TIMESTAMP)")
    for v in range(1, 5):
        for ddl in MIGRATIONS[v]:
            con.execute(ddl)
        con.execute("INSERT INTO schema_version VALUES (?, now())", [v])
    con.execute(
        "INSERT INTO runs (run_id, status, config, created_at) VALUES ('r', 'done', ?, now())",
        [json.dumps({"k": 0.01, "epsilon": 0.5})],
    )
    for pid, gain in (("a", 0.005), ("b", 0.2)):
        con.execute(
            "INSERT INTO run_pairs (run_id, pair_id, status, gain, generators, finished_at) "
            "VALUES ('r', ?, 'degraded', ?, '[]', now())",
            [pid, gain],
        )
    steps = [("a", 1, 0.6, 0.59, 1.0), ("a", 2, 0.7, 0.5, 20.0), ("b", 1, 0.5, 0.4, 0.5)]
    for pid, t, pre, post, d in steps:
        con.execute(
            "INSERT INTO run_steps (run_id, pair_id, stage, generator, t, text, p_pre, p_post, "
            "d, is_counterexample, recorded_at) VALUES ('r', ?, 1, 's', ?, ?, ?, ?, ?, true, now())",
            [pid, t, f"{pid} text {t}", pre, post, d],
        )
    con.close()
    with Store(path) as store:
        assert store.schema_version() == SCHEMA_VERSION >= 5
        pairs = store.pair_results("r").set_index("pair_id")
        stored_steps = store.steps("r")
    assert bool(pairs.loc["a", "amplified"]) is True  # 0.005 <= k = 0.01
    assert bool(pairs.loc["b", "amplified"]) is False
    assert pairs.loc["a", "worst_drop"] == pytest.approx(0.2)  # the step with the largest D
    assert pairs.loc["a", "worst_text"] == "a text 2"
    assert pairs.loc["b", "worst_drop"] == pytest.approx(0.1)
    assert stored_steps["prob_drop"].tolist() == pytest.approx([0.01, 0.2, 0.1])
    assert stored_steps["prompt"].isna().all()


class _TwoPaths:
    """A verifier whose naive path differs from its fast one by known log-probs."""

    def __init__(self, shift: float) -> None:
        self.shift = shift

    def label_logprobs(self, queries, *, naive: bool = False):  # type: ignore[no-untyped-def]
        lp = torch.zeros(len(queries), 2, 2)
        lp[:, 0, 0] = 0.5  # order AB: true label favoured
        if naive:
            lp[1, 0, 0] += self.shift  # only the second probe moves
        return lp


def test_noise_floor_is_the_largest_probe_gap_between_the_two_paths():
    got = measure_noise_floor(_TwoPaths(0.1))
    sigmoid = torch.sigmoid
    # p = (p_AB(true) + p_BA(true)) / 2 with l_A - l_B = 0.5 (AB) and 0 (BA)
    p_fast = (float(sigmoid(torch.tensor(0.5))) + 0.5) / 2
    p_naive = (float(sigmoid(torch.tensor(0.6))) + 0.5) / 2
    assert got["value"] == pytest.approx(abs(p_naive - p_fast), rel=1e-5)
    assert got["n_probes"] == len(PROBE_SET) == 8
    assert measure_noise_floor(_TwoPaths(0.0))["value"] == 0.0  # negative control
    assert run_noise_floor([{"noise_floor": got}, {"noise_floor": {"value": 0.0}}]) == got["value"]
    assert run_noise_floor([{}, {"name": "x"}]) is None


class _Served:
    def __init__(self, p: list[float]) -> None:
        self.p = p

    def score(self, queries: list[Query]):  # type: ignore[no-untyped-def]
        from eraudit_core.types import QueryScore

        return [QueryScore(x) for x in self.p[: len(queries)]]


def test_a_served_checkpoint_floor_is_its_drift_since_registration():
    first = measure_noise_floor(_Served([0.5] * 8))
    assert first["value"] == 0.0 and first["probe_p"] == [0.5] * 8
    now = _Served([0.5] * 7 + [0.53])
    got = served_drift({"noise_floor": first}, now)
    assert got is not None and got["value"] == pytest.approx(0.03)
    assert served_drift({}, now) is None  # nothing stored to compare with


def test_declared_and_measured_floors():
    assert noise_floor_record(0.01, None)["value"] == 0.01
    assert noise_floor_record(0.01, 0.02) == {
        "value": 0.02,
        "source": "declared by the auditor (--noise-floor)",
    }
    assert noise_floor_record(None, None)["value"] is None


def test_simultaneous_confidence_is_printed_rounded_down():
    assert floor_confidence(1 - 0.05 / 40) == "0.9987"  # 0.99875 would round up to 0.9988
    assert floor_confidence(0.95) == "0.95"
    assert floor_confidence(1 - 0.05 / 3) == "0.9833"


def test_wording_claims_no_more_than_the_numbers(tmp_path, capsys):
    """Guards against 'concrete failures, not estimates' and 'drawn at random' for a score
    table; the degraded line names the drop, the gain, amplified counts and the floor."""
    rows = [monitored("a", 0.75, 0.5), *paras("a", "search", "s", [0.0, 0.004])]
    rows += [*paras("a", "test", "g", [0.0] * 3), monitored("b"), *paras("b", "test", "g", [0] * 3)]
    path = write_table(tmp_path / "s.csv", rows)
    db = str(tmp_path / "s.duckdb")
    out = _cli_json(
        capsys,
        "audit-table",
        str(path),
        "--db",
        db,
        "--json",
        "--noise-floor",
        "0.01",
        "--min-drop",
        "0.0001",
    )
    with Store(db) as store:
        run = store.run(out["run_id"])
        verdict = run_verdict(run, store.pair_results(out["run_id"]))
        page = build_report(store, [out["run_id"]])
    text = " ".join(verdict["sentences"])
    assert "concrete failures" not in text and "concrete failures" not in page
    assert "drawn at random" not in text
    assert "in the table's order" in text
    assert "1 have g <= k = 0.001, so every drop counts 1000x" in text
    assert "1 on a drop within the scorer's numerical precision 0.01" in text
    assert "min-drop 0.0001" in verdict["headline"]
    assert "minimum drop 0.0001" in text
    assert "Why these verdicts" in page and "prompt not available: scores came from a table" in page
