"""Finished runs stay finished: `resume` of a done, an imported or a derived run exits 2 with a
one-line reason and leaves the store's rows exactly as they were; an imported run's recorded
source (a path on the machine that ran it) is never opened. Control: an interrupted run of
this store does resume."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import pytest

import eraudit_core.runs._table_scores as table_runs
from eraudit_core.cli import main
from eraudit_core.runs import derive_without
from eraudit_core.store import Store
from tests import _synthetic as synthetic


def _snapshot(db: Path) -> dict[str, list]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [r[0] for r in con.execute("SHOW TABLES").fetchall()]
        return {n: con.execute(f"SELECT * FROM {n} ORDER BY ALL").fetchall() for n in names}
    finally:
        con.close()


def _refused(capsys, db: Path, run_id: str, says: str) -> None:
    before = _snapshot(db)
    code = main(["resume", run_id, "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert says in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert _snapshot(db) == before  # the runs rows byte for byte, and every other table


@pytest.fixture()
def store_with_run(tmp_path) -> tuple[Path, str]:
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        info = synthetic.build_synthetic_store(
            store, n_pairs=2, n_search=2, n_test=4, arms=("honest",)
        )
    return db, info.run_ids["honest"]


def test_resume_of_a_done_run_is_refused(store_with_run, capsys):
    db, run_id = store_with_run
    _refused(capsys, db, run_id, f"run {run_id} is done: its results are final")


def test_resume_of_a_derived_run_is_refused(store_with_run, capsys):
    db, run_id = store_with_run
    with Store(db) as store:
        step = store.steps(run_id).iloc[0]
        key = {k: step[k] for k in ("pair_id", "stage", "generator", "t")}
        derived = derive_without(store, run_id, [key], author="test")
        store.set_run_status(derived, "interrupted", "pretend")  # not done, still derived
    _refused(capsys, db, derived, f"run {derived} was derived from run {run_id}")


def _table(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        w.writerow(["p1", "monitored", "", 0, "m", 0.5, 0.7])
        w.writerows(["p1", "test", "g1", i, f"x{i}", 0.6, 0.6] for i in range(4))
    return path


@pytest.mark.parametrize("status", ["done", "interrupted"])
def test_resume_of_an_imported_run_never_opens_its_source(tmp_path, capsys, monkeypatch, status):
    table = _table(tmp_path / "scores.csv")
    gpu = tmp_path / "gpu.duckdb"
    assert main(["audit-table", str(table), "--db", str(gpu), "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    with Store(gpu) as store:
        store.set_run_status(run_id, status, None if status == "done" else "pretend")
    bundle = tmp_path / "run.zip"
    assert main(["export-run", run_id, "--db", str(gpu), "--out", str(bundle)]) == 0
    laptop = tmp_path / "laptop.duckdb"
    assert main(["import-run", str(bundle), "--db", str(laptop)]) == 0
    capsys.readouterr()
    opened: list[str] = []
    monkeypatch.setattr(table_runs, "read_score_table", lambda p: opened.append(str(p)))
    _refused(capsys, laptop, run_id, f"run {run_id} was imported from run.zip")
    assert opened == []


def test_control_an_interrupted_run_of_this_store_resumes(tmp_path, capsys):
    table = _table(tmp_path / "scores.csv")
    db = tmp_path / "s.duckdb"
    assert main(["audit-table", str(table), "--db", str(db), "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    with Store(db) as store:
        store.set_run_status(run_id, "interrupted", "the process running it stopped")
    code = main(["resume", run_id, "--db", str(db), "--json"])
    assert code == 0, capsys.readouterr().err
    with Store(db) as store:
        assert store.run(run_id)["status"] == "done"
