"""The selection in the URL and a live audit that says what it does, in a real browser:

- after a pick and a reload the same run is selected and the URL holds its id;
- a fresh session with a cancelled newest run selects the newest done run;
- opening Results leaves "Compare with" at "none";
- "Disagreements only" survives navigation;
- a "Step:" line with a growing seconds count appears within 10 s of starting the one-click
  live audit (the real demo model; the run is cancelled once the line has been read twice).

Headless Chromium from Debian's `chromium` package, driven by Playwright (tests/pages/_browser.py).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.pages._browser import (
    CHROMIUM,
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
    pytest.mark.slow,
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
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Two finished runs on one benchmark and, newest of all, a cancelled empty one."""
    from eraudit_core.store import Store
    from tests._synthetic import build_synthetic_store

    work = tmp_path_factory.mktemp("url")
    db = work / "studio.duckdb"
    with Store(db) as store:
        info = build_synthetic_store(store, n_pairs=3, n_search=2, n_test=8)
        store.create_run("run-cancelled-newest", label="live demo", config={}, n_pairs=3)
        store.set_run_status("run-cancelled-newest", "cancelled", "cancelled by the user")
    return {
        "db": str(db),
        "work": str(work),
        "honest": info.run_ids["honest"],
        "adversarial": info.run_ids["adversarial"],
    }


@pytest.fixture(scope="module")
def server(runs: dict[str, str]):  # type: ignore[no-untyped-def]
    with dashboard(runs["db"], Path(runs["work"]) / "streamlit.log") as url:
        yield url


def test_a_fresh_session_opens_the_newest_done_run_not_the_cancelled_one(
    server: str, runs: dict[str, str], browser
) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    open_page(page, server, "Recent runs")
    assert runs["adversarial"] in shown(page, "Selected run")
    assert "run-cancelled-newest" not in shown(page, "Selected run")
    assert f"run={runs['adversarial']}" in page.url
    assert page.get_by_text("A new run is in the store").count()  # offered, not chosen
    page.close()


def test_a_pick_survives_a_reload_and_the_url_holds_it(
    server: str, runs: dict[str, str], browser
) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    open_page(page, server, "Recent runs")
    pick(page, "Selected run", runs["honest"])
    page.wait_for_url(re.compile(f"run={runs['honest']}"), timeout=30_000)
    page.reload()
    page.get_by_text("Recent runs").first.wait_for(timeout=60_000)
    settle(page)
    assert runs["honest"] in shown(page, "Selected run")
    assert f"run={runs['honest']}" in page.url
    page.close()


def test_results_leaves_compare_with_at_none_and_disagreements_only_survives(
    server: str, runs: dict[str, str], browser
) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    open_page(page, server, "Recent runs")
    nav(page, "Results", "Compare two runs side by side")
    assert shown(page, "Compare with (optional)") == "none"
    assert shown(page, "Right") == "none"
    assert "compare=" not in page.url
    pick(page, "Right", runs["honest"])
    page.wait_for_url(re.compile(f"compare={runs['honest']}"), timeout=30_000)
    assert runs["honest"] in shown(page, "Right"), shown(page, "Right")
    assert runs["honest"] in shown(page, "Compare with (optional)")
    toggle = page.get_by_text(re.compile(r"^Disagreements only \("))
    toggle.click()
    settle(page)
    page.wait_for_url(re.compile("only_diff=1"), timeout=30_000)
    nav(page, "Question explorer", "Why this verdict")
    nav(page, "Results", "Compare two runs side by side")
    checked = (
        page.locator('[data-testid="stCheckbox"]')
        .filter(has_text="Disagreements only")
        .locator("input")
    )
    assert checked.is_checked(), "disagreements only switched itself off"
    assert runs["honest"] in shown(page, "Compare with (optional)")
    page.close()


# -- the one-click live audit's Step line ----------------------------------------------------------


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from ui.widgets import demo_models_missing

    missing = demo_models_missing()
    if missing:
        pytest.skip(f"the one-click live audit is unavailable here: {missing}")
    from eraudit_core.demo import ensure_demo
    from eraudit_core.store import Store
    from tests._demo_store import demo_store_copy

    work = tmp_path_factory.mktemp("step")
    db = demo_store_copy(work / "studio.duckdb")
    with Store(db) as store:
        ensure_demo(store)
    return {"db": str(db), "work": str(work)}


STEP_JS = """() => {
  const e = [...document.querySelectorAll('[data-testid="stMarkdownContainer"]')]
    .find(x => x.innerText.startsWith('Step: '));
  return e ? e.innerText : null;
}"""


def test_a_step_line_with_growing_seconds_appears_within_10_s(demo_db, browser) -> None:  # type: ignore[no-untyped-def]
    log = Path(demo_db["work"]) / "streamlit.log"
    with dashboard(demo_db["db"], log, ERAUDIT_NO_DEMO="") as url:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        open_page(page, url, "One-click live audit")
        page.get_by_role("button", name="Run a live demo audit").click()
        clicked = time.monotonic()
        readings: list[tuple[float, str]] = []
        while time.monotonic() - clicked < 10 and not readings:
            text = page.evaluate(STEP_JS)
            if text:
                readings.append((time.monotonic() - clicked, text))
            time.sleep(0.25)
        assert readings, f"no Step line within 10 s; page: {page.inner_text('body')[-2000:]}"
        time.sleep(6)
        later = page.evaluate(STEP_JS)
        assert later, "the Step line went away while the run is still loading or running"
        readings.append((time.monotonic() - clicked, later))
        seconds = [int(re.search(r"\((\d+) s\)$", t).group(1)) for _, t in readings]  # type: ignore[union-attr]
        assert seconds[1] > seconds[0], readings
        assert abs(seconds[1] - readings[1][0]) <= 5, readings  # counted from the click
        page.get_by_role("button", name="Cancel this run").click()  # free the CPU
        page.get_by_text("status: cancelled").first.wait_for(timeout=120_000)
        page.close()
