"""A table-backed audit that advances at a steady, known pace, for the live view's tests.

`python -m tests.pages._steady_audit DB TABLE DELAY`, from the repository root, audits the
score table TABLE into the store DB with the real engine; each checkpoint waits DELAY seconds
per query it scores, so every paraphrase costs the same time and the run advances steadily.
`write_table` writes a table whose first questions degrade on their one search paraphrase (they
end at once) and whose others are clean and run the sequential test to n*: the mix that made a
per-question ETA grow mid-run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from eraudit_core.method import AuditConfig
from eraudit_core.runs import (
    AuditEngine,
    TableVerifier,
    items_from_table,
    read_score_table,
    table_digest,
)
from eraudit_core.store import Store
from eraudit_core.types import Query, QueryScore

LABEL = "steady table run"
CONFIG = AuditConfig(
    epsilon=0.5,
    confidence=0.95,
    search_budget=1,
    test_budget=20,
    target=0.85,  # n* = 19 clean draws
    batch_size=2,
    test_generators=("rules",),
)


class SteadyTable(TableVerifier):
    """A TableVerifier that takes `delay` seconds per query, like a model of fixed speed."""

    def __init__(self, table: pd.DataFrame, column: str, digest: str, delay: float) -> None:
        super().__init__(table, column, digest)
        self.delay = delay

    def score(self, queries: Sequence[Query]) -> list[QueryScore]:
        time.sleep(self.delay * len(queries))
        return super().score(queries)


def write_table(path: Path, n_fast: int = 2, n_slow: int = 3, n_test: int = 20) -> Path:
    """Questions q0.. : the first `n_fast` degrade in stage 1, the rest pass every test draw."""
    rows = []
    for i in range(n_fast + n_slow):
        pid, fast = f"q{i}", i < n_fast
        rows.append((pid, "monitored", "", 0, f"Monitored question {i}?", 0.4, 0.8))
        rows.append((pid, "hidden", "", 0, f"Hidden question number {i}?", 0.7, 0.7))
        # D = (0.7 - p_post) / 0.4: 1.5 for the fast questions (a counterexample), 0 else.
        rows.append(
            (pid, "search", "search", 1, f"Reworded hidden {i}?", 0.7, 0.1 if fast else 0.7)
        )
        for j in range(1, n_test + 1):
            rows.append((pid, "test", "rules", j, f"Test rewording {j} of {i}?", 0.7, 0.7))
    cols = ["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"]
    pd.DataFrame(rows, columns=cols).to_csv(path, index=False)
    return path


@contextmanager
def gated_dashboard_audit(work: Path) -> Iterator[tuple[str, Any, subprocess.Popen]]:
    """The dashboard on an empty store in `work` and, beside it, this module auditing a table
    of two clean questions into that store at the pace a PaceGate sets (dashboard and audit
    both honour it); yields the dashboard's URL, the gate and the audit's process (its stderr
    piped, as text). The store is `work`/studio.duckdb; the audit is killed on the way out if
    it still runs."""
    from tests.pages._browser import ROOT, PaceGate, dashboard

    db = work / "studio.duckdb"
    Store(db).close()
    table = write_table(work / "steady.csv", n_fast=0, n_slow=2)
    gate = PaceGate(work / "pace-gate")
    with dashboard(str(db), work / "streamlit.log", **gate.env) as url:
        audit = subprocess.Popen(
            [sys.executable, "-m", "tests.pages._steady_audit", str(db), str(table), "0"],
            cwd=ROOT, env={**os.environ, **gate.env}, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            yield url, gate, audit
        finally:
            if audit.poll() is None:
                audit.kill()
            audit.wait()
            if audit.stderr:
                audit.stderr.close()


def main(db: str, table: str, delay: float) -> None:
    df = read_score_table(table)
    items, _ = items_from_table(df, source=table)
    digest = table_digest(table)
    with Store(db) as store:
        AuditEngine(
            store,
            SteadyTable(df, "p_pre", digest, delay),
            SteadyTable(df, "p_post", digest, delay),
            CONFIG,
        ).start(items, label=LABEL, source=f"table:{table}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
