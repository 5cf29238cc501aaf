"""A run killed with SIGKILL mid-pair resumes to the same result without re-scoring anything
(docs/design.md §6: "nothing is lost if the worker dies mid-run")."""

from __future__ import annotations

import csv
import json
import math
import signal
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from eraudit_core.method import AuditConfig
from eraudit_core.runs import (
    AuditEngine,
    TableVerifier,
    items_from_table,
    read_score_table,
    table_digest,
)
from eraudit_core.store import Store
from eraudit_core.types import Query, QueryScore, Verifier

KILL_AT = 24  # calls 1-16 finish p1; 17-20 score p2 canonical + search; 21-24 are p2/g1 chunks:
# the kill lands between the pre and the post scoring of the same chunk
RUN_ID = "run-killed"

# The wrapper the child process uses; the parent uses the same class without a kill point.
WRAPPER = '''
import os, signal

class LoggingVerifier:
    """Appends "fingerprint prompt_hash" for every prompt it scores; SIGKILLs itself at the
    start of the kill_at-th call (counted over every instance sharing `calls`)."""

    def __init__(self, inner, log_path, calls, kill_at=None):
        self.inner, self.log_path, self.calls, self.kill_at = inner, log_path, calls, kill_at

    @property
    def fingerprint(self):
        return self.inner.fingerprint

    def score(self, queries):
        self.calls[0] += 1
        if self.kill_at is not None and self.calls[0] == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        out = self.inner.score(queries)
        with open(self.log_path, "a", encoding="utf-8") as fh:
            fh.writelines(f"{self.fingerprint} {q.prompt_hash}\\n" for q in queries)
            fh.flush()
            os.fsync(fh.fileno())
        return out
'''

CHILD = (
    WRAPPER
    + """
import json, sys
from eraudit_core.method import AuditConfig
from eraudit_core.runs import AuditEngine
from eraudit_core.store import Store
from eraudit_core.runs import TableVerifier, items_from_table, read_score_table, table_digest

table, db, log, kill_at, run_id, config_json = sys.argv[1:]
df = read_score_table(table)
items, _ = items_from_table(df)
digest = table_digest(table)
calls = [0]
pre = LoggingVerifier(TableVerifier(df, "p_pre", digest), log, calls, int(kill_at))
post = LoggingVerifier(TableVerifier(df, "p_post", digest), log, calls, int(kill_at))
store = Store(db)
AuditEngine(store, pre, post, AuditConfig.from_dict(json.loads(config_json))).start(items, run_id=run_id)
print("finished without being killed")
"""
)

namespace: dict = {}
exec(textwrap.dedent(WRAPPER), namespace)  # the same class, in this process
LoggingVerifier = namespace["LoggingVerifier"]


def _rows() -> list[list]:
    """Four pairs (den = 0.25 for all; a row with p_post = 0.75 - D/4 has score D)."""
    rows: list[list] = []

    def add(pid, role, gen, ds):
        rows.extend(
            [pid, role, gen, i, f"{pid} {role} {gen} {i}", 0.75, 0.75 - d / 4]
            for i, d in enumerate(ds)
        )

    for pid, g2 in (
        ("p1", [0.0] * 6),
        ("p2", [0.0, 0.0, 0.0, 0.5, 0.0]),
        ("p3", [0.0625] * 7),
        ("p4", [0.0] * 3),
    ):
        rows.append([pid, "monitored", "", 0, f"monitored {pid}", 0.5, 0.75])
        rows.append([pid, "hidden", "", 0, f"hidden {pid}", 0.75, 0.5])
        add(pid, "search", "s", [0.0, -0.125])
        add(pid, "test", "g1", [0.0] * 6)
        add(pid, "test", "g2", g2)
    return rows


def _write(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        for r in _rows():
            w.writerow([repr(x) if isinstance(x, float) else x for x in r])
    return path


def _summary(store: Store, run_id: str) -> dict[str, tuple]:
    def norm(v):
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else v

    df = store.pair_results(run_id)
    cols = ("status", "stage", "bound", "bound_tolerant", "n_test", "max_d", "n_counterexamples")
    return {r["pair_id"]: tuple(norm(r[c]) for c in cols) for r in df.to_dict("records")}


def test_killed_run_resumes_to_the_same_result_without_rescoring(tmp_path):
    table = _write(tmp_path / "scores.csv")
    db, log = tmp_path / "killed.duckdb", tmp_path / "scored.log"
    df = read_score_table(table)
    items, gens = items_from_table(df)
    config = AuditConfig(test_generators=gens, batch_size=2)
    digest = table_digest(table)

    # the uninterrupted reference, in its own store
    with Store(tmp_path / "reference.duckdb") as ref:
        AuditEngine(
            ref, TableVerifier(df, "p_pre", digest), TableVerifier(df, "p_post", digest), config
        ).start(items, run_id="reference")
        expected = _summary(ref, "reference")
        ref_steps = len(ref.steps("reference"))
    assert [v[0] for v in expected.values()] == ["passed", "degraded", "passed", "passed"]

    child = tmp_path / "child.py"
    child.write_text(CHILD, encoding="utf-8")
    proc = subprocess.run(
        [
            sys.executable,
            str(child),
            str(table),
            str(db),
            str(log),
            str(KILL_AT),
            RUN_ID,
            json.dumps(config.to_dict()),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert "finished without being killed" not in proc.stdout
    before = log.read_text(encoding="utf-8").splitlines()
    assert before, "the child scored nothing before it was killed"

    calls = [0]
    with Store(db) as store:
        # the dead process left the run 'running' with p1 done and p2 under way; the next
        # process reads it as interrupted (its owner is gone) and can write that down
        assert store.run(RUN_ID)["status"] == "interrupted"
        assert "stopped" in store.run(RUN_ID)["error"]
        assert store.mark_stale_runs_interrupted() == [RUN_ID]  # what the app does at start-up
        assert store.run(RUN_ID)["status"] == "interrupted"
        assert store.finished_pair_ids(RUN_ID) == {"p1"}
        assert list(store.steps(RUN_ID, "p2")["stage"]) == [1, 1, 2, 2]  # search + g1 t = 1, 2
        pre = LoggingVerifier(TableVerifier(df, "p_pre", digest), str(log), calls)
        post = LoggingVerifier(TableVerifier(df, "p_post", digest), str(log), calls)
        AuditEngine(store, pre, post, config).resume(RUN_ID, items)
        assert store.run(RUN_ID)["status"] == "done"
        assert _summary(store, RUN_ID) == expected
        assert len(store.steps(RUN_ID)) == ref_steps  # p2's partial steps were replaced
        cache_size = store.cache_size()

    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) > len(before), "the resumed run scored nothing new"
    assert calls[0] > 0
    # no (checkpoint, prompt) was scored twice across both processes, and every score is cached
    assert len(lines) == len(set(lines))
    assert len(lines) == cache_size


def test_logging_wrapper_is_a_verifier(tmp_path):
    # the wrapper must satisfy the Verifier protocol so the engine treats it like any backend
    class Fixed:
        fingerprint = "fixed"

        def score(self, queries: Sequence[Query]) -> list[QueryScore]:
            return [QueryScore(0.5) for _ in queries]

    log = tmp_path / "log"
    w = LoggingVerifier(Fixed(), str(log), [0])
    assert isinstance(w, Verifier)
    q = Query("p", "q", "a", "b")
    assert w.score([q]) == [QueryScore(0.5)]
    assert log.read_text(encoding="utf-8") == f"fixed {q.prompt_hash}\n"
