"""What the browser tests share: the real dashboard started on loopback, Debian's headless
Chromium driven by Playwright, and small helpers to read the page."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# The live panel's chart: its title and, per trace, the number of points and the last y.
LIVE_CHART_JS = """() => {
  const plot = document.querySelector('[class*="st-key-live-"] .js-plotly-plot');
  if (!plot) return null;
  const title = (plot.querySelector('.gtitle') || {}).textContent || '';
  const sizes = (plot.data || []).map(t => (t.x || []).length).join(',');
  return [title, sizes];
}"""


def browser_marks() -> list:  # type: ignore[type-arg]
    """The marks of every browser test module (its `pytestmark`)."""
    import pytest

    return [
        pytest.mark.browser,
        pytest.mark.slow,  # a real Chromium against a real dashboard: 5-80 s each
        pytest.mark.skipif(
            not Path(CHROMIUM).exists(),
            reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)",
        ),
    ]


def first_run_id(db: str, timeout: float = 120) -> str:
    """The newest run of the store at `db`, once a process auditing into it has created it."""
    from eraudit_core.store import Store

    end = time.time() + timeout
    while time.time() < end:
        with Store(db) as store:
            runs = store.runs()
        if not runs.empty:
            return str(runs["run_id"].iloc[0])
        time.sleep(0.3)
    raise AssertionError("the audit never created its run")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float = 60.0) -> None:
    end = time.time() + timeout
    while time.time() < end:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"{url} did not come up")


@contextmanager
def dashboard(db: str, log_path: Path, startup_s: float = 60.0, **env: str) -> Iterator[str]:
    """`streamlit run app.py` on a free loopback port with ERAUDIT_DB=db; yields its URL.

    The embedded demo is off unless `env` says otherwise (ERAUDIT_NO_DEMO="")."""
    port = free_port()
    full_env = {**os.environ, "ERAUDIT_DB": db, "ERAUDIT_NO_DEMO": "1", **env}
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "streamlit"),
                "run",
                str(ROOT / "app.py"),
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--server.headless",
                "true",
            ],
            cwd=ROOT,
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_http(f"http://127.0.0.1:{port}/_stcore/health", timeout=startup_s)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextmanager
def chromium() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def settle(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until the page has loaded and Streamlit has finished running the script."""
    page.wait_for_load_state("networkidle")
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000
    )


@contextmanager
def screenshots(d: Path) -> Iterator[Path]:
    """A screenshot folder; printed at the end and copied to $ERAUDIT_SCREENSHOTS when set."""
    import shutil

    d.mkdir(parents=True, exist_ok=True)
    yield d
    print(f"\nscreenshots: {d}")
    target = os.environ.get("ERAUDIT_SCREENSHOTS")
    if target:
        shutil.copytree(d, target, dirs_exist_ok=True)


# -- what a user does: pick a run, read a picker, open a page ----------------------------------


def _combobox(page, label: str):  # type: ignore[no-untyped-def]
    return page.get_by_role("combobox", name=label, exact=True)


def pick(page, label: str, run_id: str, attempts: int = 3) -> None:  # type: ignore[no-untyped-def]
    """Choose the option whose text contains `run_id` in the selectbox labelled `label`.

    A rerun that redraws the selectbox while its list is opening closes the list again, or
    drops the click on the option (seen on CI under load), so the choice is made again, up to
    `attempts` times, until the box shows it; then AssertionError with what it shows."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    option = page.get_by_role("option").filter(has_text=run_id).first
    for attempt in range(1, attempts + 1):
        settle(page)
        box = _combobox(page, label)
        box.click()
        if not option.is_visible():
            box.press("ArrowDown")  # a click on the text opens the list only sometimes
        try:
            option.click(timeout=10_000)
        except PlaywrightTimeout:
            if attempt == attempts:
                raise
            page.keyboard.press("Escape")
            continue
        settle(page)
        now = shown(page, label)
        if run_id in now or not now:  # a multiselect's input stays empty: its chips hold the choice
            return
    raise AssertionError(
        f"{label!r} shows {shown(page, label)!r} after {attempts} picks of {run_id}"
    )


def shown(page, label: str) -> str:  # type: ignore[no-untyped-def]
    """The text the selectbox labelled `label` shows."""
    return str(_combobox(page, label).input_value())


def open_page(page, url: str, marker: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(url)
    page.get_by_text(marker).first.wait_for(timeout=60_000)
    settle(page)


def nav(page, title: str, marker: str) -> None:  # type: ignore[no-untyped-def]
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    page.get_by_text(marker).first.wait_for(timeout=60_000)
    settle(page)


class PaceGate:
    """The gate a test opens to let a live audit take its next steps (the engine honours it
    when ERAUDIT_TEST_PACE_GATE names the file: eraudit_core/runs/_pace_gate.py). The test,
    not the machine's speed, decides how far the run has gone when it looks."""

    def __init__(self, path: Path) -> None:
        from eraudit_core.runs._pace_gate import ENV

        self.path = path
        self.allowed = 0
        self.env = {ENV: str(path)}
        path.write_text("0", encoding="utf-8")

    def passed(self) -> int:
        from eraudit_core.runs._pace_gate import passages

        return passages(self.path)

    def allow(self, more: int = 1) -> None:
        """Let the engine pass `more` times beyond what it has passed already."""
        self.allowed = self.passed() + more
        self.path.write_text(str(self.allowed), encoding="utf-8")

    def open(self) -> None:
        self.path.write_text("open", encoding="utf-8")

    def held(self, timeout: float = 900.0) -> None:
        """Wait until the engine has taken every passage allowed (it then waits at the gate,
        or works on the step it was let through to). Loading a model before the first
        passage takes seconds on an idle machine and minutes on a loaded one."""
        end = time.time() + timeout
        while self.passed() < self.allowed:
            if time.time() > end:
                raise AssertionError(f"the audit never reached passage {self.allowed}")
            time.sleep(0.1)
