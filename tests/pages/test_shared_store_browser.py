"""The dashboard and the CLI share one store, offline (item 11).

The real dashboard runs (`streamlit run app.py`) with the store open; an audit is started
from a terminal (`eraudit audit`, the tiny checkpoint and adapter from tests/_tiny_model.py,
real Hugging Face backend). The Run page shows it live and its bound climbs; `eraudit report`
works while it runs; the browser cancels it (the CLI exits with its cancel message) and
resumes it in the dashboard, where it goes on until the browser cancels it again. Every
request the browser makes goes to the dashboard itself: the page icon ships with the app.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.pages._browser import (
    CHROMIUM,
    ROOT,
    PaceGate,
    chromium,
    dashboard,
    first_run_id,
    settle,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,  # a real Chromium against a real dashboard: 5-80 s each
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)",
    ),
]

EXE = Path(sys.executable).parent / "eraudit"

# Title, point counts and the highest paper bound of the live chart.
LIVE_BOUND_JS = """() => {
  const gd = document.querySelector('[class*="st-key-live-"] .js-plotly-plot');
  if (!gd || !gd._fullData) return null;
  const title = (gd.querySelector('.gtitle') || {}).textContent || '';
  const paper = gd._fullData.filter(t => (t.mode || '').includes('lines') && (t.line || {}).dash !== 'dash');
  const points = paper.map(t => (t.x || []).length).reduce((a, b) => a + b, 0);
  const best = Math.max(0, ...paper.map(t => Math.max(0, ...Array.from(t.y || []))));
  return [title, points, best];
}"""


def _cli(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(EXE), *argv], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from eraudit_core.store import Store
    from tests._synthetic import build_synthetic_store
    from tests._tiny_model import build_tiny_adapter, build_tiny_checkpoint

    work = tmp_path_factory.mktemp("shared")
    db = work / "studio.duckdb"
    with Store(db) as store:
        info = build_synthetic_store(
            store, n_pairs=6, n_search=2, n_test=40, generators=("rules", "echo"), arms=()
        )
    base = build_tiny_checkpoint(work / "tiny")
    adapter = build_tiny_adapter(base, work / "adapter")
    return {
        "work": str(work),
        "db": str(db),
        "benchmark": info.benchmark_id,
        "pre": str(base),
        "post": f"{base}+{adapter}",
    }


def _progress(db: str, run_id: str) -> dict:
    from eraudit_core.store import Store

    with Store(db) as store:
        return store.run_progress(run_id)


# 130 s on an idle machine; 490-620 s at load 16-25, when the dashboard's process alone takes
# minutes to load the checkpoints it resumes with
@pytest.mark.timeout(1800)
def test_terminal_audit_watched_cancelled_and_resumed_in_the_dashboard(prepared):
    work = Path(prepared["work"])
    db = prepared["db"]
    # The test sets the run's pace: the audit (in the terminal, then resumed in the dashboard)
    # takes a step only when the gate lets it, so it is still running whatever the machine.
    gate = PaceGate(work / "pace-gate")
    with dashboard(db, work / "streamlit.log", **gate.env) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        foreign: list[str] = []
        page.on(
            "request",
            lambda r: None if r.url.startswith((url, "data:", "blob:")) else foreign.append(r.url),
        )
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))

        # The dashboard opens the store (and keeps its Store object for its lifetime).
        page.goto(url)
        page.get_by_text("Recent runs").wait_for(timeout=60_000)
        settle(page)
        icons = page.evaluate(
            "() => [...document.querySelectorAll('link[rel~=icon]')].map(l => l.href)"
        )
        assert icons and all(h.startswith(url) for h in icons), icons

        # An audit started in a terminal, on the store the dashboard has open.
        t0 = time.time()
        audit = subprocess.Popen(
            [
                str(EXE), "audit", "--db", db, "--benchmark", prepared["benchmark"],
                "--pre", prepared["pre"], "--post", prepared["post"],
                "--epsilon", "0.9", "--k", "1", "--search-budget", "2", "--budget", "40",
                "--batch-size", "2", "--label", "terminal run",
                "--min-label-mass", "0",  # random weights: no mass on the labels anywhere
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, **gate.env},
        )  # fmt: skip
        try:
            run_id = first_run_id(db)

            # The Run page finds the run by itself and shows it live: the bound climbs.
            page.goto(f"{url}/run")
            page.get_by_text(f"({run_id})").wait_for(timeout=60_000)
            states: list[tuple[str, int, float]] = []
            climbed: list[tuple[tuple[str, int, float], tuple[str, int, float]]] = []
            deadline = time.time() + 900  # each step takes seconds idle, a minute at load 25
            while time.time() < deadline and audit.poll() is None:
                # One step at a time: let the engine pass, then give the page (polling every
                # few seconds) the time to draw what that step wrote.
                gate.allow(1)
                gate.held()
                shown_by = time.time() + 8
                while time.time() < shown_by:
                    state = page.evaluate(LIVE_BOUND_JS)
                    if state and (not states or tuple(state) != states[-1]):
                        states.append(tuple(state))
                        break
                    time.sleep(0.3)
                climbed = [
                    (a, b) for a in states for b in states if a[0] == b[0] and b[2] > a[2] > 0
                ]
                if climbed and len(states) >= 3:
                    break
            assert audit.poll() is None, "the terminal audit ended before the checks"
            assert climbed, f"the live bound never climbed: {states}"
            page.screenshot(path=str(work / "01_terminal_run_live.png"))

            # `eraudit report` (and `runs`) work while the audit writes and the page polls.
            report = work / "live.html"
            done = _cli("report", run_id, "--db", db, "--out", str(report))
            assert done.returncode == 0, done.stderr
            still_running = audit.poll() is None
            html = report.read_text(encoding="utf-8")
            assert run_id in html and "terminal run" in html
            listed = _cli("runs", "--db", db, "--json")
            assert listed.returncode == 0, listed.stderr
            assert json.loads(listed.stdout)[0]["status"] == "running"
            assert still_running, "the audit ended before the report was written"

            # Cancel it from the browser: the terminal process stops and says so.
            page.get_by_role("button", name="Cancel this run").click()
            out, err = audit.communicate(timeout=120)
            assert audit.returncode == 1, err
            assert "cancelled" in err and f"eraudit resume {run_id}" in err
            assert "Traceback" not in err
            page.get_by_text("status: cancelled").wait_for(timeout=60_000)
        finally:
            if audit.poll() is None:
                audit.kill()

        # Resume it from the dashboard: it goes on there (new steps, scored by the dashboard's
        # process), and the dashboard can cancel its own run too.
        steps_at_cancel = _progress(db, run_id)["steps"]
        page.goto(f"{url}/run?watch={run_id}")
        page.get_by_text("Unfinished runs").click()
        page.get_by_role("button", name="Resume").click()
        try:
            # "resuming" while the dashboard's process loads the checkpoints (minutes on a
            # loaded machine: nothing races here, the gate holds the run once it runs)
            page.get_by_text(re.compile(r"status: (resuming|running)")).wait_for(timeout=60_000)
            page.get_by_text("status: running").wait_for(timeout=600_000)
            # A resumed question is replayed from the score cache (its steps written again):
            # let it pass one step at a time until it has gone beyond where it was cancelled.
            end = time.time() + 120
            while _progress(db, run_id)["steps"] <= steps_at_cancel and time.time() < end:
                gate.allow(1)
                gate.held()
                time.sleep(0.5)
            assert _progress(db, run_id)["steps"] > steps_at_cancel, "the resumed run made no step"
            page.get_by_role("button", name="Cancel this run").click()
            page.get_by_text("status: cancelled").wait_for(timeout=120_000)
        finally:
            page.screenshot(path=str(work / "02_resumed_then_cancelled.png"), full_page=True)
        shown = _cli("show", run_id, "--db", db)
        assert shown.returncode == 0, shown.stderr
        assert "cancelled" in shown.stdout and "incomplete" in shown.stdout
        print(f"\nshared-store browser test: {time.time() - t0:.0f} s after the audit started")
        assert not foreign, f"requests left the machine: {foreign}"
        assert not errors, errors
