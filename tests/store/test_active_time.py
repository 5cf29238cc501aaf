"""Migration 8: the store records how long a run actually ran (`active_seconds`, `resumed_at`),
so the live view's elapsed time leaves out the time a run sat cancelled or interrupted."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from eraudit_core.store import Store
from eraudit_core.store import _run_tables as run_tables

T0 = datetime(2026, 12, 1, 12, 0, 0)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    """The store's clock, set by the test: now = clock[0]."""
    now = [T0]
    monkeypatch.setattr(run_tables, "_now", lambda: now[0])
    return now


def test_cancelled_time_is_not_counted(tmp_path: Path, clock: list[datetime]) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        store.create_run("r", label="r", config={}, n_pairs=1)
        assert store.run_progress("r")["active_seconds"] == 0.0
        store.set_run_status("r", "running")  # T0
        assert store.run_progress("r")["resumed_at"] == T0
        clock[0] = T0 + timedelta(seconds=30)
        store.set_run_status("r", "cancelled", "by the test")
        prog = store.run_progress("r")
        assert prog["active_seconds"] == pytest.approx(30.0) and prog["resumed_at"] is None
        clock[0] = T0 + timedelta(seconds=1000)  # sat cancelled for 970 s
        store.set_run_status("r", "running")
        clock[0] = T0 + timedelta(seconds=1012)
        store.set_run_status("r", "done")
        prog = store.run_progress("r")
        assert prog["active_seconds"] == pytest.approx(42.0)
        # Negative control: the wall clock from start to finish is 1012 s.
        started, finished = prog["started_at"], prog["finished_at"]
        assert (finished - started).total_seconds() == pytest.approx(1012.0)


def test_migration_credits_finished_runs_their_span(tmp_path: Path) -> None:
    """A run stored before migration 8 gets its started-to-finished span."""
    db = tmp_path / "old.duckdb"
    with Store(db) as store:
        store.create_run("r", label="r", config={}, n_pairs=1)
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE runs DROP COLUMN active_seconds")
    con.execute("ALTER TABLE runs DROP COLUMN resumed_at")
    con.execute(
        "UPDATE runs SET status = 'done', started_at = ?, finished_at = ?",
        [T0, T0 + timedelta(seconds=75)],
    )
    # back to a version-7 store: later migrations (9: labels) are undone too
    con.execute("DROP TABLE paraphrase_labels")
    con.execute("ALTER TABLE runs DROP COLUMN IF EXISTS phase")  # 11: the worker's step
    con.execute("DELETE FROM schema_version WHERE version >= 8")
    con.close()
    with Store(db) as store:
        prog = store.run_progress("r")
    assert prog["active_seconds"] == pytest.approx(75.0)
