"""Runs, their per-pair results and per-step records, and who is running them.

A run records its owner (the process running it) when it is created and when it is claimed
to start or resume. Reading a run reports `interrupted`, not `running`, once its owner is gone
(`_owner.owner_alive`), whichever process reads it; `claim_run` refuses to start a run that a
live process is already running. The engine writes a batch of scores and steps, the heartbeat
and reads the cancel flag in one transaction (`record_batch`), so a running audit holds the
file once per batch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.store._owner import Owner, owner_alive
from eraudit_core.store._records import PairResult, StepRecord
from eraudit_core.store._tables import Tables, _filtered, _now
from eraudit_core.types import ACTIVE_RUN_STATUSES, QueryScore, RunStatus

STEP_COLUMNS = [
    "run_id",
    "pair_id",
    "stage",
    "generator",
    "t",
    "idx",
    "text",
    "p_pre",
    "p_post",
    "d",
    "is_counterexample",
    "bound",
    "bound_tolerant",
    "recorded_at",
    "prob_drop",
    "prompt",
]


def _owner(pid: Any, host: Any, token: Any) -> Owner | None:
    if pid is None or pd.isna(pid):
        return None
    return Owner(int(pid), str(host or ""), "" if token is None or pd.isna(token) else str(token))


def _dead_owner(status: Any, owner: Owner | None, heartbeat: Any) -> Owner | None:
    """The owner of an active run whose process is gone, else None."""
    if status not in ACTIVE_RUN_STATUSES or owner is None:
        return None
    beat = None if heartbeat is None or pd.isna(heartbeat) else pd.Timestamp(heartbeat)
    alive = owner_alive(owner, beat.to_pydatetime() if beat is not None else None, _now())
    return None if alive else owner


def _stopped(owner: Owner) -> str:
    return f"the process running it ({owner.describe()}) stopped"


# The running stretch that ends now (the parameter; NULL: at the last heartbeat, for a process
# that died), in seconds; 0 when the run was not running.
_STRETCH = "coalesce(date_diff('millisecond', resumed_at, coalesce(?, heartbeat_at)) / 1000.0, 0)"


class RunTables(Tables):
    """Run records: create, claim, record batches, finish; read with the true status."""

    # -- runs ----------------------------------------------------------------------------
    def create_run(
        self,
        run_id: str,
        *,
        label: str,
        config: Mapping[str, Any],
        n_pairs: int,
        benchmark_id: str | None = None,
        source: str = "",
        pre: tuple[str, str] = ("", ""),
        post: tuple[str, str] = ("", ""),
        provenance: Mapping[str, Any] | None = None,
    ) -> None:
        """Record a new pending run owned by this process; `pre` and `post` are
        (fingerprint, display name); `provenance` says what produced it (tool version,
        paraphrase-set digests, draw seed)."""
        me = Owner.me()
        with self._write() as w:
            if w.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone():
                raise InputError(f"run {run_id!r} already exists in {self.path}")
            w.execute(
                "INSERT INTO runs (run_id, label, status, config, benchmark_id, source, "
                "pre_fingerprint, post_fingerprint, pre_name, post_name, n_pairs, created_at, "
                "provenance, owner_pid, owner_host, owner_token, heartbeat_at) "
                "VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    run_id,
                    label,
                    json.dumps(dict(config)),
                    benchmark_id,
                    source,
                    pre[0],
                    post[0],
                    pre[1],
                    post[1],
                    n_pairs,
                    _now(),
                    json.dumps(dict(provenance or {}), ensure_ascii=False, default=str),
                    me.pid,
                    me.host,
                    me.token,
                    _now(),
                ],
            )

    def claim_run(self, run_id: str) -> None:
        """Mark a run running and owned by this process; refuse while another live process
        runs it (two processes writing one run would interleave its steps)."""
        me = Owner.me()
        with self._write() as w:
            row = w.execute(
                "SELECT status, owner_pid, owner_host, owner_token, heartbeat_at FROM runs "
                "WHERE run_id = ?",
                [run_id],
            ).fetchone()
            if row is None:
                raise InputError(f"no run {run_id!r} in {self.path}")
            owner = _owner(row[1], row[2], row[3])
            if (
                row[0] in ACTIVE_RUN_STATUSES
                and owner is not None
                and (owner.pid, owner.host) != (me.pid, me.host)
                and _dead_owner(row[0], owner, row[4]) is None
            ):
                raise InputError(
                    f"run {run_id} is being audited by {owner.describe()}; cancel it there "
                    "(or with the dashboard's Cancel button) before resuming it here"
                )
            w.execute(
                "UPDATE runs SET status = 'running', error = NULL, cancel_requested = FALSE, "
                "started_at = coalesce(started_at, ?), finished_at = NULL, owner_pid = ?, "
                "owner_host = ?, owner_token = ?, heartbeat_at = ?, "
                "active_seconds = active_seconds + " + _STRETCH + ", resumed_at = ? "
                "WHERE run_id = ?",
                [_now(), me.pid, me.host, me.token, _now(), _now(), _now(), run_id],
            )

    def set_run_status(self, run_id: str, status: str, error: str | None = None) -> None:
        if status not in tuple(RunStatus):
            raise ValueError(f"unknown run status {status!r}")
        if status == RunStatus.RUNNING:
            self.claim_run(run_id)
            return
        with self._write() as w:
            if status != RunStatus.PENDING:  # every status after running ends a stretch of work
                w.execute(
                    "UPDATE runs SET status = ?, error = ?, finished_at = ?, "
                    "active_seconds = active_seconds + " + _STRETCH + ", resumed_at = NULL "
                    "WHERE run_id = ?",
                    [status, error, _now(), _now(), run_id],
                )
            else:
                w.execute("UPDATE runs SET status = ? WHERE run_id = ?", [status, run_id])

    def set_run_checkpoints(self, run_id: str, pre_fingerprint: str, post_fingerprint: str) -> None:
        """Fill in the fingerprints of a run created before its checkpoints were loaded."""
        with self._write() as w:
            w.execute(
                "UPDATE runs SET pre_fingerprint = ?, post_fingerprint = ? WHERE run_id = ?",
                [pre_fingerprint, post_fingerprint, run_id],
            )

    def request_cancel(self, run_id: str) -> None:
        """Ask whichever process runs `run_id` to stop after its current batch."""
        with self._write() as w:
            w.execute("UPDATE runs SET cancel_requested = TRUE WHERE run_id = ?", [run_id])

    def cancel_requested(self, run_id: str) -> bool:
        rows = self._rows("SELECT cancel_requested FROM runs WHERE run_id = ?", [run_id])
        return bool(rows and rows[0][0])

    def add_query_counts(self, run_id: str, scored: int, cached: int) -> None:
        with self._write() as w:
            w.execute(
                "UPDATE runs SET queries_scored = queries_scored + ?, "
                "queries_cached = queries_cached + ? WHERE run_id = ?",
                [scored, cached, run_id],
            )

    def set_run_traffic(self, run_id: str, traffic: Mapping[str, Any]) -> None:
        """The latest traffic snapshot of a run (requests in flight, prompts/s; see
        eraudit_core.runs._traffic)."""
        with self._write() as w:
            w.execute(
                "UPDATE runs SET traffic = ? WHERE run_id = ?",
                [json.dumps(dict(traffic), default=str), run_id],
            )

    def set_run_phase(self, run_id: str, phase: Mapping[str, Any]) -> None:
        """The worker's current step and its earlier steps' durations (see
        eraudit_core.runs._step_reporter.StepReporter)."""
        with self._write() as w:
            w.execute(
                "UPDATE runs SET phase = ? WHERE run_id = ?",
                [json.dumps(dict(phase), default=str), run_id],
            )

    def record_batch(
        self,
        run_id: str,
        scores: Mapping[str, Mapping[str, QueryScore]],
        steps: Sequence[StepRecord],
    ) -> bool:
        """One batch of an audit in one transaction: fresh scores (fingerprint -> prompt hash
        -> score), its steps, the heartbeat. Returns whether a cancel was requested."""
        with self._write() as w:
            for fingerprint, by_hash in scores.items():
                self.put_scores(fingerprint, by_hash)
            self.add_steps(run_id, steps)
            w.execute("UPDATE runs SET heartbeat_at = ? WHERE run_id = ?", [_now(), run_id])
            row = w.execute(
                "SELECT cancel_requested FROM runs WHERE run_id = ?", [run_id]
            ).fetchone()
        return bool(row and row[0])

    def put_scores(self, fingerprint: str, scores: Mapping[str, QueryScore]) -> None:
        """Write scores the moment they exist: a crash right after loses nothing scored."""
        if not scores:
            return
        lp = [s.logprobs or (None, None, None, None) for s in scores.values()]
        frame = pd.DataFrame(
            {
                "fingerprint": fingerprint,
                "prompt_hash": list(scores),
                "p_true": [float(s.p_true) for s in scores.values()],
                "l_a_true_a": pd.array([x[0] for x in lp], dtype="Float64"),
                "l_b_true_a": pd.array([x[1] for x in lp], dtype="Float64"),
                "l_a_true_b": pd.array([x[2] for x in lp], dtype="Float64"),
                "l_b_true_b": pd.array([x[3] for x in lp], dtype="Float64"),
                "scored_at": _now(),
            }
        )
        self._insert_frame("score_cache", frame, or_ignore=True)

    def mark_stale_runs_interrupted(self) -> list[str]:
        """Record `interrupted` for active runs whose process is gone; returns their ids.

        Reads already report such runs as interrupted; this writes it down, so tools that read
        the file directly agree. Runs of live processes (a terminal audit) are left alone.
        """
        rows = self._rows(
            "SELECT run_id, status, owner_pid, owner_host, owner_token, heartbeat_at FROM runs "
            "WHERE status IN ('pending', 'running')"
        )
        dead: list[tuple[str, Owner]] = []
        for r in rows:
            owner = _dead_owner(r[1], _owner(r[2], r[3], r[4]), r[5])
            if owner is not None:
                dead.append((r[0], owner))
        if dead:
            with self._write() as w:
                for run_id, owner in dead:
                    w.execute(
                        "UPDATE runs SET status = 'interrupted', error = ?, finished_at = ?, "
                        "active_seconds = active_seconds + " + _STRETCH + ", resumed_at = NULL "
                        "WHERE run_id = ? AND status IN ('pending', 'running')",
                        [_stopped(owner), _now(), None, run_id],
                    )
        return [rid for rid, _ in dead]

    def _true_status(self, df: pd.DataFrame) -> pd.DataFrame:
        """Active runs whose owner died read as interrupted (with the reason as error)."""
        if df.empty or "owner_pid" not in df:
            return df
        df = df.copy()
        for i, row in df.iterrows():
            owner = _dead_owner(
                row["status"], _owner(row["owner_pid"], row["owner_host"], row["owner_token"]),
                row["heartbeat_at"],
            )  # fmt: skip
            if owner is not None:
                df.at[i, "status"] = RunStatus.INTERRUPTED
                df.at[i, "error"] = _stopped(owner)
        return df

    def runs(self) -> pd.DataFrame:
        return self._true_status(
            self._df(
                "SELECT r.*, (SELECT count(*) FROM run_pairs p WHERE p.run_id = r.run_id) "
                "AS pairs_done FROM runs r ORDER BY created_at DESC"
            )
        )

    def run(self, run_id: str) -> dict[str, Any]:
        df = self._true_status(self._df("SELECT * FROM runs WHERE run_id = ?", [run_id]))
        if df.empty:
            raise InputError(f"no run {run_id!r} in {self.path}")
        rec = {str(k): v for k, v in df.iloc[0].to_dict().items()}
        rec["config"] = json.loads(rec["config"])
        rec["provenance"] = json.loads(rec["provenance"]) if rec.get("provenance") else {}
        imported = rec.get("imported_from")
        rec["imported_from"] = json.loads(imported) if isinstance(imported, str) else None
        return rec

    def has_run(self, run_id: str) -> bool:
        return bool(self._rows("SELECT 1 FROM runs WHERE run_id = ?", [run_id]))

    def count_runs_with_inputs(self, inputs_key: str) -> int:
        """How many stored runs have these inputs (provenance `inputs_key`)."""
        rows = self._rows(
            "SELECT count(*) FROM runs WHERE json_extract_string(provenance, '$.inputs_key') = ?",
            [inputs_key],
        )
        return int(rows[0][0])

    def update_run_provenance(self, run_id: str, updates: Mapping[str, Any]) -> None:
        """Add keys to a run's provenance (e.g. the noise floor, known once checkpoints load)."""
        prov = {**self.run(run_id)["provenance"], **dict(updates)}
        with self._write() as w:
            w.execute(
                "UPDATE runs SET provenance = ? WHERE run_id = ?",
                [json.dumps(prov, ensure_ascii=False, default=str), run_id],
            )

    def put_table_rows(self, run_id: str, table: pd.DataFrame) -> None:
        """Keep every row of the score table a run audits, also rows the audit never reached
        (sweeps and calibration read them). Written once; a resumed run keeps the first copy."""
        if self._rows("SELECT 1 FROM run_table_rows WHERE run_id = ? LIMIT 1", [run_id]):
            return
        cols = ["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"]
        frame = table[cols].reset_index(drop=True).copy()
        frame.insert(0, "row_number", range(len(frame)))
        frame.insert(0, "run_id", run_id)
        frame["idx"] = frame["idx"].astype(int)
        self._insert_frame("run_table_rows", frame)

    def table_rows(self, run_id: str) -> pd.DataFrame:
        """The score-table rows of a table run in the table's order (empty for model runs)."""
        return self._df(
            "SELECT pair_id, role, generator, idx, text, p_pre, p_post FROM run_table_rows "
            "WHERE run_id = ? ORDER BY row_number",
            [run_id],
        )

    def add_calibration(
        self,
        name: str,
        run_id: str,
        n: int,
        percentiles: Mapping[str, float],
        provenance: Mapping[str, Any],
    ) -> None:
        """Store (or replace) a named epsilon calibration."""
        with self._write() as w:
            w.execute("DELETE FROM calibrations WHERE name = ?", [name])
            w.execute(
                "INSERT INTO calibrations VALUES (?, ?, ?, ?, ?, ?)",
                [
                    name,
                    run_id,
                    n,
                    json.dumps(dict(percentiles)),
                    json.dumps(dict(provenance)),
                    _now(),
                ],
            )

    def calibration(self, name: str) -> dict[str, Any]:
        df = self._df("SELECT * FROM calibrations WHERE name = ?", [name])
        if df.empty:
            raise InputError(f"no calibration {name!r} in {self.path} (eraudit calibrate-epsilon)")
        rec = {str(k): v for k, v in df.iloc[0].to_dict().items()}
        rec["percentiles"] = json.loads(rec["percentiles"])
        rec["provenance"] = json.loads(rec["provenance"]) if rec.get("provenance") else {}
        return rec

    def calibrations(self) -> pd.DataFrame:
        return self._df("SELECT * FROM calibrations ORDER BY created_at DESC")

    def start_pair(self, run_id: str, pair_id: str) -> None:
        """Forget the steps of an unfinished pair so a resumed run replays it from the cache."""
        if self._rows(
            "SELECT 1 FROM run_steps WHERE run_id = ? AND pair_id = ? LIMIT 1", [run_id, pair_id]
        ):
            with self._write() as w:
                w.execute(
                    "DELETE FROM run_steps WHERE run_id = ? AND pair_id = ?", [run_id, pair_id]
                )

    def add_steps(self, run_id: str, steps: Sequence[StepRecord]) -> None:
        if not steps:
            return
        frame = pd.DataFrame([asdict(s) for s in steps])
        frame.insert(0, "run_id", run_id)
        for col in ("bound", "bound_tolerant", "prob_drop"):
            frame[col] = pd.array(frame[col].tolist(), dtype="Float64")
        frame["prompt"] = pd.array(frame["prompt"].tolist(), dtype="string")
        frame["recorded_at"] = _now()
        self._insert_frame("run_steps", frame[STEP_COLUMNS])

    def finish_pair(self, run_id: str, result: PairResult) -> None:
        rec = asdict(result)
        rec["generators"] = json.dumps(rec["generators"])
        cols = list(rec)
        with self._write() as w:
            w.execute(
                "DELETE FROM run_pairs WHERE run_id = ? AND pair_id = ?", [run_id, result.pair_id]
            )
            w.execute(
                f"INSERT INTO run_pairs (run_id, {', '.join(cols)}, finished_at) "
                f"VALUES (?, {', '.join('?' for _ in cols)}, ?)",
                [run_id, *rec.values(), _now()],
            )

    def finished_pair_ids(self, run_id: str) -> set[str]:
        return {
            r[0] for r in self._rows("SELECT pair_id FROM run_pairs WHERE run_id = ?", [run_id])
        }

    def pair_results(self, run_id: str) -> pd.DataFrame:
        """Per-pair verdicts of a run, in benchmark order (columns of PairResult)."""
        df = self._df("SELECT * FROM run_pairs WHERE run_id = ? ORDER BY pair_index", [run_id])
        if not df.empty:
            df["generators"] = df["generators"].map(json.loads)
        return df

    def steps(
        self, run_id: str, pair_id: str | None = None, *, with_prompts: bool = True
    ) -> pd.DataFrame:
        """A run's steps in order; `with_prompts=False` leaves out the prompts the model read
        (long; a live view polling every second or two does not need them)."""
        cols = "*" if with_prompts else "* EXCLUDE (prompt)"
        sql, params = _filtered(f"SELECT {cols} FROM run_steps", run_id=run_id, pair_id=pair_id)
        return self._df(sql + " ORDER BY pair_id, stage, generator, t", params)

    def run_progress(self, run_id: str) -> dict[str, Any]:
        row = self._rows(
            "SELECT r.status, r.n_pairs, r.started_at, r.finished_at, r.queries_scored, "
            "r.queries_cached, r.error, (SELECT count(*) FROM run_pairs p WHERE p.run_id = r.run_id), "
            "(SELECT count(*) FROM run_pairs p WHERE p.run_id = r.run_id AND p.status = 'degraded'), "
            "(SELECT count(*) FROM run_steps s WHERE s.run_id = r.run_id), "
            "r.owner_pid, r.owner_host, r.owner_token, r.heartbeat_at, r.traffic, "
            "r.active_seconds, r.resumed_at, r.phase "
            "FROM runs r WHERE r.run_id = ?",
            [run_id],
        )
        if not row:
            raise InputError(f"no run {run_id!r} in {self.path}")
        r = row[0]
        status, error = r[0], r[6]
        dead = _dead_owner(status, _owner(r[10], r[11], r[12]), r[13])
        if dead is not None:
            status, error = RunStatus.INTERRUPTED, _stopped(dead)
        return {
            "status": status,
            "n_pairs": r[1],
            "started_at": r[2],
            "finished_at": r[3],
            "queries_scored": r[4],
            "queries_cached": r[5],
            "error": error,
            "traffic": json.loads(r[14]) if isinstance(r[14], str) else r[14],
            "pairs_done": r[7],
            "pairs_degraded": r[8],
            "steps": r[9],
            # Seconds the run has been running, stretches before this one (`resumed_at` is
            # set while it runs; NULL when it stopped, or was never claimed).
            "active_seconds": float(r[15] or 0.0),
            "resumed_at": r[16] if dead is None else None,
            # the worker's current step and earlier steps (None before any was reported)
            "phase": json.loads(r[17]) if isinstance(r[17], str) else r[17],
        }
