"""The first live audit as a user meets it in the browser, timed beside the CLI doing the
same work in the same run, with the machine's load printed beside every number.

Per round: the CLI's one-click audit (`scripts/time_live_steps.py --one`, a fresh process on a
copy of the make-demo store) as the baseline, then for each store asked for (a copy of a store
built by `eraudit demo`, as `make demo` builds it, and/or an empty store, where the app
prepares the demo itself) `streamlit run app.py` on it and headless Chromium at 1400x900:

- Home ready: from opening the page to the one-click button (its label contains "live
  audit") on screen;
- first paraphrase: from the click to the live panel's count showing a scored paraphrase;
- verdicts: from the click to "Finished: verdicts" (or "Stopped (").

Both are read in the page's own clock when the page changes (`WATCH_JS`), not by polling its
text, which would lay the page out on the cores the audit scores on.

Afterwards the run is read once from the store (the benchmark never polls the store while the
audit runs: every read would take the file from the audit): the worker's steps and their
seconds, the click to the first stored paraphrase and to the run's stored end (what the page
shows later than those is the dashboard's lag), and the CPU seconds the dashboard's server and
the browser spent from the click to the verdicts (`--timeline`: second by second, the
browser, the audit's threads and the server's other threads). `--profile DIR` records the server with
py-spy (`--py-spy PATH`) during the audit, one collapsed-stack file per thread group.

    .venv/bin/python scripts/time_browser_audit.py [--stores demo empty] [--runs 2]
        [--demo-store demo.duckdb] [--no-cli] [--home-only] [--timeline] [--json out.json]
        [--profile DIR]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.pages._browser import chromium, dashboard  # noqa: E402

LIVE_BUTTON = re.compile(r"live (demo )?audit")
# The page is read when it changes, not on a timer: `innerText` lays the page out, and reading
# it five times a second cost the browser 0.047 CPU-seconds a second on Home (0.001 without),
# on the two cores the audit scores on. The watch notes when the count first shows a scored
# paraphrase and when the verdicts (or "Stopped (") show, in the page's own clock.
WATCH_JS = r"""() => {
  if (window.__eraWatch) return;
  const seen = (window.__eraWatch = { scored: null, ended: null });
  const scored = /(^|\D)[1-9][\d,]* paraphrases scored/;
  const ended = /Finished: verdicts of|Stopped \(/;
  let queued = false;
  const look = () => {
    queued = false;
    const text = document.body.innerText;
    const now = performance.now();
    if (seen.scored === null && scored.test(text)) seen.scored = now;
    if (seen.ended === null && ended.test(text)) seen.ended = now;
  };
  new MutationObserver(() => {
    if (!queued) { queued = true; setTimeout(look, 50); }
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
}"""
SCORED_JS = "() => window.__eraWatch.scored !== null"
ENDED_JS = "() => window.__eraWatch.ended !== null"
WAIT_MS = 900_000


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def build_demo_store(path: Path) -> None:
    """What `make demo` runs: `eraudit demo --db PATH`."""
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from eraudit_core.cli import main; raise SystemExit(main())",
            "demo",
            "--db",
            str(path),
        ],
        env=env(),
        check=True,
        capture_output=True,
    )


def cli_audit(demo_store: Path, work: Path) -> dict:
    """The CLI's one-click audit in a fresh process on a copy of the demo store."""
    db = work / "cli.duckdb"
    shutil.copy(demo_store, db)
    before = load()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "time_live_steps.py"), "--one", str(db)],
        env=env(),
        capture_output=True,
        text=True,
        check=True,
    )
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    row = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "what": "cli",
        "cpu_server_s": round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 1),
        "to_first_scored_s": row["to_first_scored_s"],
        "to_verdicts_s": row["to_verdicts_s"],
        "steps": row["steps"],
        "load_before": before,
        "load_after": load(),
    }


def _server(port: int) -> psutil.Process:
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if "--server.port" in cmd and str(port) in cmd:
            return proc
    raise SystemExit(f"no dashboard process listens on port {port}")


def _cpu(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def _browser_procs() -> list[psutil.Process]:
    return [
        p for p in psutil.Process().children(recursive=True) if "chrom" in (p.name() or "").lower()
    ]


class Timeline:
    """Each second from the click to the verdicts: the CPU seconds of the browser, of the
    server's two busiest threads (the audit's, as torch runs it) and of the server's other
    threads. Shows what each refresh of the page costs the cores the audit scores on."""

    def __init__(self, server: psutil.Process) -> None:
        self.server = server
        self.rows: list[dict] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _snap(self) -> tuple[dict[int, float], float]:
        try:
            threads = {t.id: t.user_time + t.system_time for t in self.server.threads()}
        except psutil.Error:
            threads = {}
        return threads, _cpu(_browser_procs())

    def _run(self) -> None:
        t0 = time.monotonic()
        prev = self._snap()
        while not self._stop.wait(1.0):
            cur = self._snap()
            used = sorted((v - prev[0].get(k, 0.0) for k, v in cur[0].items()), reverse=True)
            self.rows.append(
                {
                    "s": round(time.monotonic() - t0, 1),
                    "browser": round(cur[1] - prev[1], 2),
                    "audit_threads": round(sum(used[:2]), 2),
                    "other_threads": round(sum(used[2:]), 2),
                }
            )
            prev = cur

    def start(self) -> Timeline:
        self._thread.start()
        return self

    def stop(self) -> list[dict]:
        self._stop.set()
        self._thread.join()
        return self.rows


def _profiler(py_spy: str, pid: int, out: Path, seconds: int) -> subprocess.Popen:
    return subprocess.Popen(
        [
            py_spy,
            "record",
            "--pid",
            str(pid),
            "--format",
            "raw",
            "--threads",
            "--rate",
            "20",
            "--nonblocking",
            "--duration",
            str(seconds),
            "--output",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _stored_run(db: Path, clicked: dt.datetime) -> dict:
    """The live audit as the store recorded it, read once after it ended."""
    from eraudit_core.store import Store

    with Store(str(db)) as store:
        runs = store.runs()
        run_id = str(runs[runs["label"].str.startswith("live demo")]["run_id"].iloc[0])
        run = store.run(run_id)
        steps = store.steps(run_id, with_prompts=False)
        phase = store.run_progress(run_id).get("phase") or {}
    first = steps["recorded_at"].min() if not steps.empty else None
    ended = run.get("finished_at")

    def since_click(t: dt.datetime | None) -> float | None:
        return None if t is None else round((t - clicked).total_seconds(), 1)

    return {
        "run_id": run_id,
        "click_to_record_s": since_click(run["created_at"]),
        "stored_first_scored_s": since_click(first),
        "stored_verdicts_s": since_click(ended),
        "steps": phase.get("log", []),
    }


def browser_audit(source: str, demo_store: Path | None, work: Path, args) -> dict:  # type: ignore[no-untyped-def]
    """Home, the click and the live panel in Chromium against a dashboard on a copy of the
    demo store (`source` "demo") or on an empty store ("empty")."""
    db = work / "studio.duckdb"
    if source == "demo":
        assert demo_store is not None
        shutil.copy(demo_store, db)
    row: dict = {"what": f"browser, {source} store", "load_before": load()}
    log = work / "streamlit.log"
    with dashboard(str(db), log, startup_s=300, ERAUDIT_NO_DEMO="") as url, chromium() as b:
        server = _server(int(url.rsplit(":", 1)[1]))
        page = b.new_page(viewport={"width": 1400, "height": 900})
        t0 = time.monotonic()
        page.goto(url)
        button = page.get_by_role("button", name=LIVE_BUTTON)
        button.wait_for(timeout=WAIT_MS)
        row["home_ready_s"] = round(time.monotonic() - t0, 1)
        if args.home_only:
            row["load_after"] = load()
            return row
        if args.read_s:
            time.sleep(args.read_s)
        prof = None
        if args.profile:
            out = Path(args.profile) / f"{source}-{dt.datetime.now():%H%M%S}.txt"
            out.parent.mkdir(parents=True, exist_ok=True)
            prof = _profiler(args.py_spy, server.pid, out, args.profile_s)
            row["profile"] = str(out)
        page.evaluate(WATCH_JS)
        cpu0 = (_cpu([server]), _cpu(_browser_procs()))
        clicked = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        timeline = Timeline(server).start() if args.timeline else None
        t1 = page.evaluate("performance.now()")
        button.click()
        page.wait_for_function(SCORED_JS, timeout=WAIT_MS, polling=200)
        page.wait_for_function(ENDED_JS, timeout=WAIT_MS, polling=200)
        seen = page.evaluate("window.__eraWatch")
        row["to_first_scored_s"] = round((seen["scored"] - t1) / 1000, 1)
        verdicts = round((seen["ended"] - t1) / 1000, 1)
        ok = page.get_by_text("Finished: verdicts of").count() > 0
        row["to_verdicts_s"] = verdicts if ok else None
        row["cpu_server_s"] = round(_cpu([server]) - cpu0[0], 1)
        row["cpu_browser_s"] = round(_cpu(_browser_procs()) - cpu0[1], 1)
        if timeline is not None:
            row["timeline"] = timeline.stop()
        if prof is not None:
            prof.send_signal(2)  # py-spy writes its file on SIGINT
            prof.wait(timeout=60)
    row["load_after"] = load()
    row.update(_stored_run(db, clicked))
    return row


def show(row: dict) -> None:
    cells = [
        row["what"],
        row.get("home_ready_s", "-"),
        row.get("to_first_scored_s"),
        row.get("to_verdicts_s"),
        row.get("cpu_server_s", "-"),
        row.get("cpu_browser_s", "-"),
        row["load_before"][0],
        row["load_after"][0],
    ]
    print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)
    steps = ", ".join(f"{e['step']} {e['seconds']:.1f}" for e in row.get("steps", []))
    print(f"|   steps: {steps} |||||||", flush=True)
    for sec in row.get("timeline", []):
        print(
            f"|   {sec['s']:5.1f} s: browser {sec['browser']:.2f}, audit threads "
            f"{sec['audit_threads']:.2f}, other server threads {sec['other_threads']:.2f} |||||||"
        )
    if row.get("stored_verdicts_s") is not None:
        print(
            f"|   in the store: first paraphrase {row.get('stored_first_scored_s')} s, "
            f"verdicts {row['stored_verdicts_s']} s after the click |||||||",
            flush=True,
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stores", nargs="+", choices=("demo", "empty"), default=["demo", "empty"])
    ap.add_argument("--runs", type=int, default=2, help="rounds (default 2)")
    ap.add_argument("--demo-store", help="a store built by `eraudit demo` (else built here)")
    ap.add_argument("--no-cli", action="store_true", help="leave out the CLI baseline")
    ap.add_argument(
        "--read-s", type=float, default=0.0, help="seconds Home is read before the click"
    )
    ap.add_argument(
        "--home-only", action="store_true", help="time Home ready only (no click, no audit)"
    )
    ap.add_argument(
        "--timeline", action="store_true", help="CPU seconds per second after the click"
    )
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--profile", help="record the dashboard with py-spy into this folder")
    ap.add_argument("--profile-s", type=int, default=120, help="seconds py-spy records")
    ap.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        demo_store = Path(args.demo_store) if args.demo_store else None
        if demo_store is None and ("demo" in args.stores or not args.no_cli):
            demo_store = Path(tmp) / "demo.duckdb"
            build_demo_store(demo_store)
        print(f"{os.cpu_count()} CPUs, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
        print(
            "| what | Home ready (s) | click to first paraphrase (s) | click to verdicts (s) "
            "| server CPU (s) | browser CPU (s) | load before | load after |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for _ in range(args.runs):
            if not args.no_cli:
                assert demo_store is not None
                with tempfile.TemporaryDirectory() as work:
                    rows.append(cli_audit(demo_store, Path(work)))
                show(rows[-1])
            for source in args.stores:
                with tempfile.TemporaryDirectory() as work:
                    rows.append(browser_audit(source, demo_store, Path(work), args))
                show(rows[-1])
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
