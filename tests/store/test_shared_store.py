"""One store, many processes.

The dashboard and the CLI open the same DuckDB file. A store holds the file only for the length
of a transaction, so a second process reads and writes while the first is auditing; a holder
that never lets go is named in a plain StoreError; a run whose process died reads as
`interrupted` to everyone else, and a run whose process is alive is left alone.
"""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from eraudit_core import cli
from eraudit_core.errors import InputError, StoreError
from eraudit_core.store import StepRecord, Store
from tests._holder import holding_raw_connection, other_process

EXE = Path(sys.executable).parent / "eraudit"


def _table(path: Path, n_pairs: int, n_test: int = 40) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        for p in range(n_pairs):
            w.writerow([f"p{p:03d}", "monitored", "", 0, f"m{p}", 0.5, 0.75])
            w.writerows(
                [f"p{p:03d}", "test", "g1", i, f"p{p} x{i}", 0.75, 0.75] for i in range(n_test)
            )
    return path


def _start_cli_audit(
    tmp_path: Path, db: Path, n_pairs: int = 400, n_test: int = 40
) -> subprocess.Popen:
    """An audit in another process, at batch size 2 so it writes often (one batch is two
    writes: the pre checkpoint's scores, then the post scores with the steps)."""
    table = _table(tmp_path / "scores.csv", n_pairs, n_test)
    return subprocess.Popen(
        [str(EXE), "audit-table", str(table), "--db", str(db), "--batch-size", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_progress(db: Path, proc: subprocess.Popen, pairs: int, timeout: float = 90) -> str:
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.2)
        if not db.exists():
            continue
        with Store(db) as store:
            runs = store.runs()
        if not runs.empty and int(runs["pairs_done"].iloc[0]) >= pairs:
            return str(runs["run_id"].iloc[0])
    raise AssertionError("the audit made no progress")


@pytest.mark.slow  # second processes running audits: 15-80 s
def test_a_second_process_reads_and_writes_while_an_audit_runs(tmp_path, capsys):
    db = tmp_path / "shared.duckdb"
    proc = _start_cli_audit(tmp_path, db)
    try:
        run_id = _wait_for_progress(db, proc, 2)
        # what the dashboard does while the CLI audits: read, and write (cancel, register)
        with Store(db) as store:
            assert store.run(run_id)["status"] == "running"
            store.register_checkpoint("fp-dashboard", "registered meanwhile", {})
        assert cli.main(["runs", "--db", str(db), "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert listed[0]["run_id"] == run_id and listed[0]["status"] == "running"
        assert cli.main(["show", run_id, "--db", str(db), "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["status"] == "running" and shown["complete"] is False
        with Store(db) as store:
            store.request_cancel(run_id)  # the dashboard's Cancel button
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert "cancelled" in err and f"eraudit resume {run_id}" in err and "Traceback" not in err
    with Store(db) as store:
        assert store.run(run_id)["status"] == "cancelled"
        assert "fp-dashboard" in set(store.checkpoints()["fingerprint"])


def test_a_long_lived_store_object_does_not_hold_the_file(tmp_path, capsys):
    """The dashboard keeps one Store for its lifetime; the CLI must still get in."""
    db = tmp_path / "s.duckdb"
    code = f"""
        from eraudit_core.store import Store
        store = Store({str(db)!r})  # kept, like the dashboard's cached Store
        store.runs()
        store.create_run("r-dash", label="from the dashboard", config={{}}, n_pairs=1)
    """
    with other_process(code):
        assert cli.main(["runs", "--db", str(db), "--json"]) == 0
        assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == ["r-dash"]
        with Store(db) as store:
            store.create_run("r-cli", label="from the terminal", config={}, n_pairs=1)


def test_a_holder_that_never_lets_go_is_named(tmp_path, capsys, monkeypatch):
    db = tmp_path / "held.duckdb"
    Store(db).close()
    with holding_raw_connection(str(db)) as holder:
        t0 = time.monotonic()
        with pytest.raises(StoreError) as info:
            Store(db, busy_timeout_s=1.0)
        waited = time.monotonic() - t0
        msg = str(info.value)
        assert str(db) in msg and "busy" in msg and f"process {holder.pid}" in msg
        assert waited >= 1.0
        # the CLI says the same in plain words and exits 2
        monkeypatch.setenv("ERAUDIT_BUSY_TIMEOUT", "1")
        code = cli.main(["runs", "--db", str(db)])
        err = capsys.readouterr().err
        assert code == 2 and "busy" in err and f"process {holder.pid}" in err
        assert "Traceback" not in err
    with Store(db) as store:  # usable again once the other process is gone
        assert store.runs().empty


# -- item 9: run status tells the truth --------------------------------------------------------
@pytest.mark.slow  # second processes running audits: 15-80 s
def test_a_killed_audit_reads_as_interrupted_and_show_says_incomplete(tmp_path, capsys):
    db = tmp_path / "k.duckdb"
    proc = _start_cli_audit(tmp_path, db, n_pairs=30, n_test=10)
    try:
        run_id = _wait_for_progress(db, proc, 2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert cli.main(["runs", "--db", str(db), "--json"]) == 0
    run = json.loads(capsys.readouterr().out)[0]
    assert run["run_id"] == run_id and run["status"] == "interrupted"
    assert cli.main(["show", run_id, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "incomplete" in out and "interrupted" in out and f"eraudit resume {run_id}" in out
    assert cli.main(["show", run_id, "--db", str(db), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "interrupted" and shown["complete"] is False
    # and it resumes to the end
    assert cli.main(["resume", run_id, "--db", str(db), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["complete"] is True and len(shown["pairs"]) == 30


@pytest.mark.slow  # second processes running audits: 15-80 s
def test_a_run_whose_process_is_alive_is_not_marked_interrupted(tmp_path):
    """Opening the dashboard while a terminal audit runs must not declare that run dead."""
    db = tmp_path / "alive.duckdb"
    proc = _start_cli_audit(tmp_path, db)
    try:
        run_id = _wait_for_progress(db, proc, 1)
        with Store(db) as store:
            assert store.mark_stale_runs_interrupted() == []
            assert store.run(run_id)["status"] == "running"
        # nor can a second process resume it while its owner works on it
        with Store(db) as store, pytest.raises(InputError, match=f"process {proc.pid}"):
            store.claim_run(run_id)
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_a_run_row_left_running_by_a_dead_process_is_interrupted(tmp_path):
    db = tmp_path / "dead.duckdb"
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                from eraudit_core.store import Store
                s = Store({str(db)!r})
                s.create_run("r1", label="r1", config={{}}, n_pairs=3)
                s.claim_run("r1")
                """
            ),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == 0, child.stderr
    with Store(db) as store:
        assert store.run("r1")["status"] == "interrupted"
        assert store.run_progress("r1")["status"] == "interrupted"
        assert "stopped" in str(store.run("r1")["error"])
        assert store.mark_stale_runs_interrupted() == ["r1"]
        assert store.mark_stale_runs_interrupted() == []  # recorded once


def test_steps_of_the_dead_run_stay_and_a_new_owner_takes_over(tmp_path):
    db = tmp_path / "own.duckdb"
    with Store(db) as store:
        store.create_run("r1", label="r1", config={}, n_pairs=1)
        store.claim_run("r1")
        store.add_steps("r1", [StepRecord("p", 2, "g", 1, 0, "x", 0.5, 0.5, 0.0, False, 0.05)])
        assert store.run("r1")["status"] == "running"  # this process is alive
        store.claim_run("r1")  # its own run: claiming again is fine
        assert len(store.steps("r1")) == 1


@pytest.mark.slow  # second processes running audits: 15-80 s
def test_an_interrupted_demo_is_completed_by_the_next_one(tmp_path, capsys):
    from eraudit_core.demo import ensure_demo

    db = tmp_path / "demo.duckdb"
    proc = subprocess.Popen(
        [str(EXE), "demo", "--db", str(db), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 120
        killed = False
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
            if not db.exists():
                continue
            with Store(db) as store:
                runs = store.runs()
            if not runs.empty:
                proc.send_signal(signal.SIGKILL)
                killed = True
                break
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert killed, "the demo finished before it could be interrupted"
    with Store(db) as store:
        runs = store.runs()
        assert not (runs["status"] == "done").all() or len(runs) < 2  # half a demo
    assert cli.main(["demo", "--db", str(db), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    with Store(tmp_path / "clean.duckdb") as clean:
        expected = ensure_demo(clean)
        want = {arm: _verdicts(clean, rid) for arm, rid in expected.run_ids.items()}
    assert set(info["run_ids"]) == set(want)
    with Store(db) as store:
        for arm, rid in info["run_ids"].items():
            assert store.run(rid)["status"] == "done"
            assert _verdicts(store, rid) == want[arm]


def _verdicts(store: Store, run_id: str) -> list[tuple]:
    df = store.pair_results(run_id)
    return [(r.pair_id, r.status, round(float(r.bound), 12)) for r in df.itertuples()]
