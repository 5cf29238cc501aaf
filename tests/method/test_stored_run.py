"""`RunRecord`: a stored run read back with its settings as the AuditConfig it ran with and its
status a RunStatus; what the store holds stays the plain words."""

from __future__ import annotations

import json

import pytest

from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig, RunRecord, pair_evidence
from eraudit_core.types import ACTIVE_RUN_STATUSES, RunStatus, Verdict
from tests.runs.test_audit import audit, hidden, monitored, paras


def _run(tmp_path, **cfg):
    rows = [monitored("p1"), hidden("p1"), *paras("p1", "search", "s", [0.5])]
    rows += [monitored("p2"), hidden("p2"), *paras("p2", "test", "g1", [0.0, 0.0, 0.0])]
    return audit(tmp_path, rows, **cfg)


def test_a_stored_run_reads_back_with_the_settings_it_ran_with(tmp_path) -> None:
    a, res = _run(tmp_path, epsilon=0.25, k=0.002, min_drop=0.01)
    run = RunRecord.read(a.store, a.run_id)
    assert run.config == a.config  # every setting, not only the ones named here
    assert (run.config.epsilon, run.config.k, run.config.min_drop) == (0.25, 0.002, 0.01)
    assert run.status is RunStatus.DONE and run.status not in ACTIVE_RUN_STATUSES
    assert run.n_pairs == 2 and run.name == run.label == a.store.run(a.run_id)["label"]
    # the store keeps the words: the enum members are those words
    raw = a.store.runs().set_index("run_id").loc[a.run_id, "status"]
    assert type(raw) is str and raw == "done" == RunStatus.DONE
    assert (
        json.dumps({"s": RunStatus.DONE, "v": Verdict.DEGRADED}) == '{"s": "done", "v": "degraded"}'
    )
    assert {r["status"] for r in res.values()} == {Verdict.DEGRADED, Verdict.PASSED}


def test_evidence_takes_k_epsilon_and_min_drop_from_the_run(tmp_path) -> None:
    a, res = _run(tmp_path, epsilon=0.25, k=0.002, min_drop=0.01)
    ev = pair_evidence(res["p1"], RunRecord.read(a.store, a.run_id))
    assert (ev.k, ev.epsilon, ev.min_drop) == (0.002, 0.25, 0.01)
    assert ev.status == Verdict.DEGRADED


def test_a_run_without_a_label_is_named_by_its_id_and_a_bad_record_is_refused(tmp_path) -> None:
    a, _ = _run(tmp_path)
    stored = a.store.run(a.run_id)
    assert RunRecord.from_stored({**stored, "label": None}).name == a.run_id
    with pytest.raises(ValueError, match="'finished'"):
        RunRecord.from_stored({**stored, "status": "finished"})
    with pytest.raises(InputError, match="epsilon"):
        RunRecord.from_stored({**stored, "config": {**stored["config"], "epsilon": "0.1"}})
    with pytest.raises(InputError, match="no run 'run-missing'"):
        RunRecord.read(a.store, "run-missing")
    assert AuditConfig.from_dict(stored["config"]) == a.config
