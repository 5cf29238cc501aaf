"""Where the one-click live audit's time goes, step by step (the steps its worker writes to
the run, as the live panel's "Step:" line shows them).

Runs the Home page's one-click audit (demo:base vs demo:concealed on the demo's live questions,
the same configuration) twice on a fresh copy of the embedded demo store, each in a fresh
process as a restarted dashboard would: the first registers both checkpoints, the second finds
their label mass and noise floor stored. Prints, per audit, the seconds of each step, the time
from the click to the first scored paraphrase and to the verdicts, and the machine's load
average (the numbers depend on it: run it on an idle machine for the README).

`--browser STORE` measures the same audit as a user meets it, in headless Chromium against
`streamlit run app.py` on a copy of STORE (`--browser empty` starts from an empty store, where
the app prepares the demo itself): from opening Home to its one-click button on screen, and
from the click to the first scored paraphrase (as written to the store) and to "Finished:
verdicts" on the Run page.

`--ship-registrations` runs the audit once on a fresh store and writes the two checkpoints'
registrations it measured (label mass, noise floor) to data/demo_runs/checkpoints.json, which
the demo import registers so the first click does not measure them again (delete the file
first to measure afresh).

`--separate` turns the shared trunk off (pre and post each scored through all 30 layers, as
before docs/debate-distillation.md's "One shared trunk"): the before/after of that change.

    .venv/bin/python scripts/time_live_steps.py [--runs 2] [--separate] [--json out.json]
    .venv/bin/python scripts/time_live_steps.py --browser demo.duckdb [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def one_audit(db: str, separate: bool = False) -> dict:
    """The one-click audit in this process; returns its steps and timings."""
    from eraudit_core.demo import demo_live_config, ensure_demo
    from eraudit_core.jobs import JobRunner
    from eraudit_core.runs import RunRequest, _engine, launch_audit
    from eraudit_core.store import Store

    if separate:
        _engine.shared_trunk = lambda pre, post: None  # type: ignore[assignment]
    store = Store(db)
    demo = ensure_demo(store).as_dict()
    runner = JobRunner()
    request = RunRequest(
        benchmark=demo["benchmark_id"],
        pair_ids=tuple(demo["live_pair_ids"]),
        pre_spec="demo:base",
        post_spec="demo:concealed",
        config=demo_live_config(),
        label="live demo: concealed arm",
    )
    run_id = launch_audit(store, runner, request)
    job = runner.get(run_id)
    assert job is not None
    job.thread.join()
    run = store.run(run_id)
    if run["status"] != "done":
        raise SystemExit(f"the live audit ended {run['status']}: {run.get('error')}")
    prog = store.run_progress(run_id)
    steps = store.steps(run_id, with_prompts=False)
    created = run["created_at"]
    first = steps["recorded_at"].min()
    return {
        "run_id": run_id,
        "steps": (prog.get("phase") or {}).get("log", []),
        "to_first_scored_s": round((first - created).total_seconds(), 1),
        "to_verdicts_s": round((run["finished_at"] - created).total_seconds(), 1),
        "paraphrases_scored": int(len(steps)),
    }


def browser_audit(source: str, work: Path) -> dict:
    """The one-click audit in the browser on a copy of `source` ("empty": no store)."""
    import re
    import shutil
    import time

    sys.path.insert(0, str(ROOT / "tests" / "pages"))
    from _browser import chromium, dashboard

    from eraudit_core.store import Store

    db = work / "studio.duckdb"
    if source != "empty":
        shutil.copy(source, db)
    load = os.getloadavg()
    log = work / "streamlit.log"
    with dashboard(str(db), log, startup_s=120, ERAUDIT_NO_DEMO="") as url, chromium() as b:
        page = b.new_page(viewport={"width": 1400, "height": 900})
        t0 = time.time()
        page.goto(url)
        button = page.get_by_role("button", name=re.compile(r"live (demo )?audit"))
        button.wait_for(timeout=600_000)
        home = time.time() - t0
        with Store(db) as store:
            before = set(store.runs()["run_id"])
        t1 = time.time()
        button.click()
        first = None
        done = page.get_by_text("Finished: verdicts of").or_(page.get_by_text("Stopped ("))
        while time.time() - t1 < 900:
            if first is None:
                with Store(db) as store:
                    runs = store.runs()
                    new = [r for r in runs["run_id"] if r not in before]
                    if new and store.run_progress(new[0])["steps"] > 0:
                        first = time.time() - t1
            if done.count():
                break
            time.sleep(0.25)
        verdicts = time.time() - t1
        ok = page.get_by_text("Finished: verdicts of").count() > 0
    return {
        "store": source,
        "home_ready_s": round(home, 1),
        "to_first_scored_s": None if first is None else round(first, 1),
        "to_verdicts_s": round(verdicts, 1) if ok else None,
        "load_before": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def ship_registrations(db: str) -> Path:
    """The live audit's checkpoint registrations in `db`, written where the demo ships them."""
    from eraudit_core.demo import REGISTRATIONS
    from eraudit_core.store import Store

    with Store(db) as store:
        rows = store.checkpoints()
    entries = [
        {
            "fingerprint": str(r["fingerprint"]),
            "name": str(r["name"]),
            "details": json.loads(r["details"]) if isinstance(r["details"], str) else r["details"],
        }
        for _, r in rows.iterrows()
        if r["name"] in ("demo:base", "demo:concealed")
    ]
    text = json.dumps({"checkpoints": entries}, indent=1, sort_keys=True, default=str)
    # descriptive paths only (the fingerprint decides): no worktree or home directory in them
    text = text.replace(str(ROOT) + "/", "").replace(str(Path.home()), "~")
    REGISTRATIONS.write_text(text + "\n", encoding="utf-8")
    return REGISTRATIONS


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--separate", action="store_true", help="score pre and post separately")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: one audit on this store
    ap.add_argument("--browser", help="a demo store to copy (or 'empty'): time it in Chromium")
    ap.add_argument(
        "--ship-registrations",
        action="store_true",
        help="write the measured registrations to data/demo_runs/checkpoints.json",
    )
    args = ap.parse_args()
    from eraudit_core.cores import passive_omp_wait

    passive_omp_wait()  # as the CLI and the dashboard wait: before torch loads
    if args.one:
        print(json.dumps(one_audit(args.one, args.separate)))
        return 0
    out = []
    if args.browser:
        print("| store | Home ready (s) | first scored (s) | verdicts (s) | load before |")
        print("|---|---:|---:|---:|---|")
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                row = browser_audit(args.browser, Path(tmp))
            out.append(row)
            print(
                f"| {row['store']} | {row['home_ready_s']} | {row['to_first_scored_s']} | "
                f"{row['to_verdicts_s']} | {row['load_before']} |",
                flush=True,
            )
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=2))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "studio.duckdb")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        for i in range(args.runs):
            load = os.getloadavg()
            done = subprocess.run(
                [sys.executable, __file__, "--one", db, *(["--separate"] if args.separate else [])],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row["audit"] = i + 1
            row["shared_trunk"] = not args.separate
            row["load_before"] = [round(x, 2) for x in load]
            row["load_after"] = [round(x, 2) for x in os.getloadavg()]
            out.append(row)
            if args.ship_registrations:
                print(f"wrote {ship_registrations(db)}")
                return 0
            how = "separate scoring" if args.separate else "shared trunk"
            print(
                f"\naudit {i + 1}, {how} ({os.cpu_count()} CPUs, load average before {load[0]:.1f})"
            )
            print("| step | seconds |\n|---|---:|")
            for e in row["steps"]:
                print(f"| {e['step']} | {e['seconds']:.1f} |")
            print(
                f"to the first scored paraphrase: {row['to_first_scored_s']} s; to the verdicts: "
                f"{row['to_verdicts_s']} s ({row['paraphrases_scored']} paraphrases scored)",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
