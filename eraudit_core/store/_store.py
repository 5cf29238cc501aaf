"""The DuckDB store: one file holds everything a run needs (DESIGN.md §6).

One `Store` per process and database file. DuckDB lets one process hold a file; inside it,
each thread gets its own cursor on the shared connection, writes are serialised by a lock and
wrapped in transactions, so the background audit thread writes while pages read.

The schema is versioned: `MIGRATIONS[n]` takes a database from version n-1 to n, and opening a
store applies whatever is missing, in one transaction each. A database from a newer version of
the tool is refused rather than guessed at.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pandas as pd

from eraudit_core.errors import InputError, StoreError
from eraudit_core.store._records import PairResult, StepRecord
from eraudit_core.store._schema import MIGRATIONS, RUN_STATUSES, SCHEMA_VERSION
from eraudit_core.types import BinaryQuestion, Pair, Paraphrase, QueryScore

if TYPE_CHECKING:
    from eraudit_core.store._benchmark import Benchmark


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _filtered(select: str, **equal_to: Any) -> tuple[str, list[Any]]:
    """`select` plus `WHERE col = ?` for every filter that is not None (column names are ours)."""
    used = {col: val for col, val in equal_to.items() if val is not None}
    where = " AND ".join(f"{col} = ?" for col in used)
    return (f"{select} WHERE {where}" if where else select), list(used.values())


class Store:
    """The project's only door to the database: every SQL statement lives in this class."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = duckdb.connect(self.path)
        except duckdb.IOException as exc:
            msg = str(exc)
            if "lock" in msg.lower():
                raise StoreError(
                    f"{self.path}: the database is in use by another process (a running "
                    f"dashboard or eraudit command); close it or use another --db. ({msg})"
                ) from exc
            raise StoreError(f"{self.path}: cannot open the database: {msg}") from exc
        except duckdb.Error as exc:
            raise StoreError(f"{self.path}: cannot open the database: {exc}") from exc
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._migrate()

    # -- connection plumbing -------------------------------------------------------------
    def _cursor(self) -> duckdb.DuckDBPyConnection:
        cur = getattr(self._local, "cursor", None)
        if cur is None:
            cur = self._conn.cursor()
            self._local.cursor = cur
        return cur

    @contextmanager
    def _write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction under the writer lock; rolled back whole on any error."""
        with self._write_lock:
            cur = self._cursor()
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def _df(self, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
        return self._cursor().execute(sql, list(params)).df()

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._cursor().execute(sql, list(params)).fetchall()

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema --------------------------------------------------------------------------
    def _migrate(self) -> None:
        cur = self._cursor()
        try:
            cur.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER, applied_at TIMESTAMP)"
            )
            row = cur.execute("SELECT max(version) FROM schema_version").fetchone()
        except duckdb.Error as exc:
            raise StoreError(f"{self.path}: not a usable ER-Audit database: {exc}") from exc
        current = int(row[0]) if row and row[0] is not None else 0
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {current} is newer than this tool's "
                f"({SCHEMA_VERSION}); upgrade ER-Audit Studio to open it"
            )
        for version in range(current + 1, SCHEMA_VERSION + 1):
            with self._write() as w:
                for ddl in MIGRATIONS[version]:
                    w.execute(ddl)
                w.execute("INSERT INTO schema_version VALUES (?, ?)", [version, _now()])

    def schema_version(self) -> int:
        return int(self._rows("SELECT max(version) FROM schema_version")[0][0])

    # -- benchmarks ----------------------------------------------------------------------
    def add_benchmark(self, benchmark: Benchmark) -> str:
        """Store a validated benchmark once (content-addressed); returns its id."""
        bid = benchmark.benchmark_id
        with self._write() as w:
            if w.execute("SELECT 1 FROM benchmarks WHERE benchmark_id = ?", [bid]).fetchone():
                return bid
            w.execute(
                "INSERT INTO benchmarks VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    bid,
                    benchmark.name,
                    benchmark.source,
                    benchmark.sha256,
                    benchmark.layout,
                    benchmark.attribution,
                    len(benchmark.pairs),
                    _now(),
                ],
            )
            w.executemany(
                "INSERT INTO pairs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        bid,
                        p.pair_id,
                        p.index,
                        p.story_title,
                        p.monitored.question,
                        p.monitored.true_option,
                        p.monitored.false_option,
                        p.hidden.question,
                        p.hidden.true_option,
                        p.hidden.false_option,
                        json.dumps(p.extra, ensure_ascii=False),
                    ]
                    for p in benchmark.pairs
                ],
            )
        return bid

    def benchmarks(self) -> pd.DataFrame:
        return self._df("SELECT * FROM benchmarks ORDER BY imported_at")

    def pairs(self, benchmark_id: str) -> list[Pair]:
        rows = self._rows(
            "SELECT pair_id, pair_index, story_title, monitored_question, monitored_true, "
            "monitored_false, hidden_question, hidden_true, hidden_false, extra FROM pairs "
            "WHERE benchmark_id = ? ORDER BY pair_index",
            [benchmark_id],
        )
        if not rows:
            raise InputError(f"benchmark {benchmark_id!r} is not in the store {self.path}")
        return [
            Pair(
                r[0],
                r[1],
                r[2] or "",
                BinaryQuestion(r[3], r[4], r[5]),
                BinaryQuestion(r[6], r[7], r[8]),
                json.loads(r[9]) if r[9] else {},
            )
            for r in rows
        ]

    # -- checkpoints ---------------------------------------------------------------------
    def register_checkpoint(self, fingerprint: str, name: str, details: Mapping[str, Any]) -> None:
        with self._write() as w:
            w.execute("DELETE FROM checkpoints WHERE fingerprint = ?", [fingerprint])
            w.execute(
                "INSERT INTO checkpoints VALUES (?, ?, ?, ?)",
                [fingerprint, name, json.dumps(dict(details), default=str), _now()],
            )

    def checkpoints(self) -> pd.DataFrame:
        return self._df("SELECT * FROM checkpoints ORDER BY registered_at")

    # -- paraphrases ---------------------------------------------------------------------
    def add_paraphrases(
        self,
        benchmark_id: str,
        paraphrases: Sequence[Paraphrase],
        provenance: Mapping[str, Any],
    ) -> int:
        """Store paraphrases once each; returns how many were new.

        A paraphrase already stored with the same (pair, role, generator, idx) and text is
        skipped; the same text under another role or generator is refused, which is what keeps
        search and test sets disjoint. Checked in bulk, all or nothing.
        """
        if not paraphrases:
            return 0
        frame = pd.DataFrame(
            [(p.pair_id, p.role, p.generator, int(p.idx), p.text) for p in paraphrases],
            columns=["pair_id", "role", "generator", "idx", "text"],
        ).drop_duplicates()
        slot = ["pair_id", "role", "generator", "idx"]
        for keys, what in (
            (["pair_id", "text"], "text must be unique per pair"),
            (slot, "idx must be unique per pair, role and generator"),
        ):
            dup = frame[frame.duplicated(keys, keep=False)]
            if not dup.empty:
                r = dup.iloc[0]
                raise InputError(
                    f"paraphrase of pair {r.pair_id} ({r.role}/{r.generator} #{r.idx}) clashes "
                    f"with another in the same batch; field {what}: {str(r.text)[:80]!r}"
                )
        prov = json.dumps(dict(provenance), ensure_ascii=False, default=str)
        with self._write() as w:
            w.register("_new", frame)
            try:
                rows = w.execute(
                    "SELECT n.pair_id, n.role, n.generator, n.idx, n.text, o.role, o.generator, "
                    "o.idx, o.text = n.text FROM _new n JOIN paraphrases o ON "
                    "o.benchmark_id = ? AND o.pair_id = n.pair_id AND (o.text = n.text OR "
                    "(o.role = n.role AND o.generator = n.generator AND o.idx = n.idx)) "
                    "WHERE NOT (o.text = n.text AND o.role = n.role AND "
                    "o.generator = n.generator AND o.idx = n.idx) LIMIT 1",
                    [benchmark_id],
                ).fetchall()
                if rows:
                    pid, role, gen, idx, text, o_role, o_gen, o_idx, same_text = rows[0]
                    if same_text:
                        raise InputError(
                            f"paraphrase of pair {pid} ({role}/{gen} #{idx}) is already stored "
                            f"as {o_role}/{o_gen} #{o_idx}; field text must be unique per pair: "
                            f"{str(text)[:80]!r}"
                        )
                    raise InputError(
                        f"pair {pid} already has {role}/{gen} #{idx} with other text; field idx "
                        f"must be unique per pair, role and generator"
                    )
                before = w.execute(
                    "SELECT count(*) FROM paraphrases WHERE benchmark_id = ?", [benchmark_id]
                ).fetchall()
                w.execute(
                    "INSERT INTO paraphrases SELECT ?, n.pair_id, n.role, n.generator, n.idx, "
                    "n.text, ?, ? FROM _new n WHERE NOT EXISTS (SELECT 1 FROM paraphrases o "
                    "WHERE o.benchmark_id = ? AND o.pair_id = n.pair_id AND o.text = n.text)",
                    [benchmark_id, prov, _now(), benchmark_id],
                )
                after = w.execute(
                    "SELECT count(*) FROM paraphrases WHERE benchmark_id = ?", [benchmark_id]
                ).fetchall()
            finally:
                w.unregister("_new")
        return int(after[0][0]) - int(before[0][0])

    def add_rejections(self, benchmark_id: str, rejections: Iterable[Any]) -> int:
        """Keep every rejected candidate with its reason (objects with pair_id, generator,
        text, reason attributes)."""
        rows = [
            [benchmark_id, r.pair_id, r.generator, r.text, r.reason, _now()] for r in rejections
        ]
        if rows:
            with self._write() as w:
                w.executemany("INSERT INTO paraphrase_rejections VALUES (?, ?, ?, ?, ?, ?)", rows)
        return len(rows)

    def paraphrases(
        self,
        benchmark_id: str,
        pair_id: str | None = None,
        role: str | None = None,
        generator: str | None = None,
    ) -> list[Paraphrase]:
        sql, params = _filtered(
            "SELECT pair_id, role, generator, idx, text FROM paraphrases",
            benchmark_id=benchmark_id,
            pair_id=pair_id,
            role=role,
            generator=generator,
        )
        rows = self._rows(sql + " ORDER BY pair_id, role, generator, idx", params)
        return [Paraphrase(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def paraphrase_sets(self, benchmark_id: str | None = None) -> pd.DataFrame:
        """Counts per (benchmark, role, generator): what a run can be configured with."""
        where = "WHERE benchmark_id = ?" if benchmark_id else ""
        return self._df(
            "SELECT benchmark_id, role, generator, count(DISTINCT pair_id) AS n_pairs, "
            f"count(*) AS n_paraphrases FROM paraphrases {where} "
            "GROUP BY ALL ORDER BY benchmark_id, role, generator",
            [benchmark_id] if benchmark_id else [],
        )

    def rejections(self, benchmark_id: str, pair_id: str | None = None) -> pd.DataFrame:
        sql, params = _filtered(
            "SELECT * FROM paraphrase_rejections", benchmark_id=benchmark_id, pair_id=pair_id
        )
        return self._df(sql + " ORDER BY created_at", params)

    # -- score cache ---------------------------------------------------------------------
    def cached_scores(
        self, fingerprint: str, prompt_hashes: Sequence[str]
    ) -> dict[str, QueryScore]:
        if not prompt_hashes:
            return {}
        cur = self._cursor()
        found: dict[str, QueryScore] = {}
        chunk = 1000
        for start in range(0, len(prompt_hashes), chunk):
            part = list(prompt_hashes[start : start + chunk])
            rows = cur.execute(
                "SELECT prompt_hash, p_true, l_a_true_a, l_b_true_a, l_a_true_b, l_b_true_b "
                "FROM score_cache WHERE fingerprint = ? AND list_contains(?, prompt_hash)",
                [fingerprint, part],
            ).fetchall()
            for r in rows:
                logprobs = None if r[2] is None else (r[2], r[3], r[4], r[5])
                found[r[0]] = QueryScore(r[1], logprobs)
        return found

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

    def _insert_frame(self, table: str, frame: pd.DataFrame, or_ignore: bool = False) -> None:
        """Bulk insert through DuckDB's DataFrame scan (row-by-row executemany is ~1000x slower)."""
        verb = "INSERT OR IGNORE" if or_ignore else "INSERT"
        with self._write() as w:
            w.register("_frame", frame)
            try:
                w.execute(f"{verb} INTO {table} SELECT * FROM _frame")
            finally:
                w.unregister("_frame")

    def cache_size(self, fingerprint: str | None = None) -> int:
        if fingerprint is None:
            return int(self._rows("SELECT count(*) FROM score_cache")[0][0])
        return int(
            self._rows("SELECT count(*) FROM score_cache WHERE fingerprint = ?", [fingerprint])[0][
                0
            ]
        )

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
        """Record a new run; `pre` and `post` are (fingerprint, display name); `provenance`
        says what produced it (tool version, paraphrase-set digests, draw seed)."""
        with self._write() as w:
            if w.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone():
                raise InputError(f"run {run_id!r} already exists in {self.path}")
            w.execute(
                "INSERT INTO runs (run_id, label, status, config, benchmark_id, source, "
                "pre_fingerprint, post_fingerprint, pre_name, post_name, n_pairs, created_at, "
                "provenance) VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                ],
            )

    def set_run_status(self, run_id: str, status: str, error: str | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        with self._write() as w:
            if status == "running":
                w.execute(
                    "UPDATE runs SET status = ?, error = NULL, cancel_requested = FALSE, "
                    "started_at = coalesce(started_at, ?), finished_at = NULL WHERE run_id = ?",
                    [status, _now(), run_id],
                )
            elif status in ("done", "failed", "cancelled", "interrupted"):
                w.execute(
                    "UPDATE runs SET status = ?, error = ?, finished_at = ? WHERE run_id = ?",
                    [status, error, _now(), run_id],
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
        eraudit_core.audit._traffic)."""
        with self._write() as w:
            w.execute(
                "UPDATE runs SET traffic = ? WHERE run_id = ?",
                [json.dumps(dict(traffic), default=str), run_id],
            )

    def mark_stale_runs_interrupted(self) -> list[str]:
        """Runs left 'running' by a process that died: mark them resumable, return their ids."""
        ids = [r[0] for r in self._rows("SELECT run_id FROM runs WHERE status = 'running'")]
        for run_id in ids:
            self.set_run_status(run_id, "interrupted", "the process running it stopped")
        return ids

    def runs(self) -> pd.DataFrame:
        return self._df(
            "SELECT r.*, (SELECT count(*) FROM run_pairs p WHERE p.run_id = r.run_id) "
            "AS pairs_done FROM runs r ORDER BY created_at DESC"
        )

    def run(self, run_id: str) -> dict[str, Any]:
        df = self._df("SELECT * FROM runs WHERE run_id = ?", [run_id])
        if df.empty:
            raise InputError(f"no run {run_id!r} in {self.path}")
        rec = {str(k): v for k, v in df.iloc[0].to_dict().items()}
        rec["config"] = json.loads(rec["config"])
        rec["provenance"] = json.loads(rec["provenance"]) if rec.get("provenance") else {}
        return rec

    def start_pair(self, run_id: str, pair_id: str) -> None:
        """Forget the steps of an unfinished pair so a resumed run replays it from the cache."""
        with self._write() as w:
            w.execute("DELETE FROM run_steps WHERE run_id = ? AND pair_id = ?", [run_id, pair_id])

    def add_steps(self, run_id: str, steps: Sequence[StepRecord]) -> None:
        if not steps:
            return
        frame = pd.DataFrame([asdict(s) for s in steps])
        frame.insert(0, "run_id", run_id)
        for col in ("bound", "bound_tolerant"):
            frame[col] = pd.array(frame[col].tolist(), dtype="Float64")
        frame["recorded_at"] = _now()
        cols = ["run_id", "pair_id", "stage", "generator", "t", "idx", "text", "p_pre", "p_post"]
        cols += ["d", "is_counterexample", "bound", "bound_tolerant", "recorded_at"]
        self._insert_frame("run_steps", frame[cols])

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

    def steps(self, run_id: str, pair_id: str | None = None) -> pd.DataFrame:
        sql, params = _filtered("SELECT * FROM run_steps", run_id=run_id, pair_id=pair_id)
        return self._df(sql + " ORDER BY pair_id, stage, generator, t", params)

    def latest_steps(self, run_id: str, limit: int = 500) -> pd.DataFrame:
        """The most recent stage-2 steps (for the live chart) without reading the whole run."""
        return self._df(
            "SELECT * FROM run_steps WHERE run_id = ? AND stage = 2 "
            "ORDER BY recorded_at DESC, t DESC LIMIT ?",
            [run_id, limit],
        )

    def run_progress(self, run_id: str) -> dict[str, Any]:
        row = self._rows(
            "SELECT r.status, r.n_pairs, r.started_at, r.finished_at, r.queries_scored, "
            "r.queries_cached, r.error, r.traffic, "
            "(SELECT count(*) FROM run_pairs p WHERE p.run_id = r.run_id), "
            "(SELECT count(*) FROM run_pairs p WHERE p.run_id = r.run_id AND p.status = 'degraded'), "
            "(SELECT count(*) FROM run_steps s WHERE s.run_id = r.run_id) "
            "FROM runs r WHERE r.run_id = ?",
            [run_id],
        )
        if not row:
            raise InputError(f"no run {run_id!r} in {self.path}")
        r = row[0]
        return {
            "status": r[0],
            "n_pairs": r[1],
            "started_at": r[2],
            "finished_at": r[3],
            "queries_scored": r[4],
            "queries_cached": r[5],
            "error": r[6],
            "traffic": json.loads(r[7]) if isinstance(r[7], str) else r[7],
            "pairs_done": r[8],
            "pairs_degraded": r[9],
            "steps": r[10],
        }

    def delete_run(self, run_id: str) -> None:
        with self._write() as w:
            for table in ("run_steps", "run_pairs", "runs"):
                w.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
