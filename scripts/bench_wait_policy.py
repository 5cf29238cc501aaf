"""How torch's thread count and OpenMP wait policy change the one-click audit's model time,
on an idle machine and with one core kept busy by another process.

Each trial runs the Home page's one-click audit (demo:base vs demo:concealed on the demo's
live questions, `scripts/time_live_steps.py --one`) in a fresh process on a fresh copy of a
store built by `eraudit demo` (so nothing is read from the score cache), with
OMP_NUM_THREADS and OMP_WAIT_POLICY set for that process, and reports the seconds of its
scoring steps (the forward passes and their bookkeeping, loading left out) as the worker wrote
them to the run. "Busy" trials start a process that spins on one core for the trial's length:
the dashboard's page and browser, or any other job, as the audit meets them.

The baseline is one thread, which leaves a core free whatever the wait policy: each row's
ratio is its scoring time over the baseline's in the same condition and the same run of this
script. The load average before each trial is printed beside it.

    .venv/bin/python scripts/bench_wait_policy.py --demo-store demo.duckdb
        [--conditions idle busy] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# (label, OMP_NUM_THREADS, OMP_WAIT_POLICY or None for OpenMP's default: spin, then sleep);
# the first is the baseline
SETTINGS = (
    ("1 thread", "1", None),
    ("2 threads, default wait", "2", None),
    ("2 threads, passive wait", "2", "PASSIVE"),
)
SPIN = "import time\nend = time.time() + 1e9\nwhile time.time() < end:\n    pass\n"


def scoring_seconds(steps: list[dict]) -> float:
    """Seconds of the run's scoring steps (the step log's "scoring question ..." entries)."""
    return sum(float(e["seconds"]) for e in steps if str(e["step"]).startswith("scoring"))


def trial(store: Path, threads: str, policy: str | None, busy: bool) -> dict:
    """One audit in a fresh process on a copy of `store`."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "studio.duckdb"
        shutil.copy(store, db)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))},
            "PYTHONPATH": str(ROOT),
            "HF_HUB_OFFLINE": "1",
            "OMP_NUM_THREADS": threads,
            **({"OMP_WAIT_POLICY": policy} if policy else {}),
        }
        load = os.getloadavg()[0]
        spinner = subprocess.Popen([sys.executable, "-c", SPIN]) if busy else None
        try:
            done = subprocess.run(
                [sys.executable, str(ROOT / "scripts" / "time_live_steps.py"), "--one", str(db)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    row = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "scoring_s": round(scoring_seconds(row["steps"]), 1),
        "verdicts_s": row["to_verdicts_s"],
        "paraphrases": row["paraphrases_scored"],
        "load_before": round(load, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--demo-store", required=True, help="a store built by `eraudit demo`")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--conditions", nargs="+", choices=("idle", "busy"), default=["idle", "busy"])
    args = ap.parse_args()
    store = Path(args.demo_store)
    print(f"{os.cpu_count()} CPUs")
    print(
        "| condition | torch threads, wait | scoring (s) | ratio to 1 thread | click to verdicts (s) | load before |"
    )
    print("|---|---|---:|---:|---:|---:|")
    rows = []
    for busy in (c == "busy" for c in args.conditions):
        base = None
        for label, threads, policy in SETTINGS:
            row = {"busy": busy, "setting": label, **trial(store, threads, policy, busy)}
            base = base or row["scoring_s"]
            row["ratio"] = round(row["scoring_s"] / base, 2)
            rows.append(row)
            print(
                f"| {'one core busy' if busy else 'idle'} | {label} | {row['scoring_s']} | "
                f"{row['ratio']} | {row['verdicts_s']} | {row['load_before']} |",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
