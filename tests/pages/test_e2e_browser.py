"""End to end in a real browser: start the app on loopback, run a small live audit, watch the
bound chart update, open a question by deep link, download the HTML report.

Headless Chromium from Debian's `chromium` package, driven by Playwright. The live audit uses a
tiny random Llama checkpoint and a LoRA adapter built offline (tests/_tiny_model.py) through
the real Hugging Face backend, so it exercises the same code path as the demo model in seconds.
Screenshots are written under a temporary directory (and copied to $ERAUDIT_SCREENSHOTS when
set); the path is printed.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.pages._browser import (
    CHROMIUM,
    LIVE_CHART_JS,
    PaceGate,
    chromium,
    dashboard,
    screenshots,
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


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="module")
def prepared(workdir: Path) -> dict[str, str]:
    """A store with a small benchmark, paraphrase sets and two finished runs; a tiny model."""
    from eraudit_core.store import Store
    from tests._synthetic import build_synthetic_store
    from tests._tiny_model import build_tiny_adapter, build_tiny_checkpoint

    db = workdir / "studio.duckdb"
    store = Store(db)
    info = build_synthetic_store(
        store, n_pairs=4, n_search=2, n_test=40, generators=("rules", "echo")
    )
    store.close()
    base = build_tiny_checkpoint(workdir / "tiny")
    adapter = build_tiny_adapter(base, workdir / "adapter")
    return {
        "db": str(db),
        "pre": str(base),
        "post": f"{base}+{adapter}",
        "finished_run": info.run_ids["adversarial"],
        "pair": info.pair_ids[1],
    }


@pytest.fixture(scope="module")
def gate(workdir: Path) -> PaceGate:
    """The live audit's pace: the test lets it step until the chart has changed, then opens."""
    return PaceGate(workdir / "pace-gate")


@pytest.fixture(scope="module")
def server(prepared: dict[str, str], workdir: Path, gate: PaceGate):  # type: ignore[no-untyped-def]
    with dashboard(prepared["db"], workdir / "streamlit.log", **gate.env) as url:
        yield url


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def shots(workdir: Path):  # type: ignore[no-untyped-def]
    with screenshots(workdir / "screenshots") as d:
        yield d


CLICK_TARGET_JS = """() => {
  const gd = document.querySelector('[class*="st-key-results-scatter"] .js-plotly-plot');
  if (!gd || !gd._fullLayout) return null;
  // _fullData: plotly.js has decoded the typed-array payloads there.
  const trace = gd._fullData.find(t => t.x && t.x.length && t.customdata);
  if (!trace) return null;
  const fl = gd._fullLayout, rect = gd.getBoundingClientRect();
  const x = rect.left + fl._size.l + fl.xaxis.d2p(trace.x[0]);
  const y = rect.top + fl._size.t + fl.yaxis.d2p(trace.y[0]);
  return {x: x, y: y, run: trace.customdata[0][0], pair: trace.customdata[0][1]};
}"""


def test_live_audit_deep_link_and_report(
    server: str, prepared: dict[str, str], browser, shots: Path, workdir: Path, gate: PaceGate
) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 1800}, accept_downloads=True)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    # A deep link is the very first request this fresh server sees: it must open that question
    # inside the full app (navigation and sidebar), not a bare page.
    page.goto(f"{server}/explorer?run={prepared['finished_run']}&pair={prepared['pair']}")
    page.get_by_text("Every paraphrase scored").wait_for(timeout=60_000)
    settle(page)
    assert page.get_by_text("What did the navigator of ship 1 find on the planet?").count()
    nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
    assert "Question explorer" in nav and "Home" in nav and "\napp\n" not in f"\n{nav}\n"
    assert page.get_by_text("Active store").count()
    page.screenshot(path=str(shots / "00_first_request_deep_link.png"))

    # Home shows the stored runs.
    page.goto(server)
    page.get_by_text("Recent runs").wait_for(timeout=60_000)
    settle(page)
    page.screenshot(path=str(shots / "01_home.png"))

    # Run: configure and start a live audit of all four questions with the tiny checkpoints.
    page.goto(f"{server}/run")
    page.get_by_text("Start a new audit").wait_for(timeout=60_000)
    page.get_by_role("textbox", name="Checkpoint before adaptation (pre)").fill(prepared["pre"])
    page.get_by_role("textbox", name="Checkpoint before adaptation (pre)").press("Enter")
    page.get_by_role("textbox", name="Checkpoint after adaptation (post)").fill(prepared["post"])
    page.get_by_role("textbox", name="Checkpoint after adaptation (post)").press("Enter")
    n_box = page.get_by_role("spinbutton", name="Audit the first N questions")
    n_box.fill("4")
    n_box.press("Enter")
    # Random tiny checkpoints disagree a lot: with k = 1, D is the plain drop in P(true), and
    # epsilon 0.9 lets most questions reach the sequential test, whose bound chart we watch.
    for name, value in (
        ("Tolerance epsilon", "0.9"),
        ("k (smallest gain used as denominator)", "1"),
    ):
        box = page.get_by_role("spinbutton", name=name)
        box.fill(value)
        box.press("Enter")
        settle(page)
    settle(page)
    # Random weights put almost no probability on the labels: the label-mass check (tested per
    # family in tests/verifier/test_readout.py) would refuse the tiny checkpoints.
    page.get_by_text("Advanced").first.click()
    mass = page.get_by_role("spinbutton", name=re.compile(r"^Minimum label mass"))
    mass.fill("0")
    mass.press("Enter")
    settle(page)
    page.get_by_role("textbox", name="Run label").fill("browser live run")
    page.get_by_role("textbox", name="Run label").press("Enter")
    settle(page)
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="stMetric"]')]
            .some(m => m.innerText.replace(/\\s+/g, ' ').trim() === 'questions 4')""",
        timeout=30_000,
    )
    page.screenshot(path=str(shots / "02_run_configure.png"))
    page.get_by_role("button", name="Start audit").click()

    page.get_by_text("Live audit", exact=True).wait_for(timeout=60_000)
    page.wait_for_url("**watch=run-*", timeout=30_000)
    run_id = page.url.split("watch=")[1].split("&")[0]

    # Watch the chart: record what it shows at each poll until the run is done.
    states: list[tuple[str, str]] = []
    deadline = time.time() + 600  # loading the model takes minutes on a loaded machine
    shot_taken = False
    stepped_at = 0.0
    while time.time() < deadline:
        if len(states) < 2 and time.time() - stepped_at > 5:
            gate.allow(1)  # one more step, then time for the page to draw it
            stepped_at = time.time()
        elif len(states) >= 2:
            gate.open()
        state = page.evaluate(LIVE_CHART_JS)
        if state and (not states or tuple(state) != states[-1]):
            states.append(tuple(state))
            if len(states) == 2 and not shot_taken:
                page.screenshot(path=str(shots / "03_run_live.png"))
                shot_taken = True
                # A browser reload mid-run finds the same run still going (state is in the store).
                page.reload()
                page.get_by_text("Live audit", exact=True).wait_for(timeout=60_000)
                page.get_by_text(f"({run_id})").first.wait_for(timeout=30_000)
        if page.get_by_text("status: done").count():
            break
        failed = page.get_by_text("Stopped (failed)")
        assert not failed.count(), page.locator('[data-testid="stMain"]').inner_text()[-3000:]
        time.sleep(0.3)
    assert page.get_by_text("status: done").count(), f"run did not finish; chart states {states}"
    assert len(states) >= 2, f"the live chart never updated: {states}"
    page.get_by_text("4 of 4 questions done").wait_for(timeout=30_000)
    settle(page)
    page.screenshot(path=str(shots / "04_run_done.png"))

    # Deep link to one question of the finished run.
    page.goto(f"{server}/explorer?run={run_id}&pair={prepared['pair']}")
    page.get_by_text("Every paraphrase scored").wait_for(timeout=60_000)
    settle(page)
    assert page.get_by_text("What did the navigator of ship 1 find on the planet?").count()
    page.get_by_text(f"/explorer?run={run_id}&pair={prepared['pair']}").wait_for(timeout=30_000)
    page.screenshot(path=str(shots / "05_explorer_deep_link.png"))

    # Results page with both synthetic arms and the live run.
    page.goto(f"{server}/results?run={prepared['finished_run']}")
    page.get_by_text("Compare two runs side by side").wait_for(timeout=60_000)
    settle(page)
    page.screenshot(path=str(shots / "06_results.png"))

    # Clicking a point of the per-question scatter opens that question in the explorer.
    target = page.evaluate(CLICK_TARGET_JS)
    assert target, "no scatter point to click"
    page.mouse.click(target["x"], target["y"])
    page.wait_for_url("**/explorer?*pair=*", timeout=30_000)
    page.get_by_text("Every paraphrase scored").wait_for(timeout=60_000)
    assert f"pair={target['pair']}" in page.url and f"run={target['run']}" in page.url
    page.screenshot(path=str(shots / "06b_scatter_click_opens_explorer.png"))

    # Share: build and download the report.
    page.goto(f"{server}/share?run={run_id}")
    page.get_by_role("button", name="Build the report").click()
    button = page.get_by_role("button", name="Download the HTML report")
    button.wait_for(timeout=120_000)
    with page.expect_download() as dl:
        button.click()
    out = workdir / "report.html"
    dl.value.save_as(out)
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and run_id in html and "browser live run" in html
    page.screenshot(path=str(shots / "07_share.png"))

    # The report opens offline in the same browser and draws its plots.
    offline = browser.new_page(viewport={"width": 1200, "height": 900})
    offline.route(
        "**/*", lambda r: r.abort() if not r.request.url.startswith("file:") else r.continue_()
    )
    offline.goto(out.as_uri())
    offline.wait_for_function(
        "() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 3"
    )
    offline.screenshot(path=str(shots / "08_report.png"), full_page=False)
    assert not errors, errors
