"""The auditor's day in a real browser: the defects that sent a user to the wrong
run or the wrong conclusion, each reproduced as a user meets it.

- the first pick of "Selected run" sticks, across pages;
- Results' Compare choices survive reruns;
- the one-click live demo refuses a second launch while one runs, and says which;
- the live time-left estimate never grows by more than 50% while a run advances steadily
  (a table-backed audit with a fixed delay per query, in its own process, not the model);
- a judge's citation on the Auditor-sensitivity page opens the message it cites.

Headless Chromium from Debian's `chromium` package, driven by Playwright (tests/pages/_browser.py).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.pages._browser import (
    CHROMIUM,
    ROOT,
    chromium,
    dashboard,
    nav,
    open_page,
    pick,
    settle,
    shown,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,  # a real Chromium against a real dashboard: 5-80 s each
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)",
    ),
]


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A store with three finished runs on one benchmark (two arms and a second honest run)."""
    from eraudit_core.store import Store
    from tests._synthetic import build_synthetic_store, synthetic_benchmark

    work = tmp_path_factory.mktemp("day")
    db = work / "studio.duckdb"
    with Store(db) as store:
        info = build_synthetic_store(store, n_pairs=3, n_search=2, n_test=8)
        # A second honest run under the same label, on another benchmark: only the pickers'
        # run ids (and times) tell the two apart.
        again = build_synthetic_store(
            store,
            n_pairs=3,
            n_search=2,
            n_test=8,
            arms=("honest",),
            benchmark=synthetic_benchmark(3, name="Other"),
            seed=1,
        )
    return {
        "db": str(db),
        "work": str(work),
        "honest": info.run_ids["honest"],
        "adversarial": info.run_ids["adversarial"],
        "honest2": again.run_ids["honest"],
    }


@pytest.fixture(scope="module")
def server(three_runs: dict[str, str]):  # type: ignore[no-untyped-def]
    with dashboard(three_runs["db"], Path(three_runs["work"]) / "streamlit.log") as url:
        yield url


def test_first_pick_sticks_across_pages(server: str, three_runs: dict[str, str], browser) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    open_page(page, server, "Recent runs")
    default = shown(page, "Selected run")
    target = three_runs["honest"]
    assert target not in default  # the newest run is the default; pick an older one
    pick(page, "Selected run", target)
    assert target in shown(page, "Selected run"), "the first pick did not stick"
    nav(page, "Results", "Compare two runs side by side")
    assert target in shown(page, "Selected run")
    assert target in shown(page, "Left")
    nav(page, "Share", "Runs in the report")
    assert page.url.split("?")[0].endswith("/share")
    assert target in shown(page, "Selected run")
    assert target in page.locator('[data-testid="stMultiSelect"]').first.inner_text()
    page.close()


def test_compare_choices_survive_two_reruns(
    server: str, three_runs: dict[str, str], browser
) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    open_page(page, f"{server}/results", "Compare two runs side by side")
    # The page opens on the newest run (honest2) on the left. Choose the right side first,
    # then the left: the right's choice must survive a change on the left.
    left, right = three_runs["honest"], three_runs["adversarial"]
    assert three_runs["honest2"] in shown(page, "Left")
    pick(page, "Right", right)
    # The URL changes while the rerun is still drawing the page: pick() settles first.
    page.wait_for_url(re.compile(f"compare={right}"), timeout=30_000)
    pick(page, "Left", left)
    page.wait_for_url(re.compile(f"run={left}"), timeout=30_000)
    toggle = page.get_by_text("All questions at once (simultaneous, Bonferroni alpha / N)")
    for _ in range(2):  # two reruns of the page by another widget
        toggle.click()
        settle(page)
        assert left in shown(page, "Left"), shown(page, "Left")
        assert right in shown(page, "Right"), shown(page, "Right")
    assert left in shown(page, "Selected run") and right in shown(page, "Compare with (optional)")
    page.close()


# -- the one-click live demo -------------------------------------------------------------------

DEMO_LIVE_LABEL = "live demo: concealed arm"


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The embedded demo, and a live demo audit still loading (pending, owned by this live
    process) as if a first click had started it."""
    from ui.widgets import demo_models_missing

    missing = demo_models_missing()
    if missing:
        pytest.skip(f"the one-click live audit is unavailable here: {missing}")
    from eraudit_core.demo import demo_live_config, ensure_demo
    from eraudit_core.store import Store
    from tests._demo_store import demo_store_copy

    work = tmp_path_factory.mktemp("demo")
    db = demo_store_copy(work / "studio.duckdb")
    with Store(db) as store:
        ensure_demo(store)
        store.create_run(
            "run-first-live-demo",
            label=DEMO_LIVE_LABEL,  # as the Home page's button labels its run
            config=demo_live_config().to_dict(),
            n_pairs=3,
        )
    return {"db": str(db), "work": str(work), "running": "run-first-live-demo"}


def test_second_live_demo_launch_is_refused(demo_store: dict[str, str], browser) -> None:  # type: ignore[no-untyped-def]
    from eraudit_core.store import Store

    log = Path(demo_store["work"]) / "streamlit.log"
    with dashboard(demo_store["db"], log, ERAUDIT_NO_DEMO="") as url:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        open_page(page, url, "One-click live audit")
        page.get_by_role("button", name="Run a live demo audit").click()
        page.get_by_text("already running").wait_for(timeout=30_000)
        assert page.get_by_text(demo_store["running"]).count()
        page.close()
    with Store(demo_store["db"]) as store:
        runs = store.runs()
    assert (runs["label"] == DEMO_LIVE_LABEL).sum() == 1, "a second run was started"


# -- the live view's time-left estimate ---------------------------------------------------------


def _seconds(text: str) -> float | None:
    """'1 min 05 s' / '42 s' / '1 h 02 min' -> seconds; '-' -> None."""
    parts = dict((u, int(n)) for n, u in re.findall(r"(\d+)\s*(h|min|s)\b", text))
    if not parts:
        return None
    return 3600.0 * parts.get("h", 0) + 60.0 * parts.get("min", 0) + parts.get("s", 0)


# The time left is the end of the live panel's one count, on its progress bar.
TIME_LEFT_JS = """() => {
  const p = document.querySelector('[data-testid="stProgress"]');
  const m = p ? p.innerText.match(/about (.+?) left/) : null;
  const s = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
    .find(e => e.innerText.startsWith('status:'));
  return [m ? m[1] : null, s ? s.innerText : null];
}"""


def test_time_left_never_grows_by_half_while_the_run_advances_steadily(
    browser, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from eraudit_core.store import Store
    from tests.pages._steady_audit import write_table

    db = tmp_path / "studio.duckdb"
    Store(db).close()
    table = write_table(tmp_path / "steady.csv")
    with dashboard(str(db), tmp_path / "streamlit.log") as url:
        audit = subprocess.Popen(
            [sys.executable, "-m", "tests.pages._steady_audit", str(db), str(table), "0.2"],
            cwd=ROOT,
        )  # fmt: skip
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url}/run")
            page.get_by_text("Live audit", exact=True).wait_for(timeout=60_000)
            readings: list[tuple[float, float]] = []
            t0 = time.time()
            while time.time() - t0 < 180:
                value, status = page.evaluate(TIME_LEFT_JS)
                if status and "done" in status:
                    break
                secs = _seconds(value or "")
                running = secs is not None and "running" in (status or "")
                if running and (not readings or readings[-1][1] != secs):
                    readings.append((round(time.time() - t0, 1), secs))
                time.sleep(0.5)
            assert audit.wait(timeout=120) == 0
        finally:
            if audit.poll() is None:
                audit.kill()
    assert len(readings) >= 5, readings
    # Each estimate against every earlier one (so a slow creep counts as well as a jump), with
    # 2 s of slack for the display's whole seconds and the last few seconds of the run.
    grew = [
        (a, b) for i, a in enumerate(readings) for b in readings[i + 1 :] if b[1] > 1.5 * a[1] + 2
    ]
    assert not grew, f"the estimate grew by more than half: {grew[:3]} (all: {readings})"


# -- a judge's citation opens its message --------------------------------------------------------


def test_judge_citation_opens_its_message(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "studio.duckdb"
    with dashboard(str(db), tmp_path / "streamlit.log") as url:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        open_page(page, f"{url}/sensitivity", "Auditor sensitivity")
        page.get_by_text("Bundled Petri 3 example (real format, tiny)").click()
        settle(page)
        page.get_by_text("Read what the judge wrote on rollout").first.wait_for(timeout=60_000)
        # The first highlight of the first rollout shown: open it and read the message, marked
        # as cited, among the turns around it (the transcript, not the message alone).
        citation = page.locator('[data-testid="stExpander"]').filter(has_text="(message ").first
        citation.locator("summary").click()
        role = r"\((user|assistant|system|tool)\)"
        cited = citation.get_by_text(re.compile(rf"^Message \w+ {role}, M\d+: cited$"))
        cited.first.wait_for(timeout=30_000)
        assert cited.count() == 1
        after_cited = citation.inner_text().split(": cited", 1)[1].strip()
        assert after_cited and not after_cited.startswith("(empty)"), after_cited
        around = citation.get_by_text(re.compile(rf"^M\d+ {role}$"))
        assert around.count() >= 1, citation.inner_text()
        assert citation.locator('[data-testid="stText"]').first.inner_text().strip()
        page.close()
