"""What a second process waits for the store while an audit runs.

One process audits (`eraudit audit-table` on a generated score table: no model, so it does
nothing but write to the store, batch after batch, the worst case for everyone else; or
`--workload tiny`: `eraudit audit` with the tiny random checkpoint the tests build, where
scoring leaves natural gaps). Meanwhile this process measures, on the same store:

* single store operations through the library: a read (`run_progress`) and a write
  (`register_checkpoint`), many times at random moments, idle first and then during the audit;
  the extra latency is what the other process's transactions and leases cost;
* the real CLI commands `eraudit runs`, `eraudit show RUN` and `eraudit report RUN` during the
  audit and on the idle store (wall time, Python start-up included).

    .venv/bin/python bench/shared_store.py [--pairs 60] [--samples 80] [--workload table|tiny]

Prints a table of median / p95 / max in milliseconds, and the audit's own rate of stored steps
with and without the second process reading.
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EXE = Path(sys.executable).parent / "eraudit"


def score_table(path: Path, n_pairs: int, n_test: int) -> Path:
    """Every paraphrase passes (D = 0), so each pair runs its whole stage-2 budget."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        for p in range(n_pairs):
            w.writerow([f"p{p:04d}", "monitored", "", 0, f"monitored {p}", 0.5, 0.75])
            for g in ("g1", "g2"):
                w.writerows(
                    [f"p{p:04d}", "test", g, i, f"pair {p} {g} wording {i}", 0.75, 0.75]
                    for i in range(n_test)
                )
    return path


def start_audit(work: Path, db: Path, args: argparse.Namespace) -> subprocess.Popen:
    if args.workload == "table":
        table = score_table(work / "scores.csv", args.pairs, args.tests)
        argv = ["audit-table", str(table), "--db", str(db), "--budget", str(args.tests)]
    else:
        sys.path.insert(0, str(ROOT / "tests"))
        from _synthetic import build_synthetic_store
        from _tiny_model import build_tiny_adapter, build_tiny_checkpoint

        from eraudit_core.store import Store

        with Store(db) as store:
            info = build_synthetic_store(
                store, n_pairs=args.pairs, n_search=2, n_test=args.tests, arms=()
            )
        base = build_tiny_checkpoint(work / "tiny")
        adapter = build_tiny_adapter(base, work / "adapter")
        argv = ["audit", "--db", str(db), "--benchmark", info.benchmark_id, "--pre", str(base)]
        argv += ["--post", f"{base}+{adapter}", "--epsilon", "0.9", "--k", "1"]
        argv += ["--search-budget", "2", "--budget", str(args.tests)]
    argv += ["--batch-size", str(args.batch_size)]
    return subprocess.Popen(
        [str(EXE), *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def wait_running(db: Path, proc: subprocess.Popen) -> str:
    from eraudit_core.store import Store

    while True:
        if proc.poll() is not None:
            raise SystemExit(
                f"the audit stopped early: {proc.stderr.read() if proc.stderr else ''}"
            )
        if db.exists():
            with Store(db) as store:
                runs = store.runs()
            if (
                not runs.empty
                and runs["status"].iloc[0] == "running"
                and runs["pairs_done"].iloc[0]
            ):
                return str(runs["run_id"].iloc[0])
        time.sleep(0.2)


def library_ops(
    db: Path, run_id: str, samples: int, proc: subprocess.Popen | None
) -> dict[str, list[float]]:
    """Latency of one read and one write, at random moments (ms)."""
    from eraudit_core.store import Store

    store = Store(db)
    out: dict[str, list[float]] = {"read: run_progress": [], "write: register_checkpoint": []}
    for i in range(samples):
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(random.uniform(0.0, 0.3))
        t = time.perf_counter()
        store.run_progress(run_id)
        out["read: run_progress"].append(1e3 * (time.perf_counter() - t))
        time.sleep(random.uniform(0.0, 0.3))
        t = time.perf_counter()
        store.register_checkpoint(f"bench-{i}", "bench", {})
        out["write: register_checkpoint"].append(1e3 * (time.perf_counter() - t))
    store.close()
    return out


def cli_ops(
    db: Path, run_id: str, work: Path, repeat: int, proc: subprocess.Popen | None
) -> dict[str, list[float]]:
    commands = {
        "eraudit runs": ["runs", "--db", str(db)],
        "eraudit show RUN": ["show", run_id, "--db", str(db)],
        "eraudit report RUN": [
            "report",
            run_id,
            "--db",
            str(db),
            "--out",
            str(work / "r.html"),
            "--force",
        ],
    }
    out: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, argv in commands.items():
            if proc is not None and proc.poll() is not None:
                return out
            t = time.perf_counter()
            done = subprocess.run([str(EXE), *argv], capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed: {done.stderr}")
            out[name].append(1e3 * (time.perf_counter() - t))
    return out


def steps_rate(db: Path, run_id: str, seconds: float) -> float:
    from eraudit_core.store import Store

    with Store(db) as store:
        a = store.run_progress(run_id)["steps"]
    time.sleep(seconds)
    with Store(db) as store:
        b = store.run_progress(run_id)["steps"]
    return (b - a) / seconds


def open_costs(db: Path, n: int = 40) -> dict[str, float]:
    """Median ms of the ways to reach the file once: a fresh DuckDB connection, the hub's
    ATTACH/DETACH for a read and for a small write, and a Store read inside a lease."""
    import duckdb

    from eraudit_core.store import Store

    def median_ms(f) -> float:  # type: ignore[no-untyped-def]
        ts = []
        for i in range(n):
            t = time.perf_counter()
            f(i)
            ts.append(1e3 * (time.perf_counter() - t))
        return statistics.median(ts)

    def connect(i: int) -> None:
        con = duckdb.connect(str(db), read_only=True)
        con.execute("SELECT count(*) FROM runs").fetchall()
        con.close()

    hub = duckdb.connect(":memory:")

    def attach(i: int, write: bool = False) -> None:
        hub.execute(f"ATTACH '{db}' AS s" + ("" if write else " (READ_ONLY)"))
        if write:
            hub.execute("UPDATE s.runs SET heartbeat_at = now()::TIMESTAMP WHERE false")
            hub.execute("INSERT INTO s.checkpoints VALUES (?, 'bench', '{}', now())", [f"o{i}"])
        else:
            hub.execute("SELECT count(*) FROM s.runs").fetchall()
        hub.execute("DETACH s")

    out = {
        "duckdb.connect + query + close (read-only)": median_ms(connect),
        "ATTACH (READ_ONLY) + query + DETACH": median_ms(attach),
        "ATTACH + insert + DETACH (checkpoint)": median_ms(lambda i: attach(i, True)),
    }
    hub.close()
    store = Store(db)
    run_id = str(store.runs()["run_id"].iloc[0])
    out["Store.run_progress inside a lease"] = median_ms(lambda i: store.run_progress(run_id))
    store.close()
    return out


def summary(name: str, columns: list[list[float]]) -> str:
    def stats(xs: list[float]) -> str:
        if not xs:
            return "n/a"
        xs = sorted(xs)
        p95 = xs[min(len(xs) - 1, int(0.95 * len(xs)))]
        return f"{statistics.median(xs):.0f} / {p95:.0f} / {xs[-1]:.0f}"

    return f"| {name} | " + " | ".join(stats(c) for c in columns) + f" | {len(columns[0])} |"


def measure(db: Path, run_id: str, work: Path, args: argparse.Namespace, proc) -> tuple:  # type: ignore[no-untyped-def]
    lib = library_ops(db, run_id, args.samples, proc)
    cli = cli_ops(db, run_id, work, args.cli_repeat, proc)
    if proc is not None and proc.poll() is not None:
        print("warning: the audit finished before every measurement was taken; use more --pairs")
    return lib, cli


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", choices=("table", "tiny"), default="table")
    ap.add_argument("--pairs", type=int, default=60)
    ap.add_argument("--tests", type=int, default=40, help="stage-2 paraphrases per generator")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--samples", type=int, default=60, help="library operations of each kind")
    ap.add_argument("--cli-repeat", type=int, default=3)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # 1. the audit writes to the store we measure
        db = work / "shared.duckdb"
        (work / "a").mkdir()
        proc = start_audit(work / "a", db, args)
        try:
            run_id = wait_running(db, proc)
            alone = steps_rate(db, run_id, 3.0)
            same = measure(db, run_id, work, args, proc)
            with_reader = steps_rate(db, run_id, 3.0)
        finally:
            proc.kill()
            proc.wait()
        # 2. control: the same audit on another store, so only the CPU is shared
        other = work / "other.duckdb"
        (work / "b").mkdir()
        proc = start_audit(work / "b", other, args)
        try:
            wait_running(other, proc)
            control = measure(db, run_id, work, args, proc)
        finally:
            proc.kill()
            proc.wait()
        # 3. nothing else running
        idle = measure(db, run_id, work, args, None)
        costs = open_costs(db)
    print(
        f"workload {args.workload}: {args.pairs} pairs x 2 generators x {args.tests} paraphrases, "
        f"batch size {args.batch_size}; the audit stored {alone:.0f} steps/s alone and "
        f"{with_reader:.0f} steps/s while this process read and wrote"
    )
    print(
        "| ms: median / p95 / max | idle | an audit on another store (CPU only) "
        "| the audit on this store | n |"
    )
    print("|---|---|---|---|---|")
    for part in (0, 1):
        for name in same[part]:
            cols = [idle[part][name], control[part][name], same[part][name]]
            print(summary(name, cols))
    print("\nreaching the file once (idle store), median ms:")
    for name, ms in costs.items():
        print(f"  {name}: {ms:.1f}")


if __name__ == "__main__":
    main()
