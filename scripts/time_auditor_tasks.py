"""The auditor's five everyday tasks, done in a real browser and timed: how many
clicks each takes and how many seconds pass from its first click until its result is on the
screen. Headless Chromium via Playwright on the embedded demo, the dashboard started by the
browser tests' harness (tests/pages/_browser.py).

1. pick: choose the concealed arm in "Selected run" and open its Results;
2. explore: open the Question explorer, which opens on the most severe question with why it
   is degraded (the drop, the gain, the rewording beside the original wording);
3. compare: compare the concealed arm with the honest control, disagreements only;
4. share: build the HTML report and download it;
5. watch: start the one-click live audit and wait for its verdict summary (real model, CPU).

A click is one user action (a click, or a choice in an opened list); typing is not used. The
seconds include Streamlit's reruns and the browser's rendering, so they depend on the machine:
run it on an idle one. Prints a Markdown table (and JSON with --json).

    .venv/bin/python scripts/time_auditor_tasks.py [--skip-watch] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "pages"))

from _browser import chromium, dashboard, open_page, settle, shown  # noqa: E402

WAIT_MS = 180_000


class Task:
    """Counts one task's clicks and times it from the first click to its result."""

    def __init__(self, page, name: str, what: str) -> None:  # type: ignore[no-untyped-def]
        self.page, self.name, self.what = page, name, what
        self.clicks = 0
        self.t0: float | None = None
        self.seconds = float("nan")

    def click(self, locator) -> None:  # type: ignore[no-untyped-def]
        if self.t0 is None:
            self.t0 = time.monotonic()
        self.clicks += 1
        locator.click()

    def choose(self, label: str, text: str) -> None:
        """Open the selectbox `label` and choose the option containing `text` (two clicks)."""
        box = self.page.get_by_role("combobox", name=label, exact=True)
        self.click(box)
        box.press("ArrowDown")  # the list opens on the click only sometimes; not a user action
        self.click(self.page.get_by_role("option").filter(has_text=text).first)
        settle(self.page)

    def nav(self, title: str) -> None:
        sidebar = self.page.locator('[data-testid="stSidebarNav"]')
        self.click(sidebar.get_by_text(title, exact=True))

    def done_when_visible(self, text: str, timeout_ms: int = WAIT_MS) -> None:
        self.page.get_by_text(text).first.wait_for(timeout=timeout_ms)
        settle(self.page)
        self.end()

    def end(self) -> None:
        assert self.t0 is not None, f"task {self.name} never clicked"
        self.seconds = time.monotonic() - self.t0

    def row(self) -> dict:
        row = {
            "task": self.name,
            "what": self.what,
            "clicks": self.clicks,
            "seconds": round(self.seconds, 1),
        }
        print(json.dumps(row), flush=True)  # as each task ends: the live audit takes minutes
        return row


def run_tasks(url: str, runs: dict[str, str], browser, watch: bool) -> list[dict]:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    concealed, honest = runs["concealed"], runs["honest"]
    open_page(page, url, "Recent runs")
    rows = []

    t = Task(page, "pick", "choose the concealed arm and open its Results")
    t.choose("Selected run", concealed)
    t.nav("Results")
    t.done_when_visible("Compare two runs side by side")
    assert concealed in shown(page, "Left"), "Results did not open on the picked run"
    rows.append(t.row())

    t = Task(page, "explore", "open the most severe question and read why it is degraded")
    t.nav("Question explorer")
    t.done_when_visible("Original wording vs the worst rewording")
    picker = page.get_by_role("combobox", name=re.compile(r"^Hidden question \("))
    severest = str(picker.input_value())
    assert "[degraded]" in severest, f"the Explorer opened on {severest!r}"
    rows.append(t.row())

    t = Task(page, "compare", "compare with the honest control, disagreements only")
    t.nav("Results")
    page.get_by_text("Compare two runs side by side").first.wait_for(timeout=WAIT_MS)
    settle(page)
    t.choose("Right", honest)
    t.click(page.get_by_text("Disagreements only").first)
    settle(page)
    t.end()
    assert honest in shown(page, "Right")
    rows.append(t.row())

    t = Task(page, "share", "build the HTML report of the selected runs and download it")
    t.nav("Share")
    page.get_by_text("Build the report").first.wait_for(timeout=WAIT_MS)
    settle(page)
    t.click(page.get_by_role("button", name="Build the report"))
    button = page.get_by_role("button", name="Download the HTML report")
    button.wait_for(timeout=WAIT_MS)
    with page.expect_download(timeout=WAIT_MS) as download:
        t.click(button)
    saved = Path(tempfile.mkdtemp()) / "report.html"
    download.value.save_as(saved)
    t.end()
    assert saved.stat().st_size > 10_000, "the downloaded report is empty"
    rows.append(t.row())

    if watch:
        t = Task(page, "watch", "start the one-click live audit and wait for its verdicts")
        t.nav("Home")
        page.get_by_text("Run a live demo audit").first.wait_for(timeout=WAIT_MS)
        settle(page)
        t.click(page.get_by_role("button", name="Run a live demo audit"))
        done = page.get_by_text("Finished: verdicts of").or_(page.get_by_text("Stopped (failed)"))
        done.first.wait_for(timeout=60 * 60_000)
        if page.get_by_text("Stopped (failed)").count():
            main_text = page.locator('[data-testid="stMain"]').inner_text()
            raise SystemExit(f"the live audit failed:\n{main_text[-3000:]}")
        t.end()
        rows.append(t.row())
    page.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--skip-watch", action="store_true", help="leave out the live audit")
    ap.add_argument("--json", default=None, help="also write the rows here")
    args = ap.parse_args()
    from eraudit_core.demo import ensure_demo
    from eraudit_core.store import Store

    work = Path(tempfile.mkdtemp())
    db = str(work / "demo.duckdb")
    with Store(db) as store:
        runs = dict(ensure_demo(store).run_ids)
    log = work / "dashboard.log"
    with dashboard(db, log, startup_s=180, ERAUDIT_NO_DEMO="") as url, chromium() as browser:
        rows = run_tasks(url, runs, browser, watch=not args.skip_watch)
    print("| task | what | clicks | seconds |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['task']} | {r['what']} | {r['clicks']} | {r['seconds']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
