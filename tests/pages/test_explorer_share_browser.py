"""In a real browser: the Explorer opens on the most severe question and its
rewordings table needs no horizontal scroll at 1400 px; the HTML report and the Share page do
not overflow a 390 px phone. Screenshots of Explorer, Results (compare) and Share at 1400x900
and 390x844 go to a temporary directory (copied to $ERAUDIT_SCREENSHOTS when set)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.pages._browser import CHROMIUM, chromium, dashboard, screenshots, settle

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,  # a real Chromium against a real dashboard: 5-80 s each
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)",
    ),
]
WIDE, PHONE = {"width": 1400, "height": 900}, {"width": 390, "height": 844}

# the rewordings table: does it or any column head reach past its box or the window?
TABLE_FITS_JS = """() => {
  const box = document.querySelector('.eraudit-rewordings');
  if (!box) return {found: false};
  const heads = [...box.querySelectorAll('th')].map(th => th.getBoundingClientRect().right);
  return {found: true, scroll: box.scrollWidth, client: box.clientWidth,
          heads: heads.length, right: Math.max(...heads), window: window.innerWidth,
          page: document.documentElement.scrollWidth};
}"""
PAGE_WIDTH_JS = "() => document.documentElement.scrollWidth"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from eraudit_core.store import Store
    from tests._synthetic import build_synthetic_store

    work = tmp_path_factory.mktemp("i20")
    db = work / "studio.duckdb"
    store = Store(db)
    info = build_synthetic_store(store, n_pairs=6, n_search=2, n_test=12, seed=7)
    run = info.run_ids["adversarial"]
    pairs = store.pair_results(run)
    deg = pairs[pairs["status"] == "degraded"]
    from eraudit_core.present import build_report, explorer_questions, sort_questions

    # "most severe first": the largest drop on the worst rewording, amplified questions last
    severe = sort_questions(explorer_questions(store, run), "most severe first").iloc[0]

    report = work / "report.html"
    report.write_text(build_report(store, [run, info.run_ids["honest"]]), encoding="utf-8")
    store.close()
    # the test means something only if neither benchmark order nor "first degraded" starts there
    assert int(severe["pair_index"]) != int(pairs["pair_index"].min())
    assert int(severe["pair_index"]) != int(deg["pair_index"].min())
    return {
        "db": str(db),
        "run": run,
        "other": info.run_ids["honest"],
        "severe_index": str(int(severe["pair_index"])),
        "report": str(report),
        "work": str(work),
    }


@pytest.fixture(scope="module")
def server(prepared: dict[str, str]):  # type: ignore[no-untyped-def]
    with dashboard(prepared["db"], Path(prepared["work"]) / "streamlit.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def shots(prepared: dict[str, str]):  # type: ignore[no-untyped-def]
    with screenshots(Path(prepared["work"]) / "screenshots") as d:
        yield d


def _open(browser, url: str, size: dict[str, int]):  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport=size)
    page.goto(url)
    settle(page)
    return page


def test_explorer_opens_on_the_most_severe_question_and_fits_1400(browser, server, prepared, shots):  # type: ignore[no-untyped-def]
    page = _open(browser, f"{server}/explorer?run={prepared['run']}", WIDE)
    page.get_by_text("Hidden question (").first.wait_for(timeout=30_000)
    picker = page.locator('[data-testid="stSelectbox"]').filter(has_text="Hidden question (")
    want = f"#{prepared['severe_index']} ["
    deadline = time.monotonic() + 30  # the page may still be finishing its first rerun
    while True:
        chosen = picker.evaluate(  # the shown value: text, or an input's value, by version
            "el => [el.innerText, ...[...el.querySelectorAll('input')].map(i => i.value),"
            " ...[...el.querySelectorAll('[aria-selected], [value]')].map(i => i.textContent)]"
            ".join(' | ')"
        )
        if want in chosen or time.monotonic() > deadline:
            break
        settle(page)
    assert want in chosen, chosen
    deadline = time.monotonic() + 30  # the table is drawn after the picker, in the same rerun
    while not (fits := page.evaluate(TABLE_FITS_JS))["found"] and time.monotonic() < deadline:
        settle(page)
    assert fits["found"], "no rewordings table on the Explorer"
    assert fits["heads"] == 9
    assert fits["scroll"] <= fits["client"], fits
    assert fits["right"] <= fits["window"] and fits["page"] <= WIDE["width"], fits
    page.screenshot(path=str(shots / "explorer-1400x900.png"), full_page=False)
    page.locator(".eraudit-rewordings").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "explorer-table-1400x900.png"), full_page=False)
    page.close()
    phone = _open(browser, f"{server}/explorer?run={prepared['run']}", PHONE)
    phone.get_by_text("Hidden question (").first.wait_for(timeout=30_000)
    phone.screenshot(path=str(shots / "explorer-390x844.png"), full_page=False)
    phone.close()


def test_report_first_screen_and_no_overflow_at_390(browser, prepared, shots):  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport=PHONE)
    page.goto(Path(prepared["report"]).as_uri(), wait_until="load", timeout=180_000)
    width = page.evaluate(PAGE_WIDTH_JS)
    assert width <= PHONE["width"], f"report is {width} px wide on a 390 px phone"
    first = page.locator(".first").first
    assert first.bounding_box()["y"] < PHONE["height"]  # the sentence is on the first screen
    assert "the audit found" in first.inner_text()
    page.screenshot(path=str(shots / "report-390x844.png"), full_page=False)
    page.close()


def test_share_page_fits_a_phone(browser, server, prepared, shots):  # type: ignore[no-untyped-def]
    page = _open(browser, f"{server}/share?run={prepared['run']}", PHONE)
    page.get_by_text("HTML report").first.wait_for(timeout=30_000)
    width = page.evaluate(PAGE_WIDTH_JS)
    page.screenshot(path=str(shots / "share-390x844.png"), full_page=False)
    assert width <= PHONE["width"], f"Share is {width} px wide on a 390 px phone"
    first = page.get_by_text("the audit found").first
    assert first.bounding_box()["y"] < PHONE["height"]  # the sentence is on the first screen
    page.close()
    wide = _open(browser, f"{server}/share?run={prepared['run']}", WIDE)
    wide.screenshot(path=str(shots / "share-1400x900.png"), full_page=False)
    wide.close()


def test_results_compare_diff_fits(browser, server, prepared, shots):  # type: ignore[no-untyped-def]
    # Results never picks the compared run itself: the link names it
    link = f"{server}/results?run={prepared['run']}&compare={prepared['other']}"
    page = _open(browser, link, WIDE)
    diff = page.locator(".eraudit-diff")
    diff.wait_for(timeout=30_000)
    diff.scroll_into_view_if_needed()
    box = page.evaluate(
        "() => { const d = document.querySelector('.eraudit-diff');"
        " return [d.scrollWidth, d.clientWidth]; }"
    )
    assert box[0] <= box[1]
    page.screenshot(path=str(shots / "results-compare-1400x900.png"), full_page=False)
    page.close()
    phone = _open(browser, link, PHONE)
    phone.locator(".eraudit-diff").scroll_into_view_if_needed()
    phone.screenshot(path=str(shots / "results-compare-390x844.png"), full_page=False)
    phone.close()
