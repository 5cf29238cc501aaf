"""The `eraudit` engine subcommands (import-benchmark, audit-table, runs, show, sweeps, resume)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from eraudit_core import cli
from eraudit_core.errors import CancelledError
from eraudit_core.method import AuditConfig
from eraudit_core.runs import (
    AuditEngine,
    TableVerifier,
    items_from_table,
    read_score_table,
    table_digest,
)
from eraudit_core.store import BUNDLED_QUALITY_H, Store

REL = 1e-12


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _table(path: Path) -> Path:
    """p1 certified with one generator of 10 successes; p2 degraded in stage 2 at t = 3.
    den = 0.25 and p_post = 0.75 - D / 4, so D is exact."""
    rows = [["p1", "monitored", "", 0, "m1", 0.5, 0.75]]
    rows += [["p1", "test", "g1", i, f"p1 x{i}", 0.75, 0.75] for i in range(10)]
    rows += [["p2", "monitored", "", 0, "m2", 0.5, 0.75]]
    rows += [["p2", "test", "g1", i, f"p2 x{i}", 0.75, 0.625 if i == 2 else 0.75] for i in range(6)]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        w.writerows(rows)
    return path


@pytest.fixture()
def table_run(tmp_path, capsys):
    db = str(tmp_path / "cli.duckdb")
    table = _table(tmp_path / "scores.csv")
    code, out, _ = _run(
        capsys, "audit-table", str(table), "--db", db, "--json", "--label", "my run"
    )
    assert code == 0
    return db, json.loads(out)


def test_import_bundled_benchmark(tmp_path, capsys):
    db = str(tmp_path / "b.duckdb")
    code, out, err = _run(capsys, "import-benchmark", str(BUNDLED_QUALITY_H), "--db", db, "--json")
    assert code == 0, err
    assert json.loads(out) == {
        "benchmark_id": "quality_h_b7ca6a837734",  # slug + the file's sha256[:12]
        "n_pairs": 222,
        "layout": "reference-json",
    }
    # the plain-text form says the same; importing again is harmless
    code, out, _ = _run(capsys, "import-benchmark", str(BUNDLED_QUALITY_H), "--db", db)
    assert code == 0 and '"n_pairs": 222' in out
    with Store(db) as store:
        assert len(store.pairs("quality_h_b7ca6a837734")) == 222
        assert len(store.benchmarks()) == 1


def test_import_missing_file_exits_2(tmp_path, capsys):
    code, out, err = _run(
        capsys, "import-benchmark", str(tmp_path / "nope.json"), "--db", str(tmp_path / "b.duckdb")
    )
    assert code == 2 and "no such benchmark file" in err and out == ""


def test_runs_show_and_sweeps(table_run, capsys):
    db, audit = table_run
    run_id = audit["run_id"]

    code, out, _ = _run(capsys, "runs", "--db", db, "--json")
    assert code == 0
    runs = json.loads(out)
    assert len(runs) == 1
    assert {k: runs[0][k] for k in ("run_id", "label", "status", "n_pairs", "pairs_done")} == {
        "run_id": run_id,
        "label": "my run",
        "status": "done",
        "n_pairs": 2,
        "pairs_done": 2,
    }
    code, out, _ = _run(capsys, "runs", "--db", db)
    assert code == 0 and run_id in out and "my run" in out

    code, out, _ = _run(capsys, "show", run_id, "--db", db, "--json")
    assert code == 0
    shown = json.loads(out)
    assert shown == audit  # the same summary as the audit printed
    p1, p2 = shown["pairs"]
    assert (p1["status"], p1["n_test"]) == ("passed", 10)  # no target: passed, not certified
    assert p1["bound"] == pytest.approx(0.7411344491069477, rel=REL)  # 0.05 ** (1/10)
    assert (p2["status"], p2["stage"], p2["n_test"], p2["max_d"]) == ("degraded", 2, 3, 0.5)
    code, out, _ = _run(capsys, "show", run_id, "--db", db)
    assert code == 0 and "p1" in out and "passed" in out

    code, out, _ = _run(capsys, "sweeps", run_id, "--db", db, "--json", "--epsilons", "0.1,0.6")
    assert code == 0
    sweeps = json.loads(out)
    assert sweeps["run_id"] == run_id
    eps = {r["epsilon"]: r for r in sweeps["epsilon"]}
    # eps 0.1: p2 degraded, p1 passed at L_10: mean 0.7411344 / 2
    assert eps[0.1]["n_with_counterexample"] == 1
    assert eps[0.1]["mean_bound"] == pytest.approx(0.7411344491069477 / 2, rel=REL)
    # eps 0.6: p2's D = 0.5 no longer counts; its rows 4-6 were never scored, but a table
    # run stores every row of its table, so p2 is judged as a fresh audit would
    assert (eps[0.6]["n_with_counterexample"], eps[0.6]["n_unavailable"]) == (0, 0)
    code, out, _ = _run(
        capsys,
        "audit-table",
        str(Path(db).parent / "scores.csv"),
        "--db",
        db,
        "--json",
        "--epsilon",
        "0.6",
    )
    fresh = json.loads(out)["pairs"]
    assert sum(p["status"] == "degraded" for p in fresh) == 0
    assert eps[0.6]["mean_bound"] == pytest.approx(sum(p["bound"] for p in fresh) / 2, rel=REL)
    conf = {r["confidence"]: r["mean_bound"] for r in sweeps["confidence"]}
    assert set(conf) == {0.8, 0.85, 0.9, 0.95, 0.99, 0.999}
    # p1 passed with n = 10, p2 counts 0: 0.2 ** 0.1 / 2 = 0.8513400 / 2
    assert conf[0.8] == pytest.approx(0.8513399225207846 / 2, rel=1e-12)
    code, out, _ = _run(capsys, "sweeps", run_id, "--db", db)
    assert code == 0 and "n_with_counterexample" in out


def test_bad_arguments_exit_2(table_run, capsys):
    db, audit = table_run
    code, _, err = _run(capsys, "show", "no-such-run", "--db", db, "--json")
    assert code == 2 and "no run 'no-such-run'" in err
    code, _, err = _run(capsys, "sweeps", audit["run_id"], "--db", db, "--epsilons", "0.1,abc")
    assert code == 2 and "--epsilons" in err


def test_resume_a_cancelled_table_run_from_the_cli(tmp_path, capsys):
    table = _table(tmp_path / "scores.csv")
    db = str(tmp_path / "r.duckdb")
    _, out, _ = _run(
        capsys, "audit-table", str(table), "--db", str(tmp_path / "ref.duckdb"), "--json"
    )
    expected = json.loads(out)["pairs"]

    df = read_score_table(table)
    items, gens = items_from_table(df, source=str(table))
    digest = table_digest(table)
    # the configuration audit-table uses with its defaults
    config = AuditConfig(epsilon=0.1, k=0.001, confidence=0.95, test_generators=gens)
    with Store(db) as store:

        def cancel_after_first_pair(progress):
            if progress.pairs_done == 1:
                store.request_cancel(progress.run_id)

        engine = AuditEngine(
            store,
            TableVerifier(df, "p_pre", digest),
            TableVerifier(df, "p_post", digest),
            config,
            cancel_after_first_pair,
        )
        with pytest.raises(CancelledError):
            engine.start(items, run_id="r-cancel", source=f"table:{table}")
        assert store.run("r-cancel")["status"] == "cancelled"
        assert store.finished_pair_ids("r-cancel") == {"p1"}

    code, out, err = _run(capsys, "resume", "r-cancel", "--db", db, "--json")
    assert code == 0, err
    resumed = json.loads(out)
    assert (resumed["run_id"], resumed["status"], resumed["complete"]) == ("r-cancel", "done", True)
    assert resumed["schema_version"] == 2 and resumed["pairs"] == expected


def test_console_script_help():
    exe = Path(sys.executable).parent / "eraudit"
    proc = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for sub in ("import-benchmark", "audit-table", "runs", "show", "sweeps", "resume"):
        assert sub in proc.stdout
