"""The test-only pace gate (eraudit_core/runs/_pace_gate.py): without its variable the engine
never waits; with it the engine takes exactly the passages the gate allows, a run held at the
gate stops on a cancel, and a resumed run goes on counting where the first process stopped."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from eraudit_core.errors import CancelledError
from eraudit_core.method import AuditConfig
from eraudit_core.runs import (
    AuditEngine,
    TableVerifier,
    items_from_table,
    read_score_table,
    table_digest,
)
from eraudit_core.runs._pace_gate import ENV, passages
from eraudit_core.store import Store

CONFIG = AuditConfig(
    epsilon=0.5, confidence=0.95, search_budget=1, test_budget=6, batch_size=2,
    test_generators=("rules",),
)  # fmt: skip


def _table(path: Path, n_pairs: int = 2) -> Path:
    rows = []
    for i in range(n_pairs):
        rows.append((f"q{i}", "monitored", "", 0, f"Monitored {i}?", 0.4, 0.8))
        rows.append((f"q{i}", "hidden", "", 0, f"Hidden {i}?", 0.7, 0.7))
        rows.append((f"q{i}", "search", "search", 1, f"Reworded {i}?", 0.7, 0.7))
        for j in range(1, 7):
            rows.append((f"q{i}", "test", "rules", j, f"Test {j} of {i}?", 0.7, 0.7))
    cols = ["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"]
    pd.DataFrame(rows, columns=cols).to_csv(path, index=False)
    return path


def _engine(store: Store, table: Path) -> tuple[AuditEngine, list]:
    df = read_score_table(table)
    items, _ = items_from_table(df, source=str(table))
    digest = table_digest(table)
    pre, post = TableVerifier(df, "p_pre", digest), TableVerifier(df, "p_post", digest)
    return AuditEngine(store, pre, post, CONFIG), items


def _wait(predicate, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    end = time.time() + timeout
    while not predicate():
        assert time.time() < end, "timed out"
        time.sleep(0.05)


def test_without_the_variable_the_engine_never_waits(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv(ENV, raising=False)
    with Store(tmp_path / "s.duckdb") as store:
        engine, items = _engine(store, _table(tmp_path / "t.csv"))
        run_id = engine.start(items, label="free")
        assert store.run(run_id)["status"] == "done"


def test_the_gate_sets_the_pace_and_a_cancel_stops_a_held_run(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    gate = tmp_path / "gate"
    gate.write_text("0", encoding="utf-8")
    monkeypatch.setenv(ENV, str(gate))
    table = _table(tmp_path / "t.csv")
    db = tmp_path / "s.duckdb"
    errors: list[BaseException] = []
    with Store(db) as store:
        engine, items = _engine(store, table)
        thread = threading.Thread(
            target=lambda: _capture(errors, engine.start, items, run_id="run-paced")
        )
        thread.start()
        time.sleep(1.0)
        assert passages(gate) == 0 and store.run_progress("run-paced")["steps"] == 0
        # Question 1: its own passage, its search, then the batches of its sequential test.
        gate.write_text("3", encoding="utf-8")
        _wait(lambda: passages(gate) == 3)
        time.sleep(1.0)  # more time changes nothing: the gate holds it
        assert passages(gate) == 3
        steps = store.run_progress("run-paced")["steps"]
        assert 1 <= steps < 7, steps  # the search step and at most one batch of two
        store.request_cancel("run-paced")
        thread.join(timeout=20)
        assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], CancelledError), errors
    with Store(db) as store:
        assert store.run("run-paced")["status"] == "cancelled"
        # Resumed (another engine, as another process would): it counts on from 3.
        engine, items = _engine(store, table)
        gate.write_text("open", encoding="utf-8")
        engine.resume("run-paced", items)
        assert store.run("run-paced")["status"] == "done"
    assert passages(gate) > 3


def _capture(errors: list[BaseException], fn, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
    try:
        fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - the test reads it
        errors.append(exc)


@pytest.mark.parametrize("text", ["", "x", "-1"])
def test_an_unreadable_gate_is_closed(tmp_path, text: str) -> None:  # type: ignore[no-untyped-def]
    from eraudit_core.runs._pace_gate import _allowed

    gate = tmp_path / "gate"
    gate.write_text(text, encoding="utf-8")
    assert _allowed(gate) == 0.0
    assert _allowed(tmp_path / "missing") == 0.0
