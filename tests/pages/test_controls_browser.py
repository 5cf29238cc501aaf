"""Controls that go where they say, and a live panel a person can follow, in a real browser:

- Home's lead and the sentences under it name one pair, the one the "Here:" rule names;
- Home's "Explore the ... arm" opens the Question explorer on that arm's most severe question;
- a question of a comparison (Results) opens the Explorer on it with both runs side by side;
- the Explorer's filters and sort survive a reload (they are in the URL), the reading against
  the control and "did the adaptation take here" among them;
- the live panel's bound chart is on the first screen at 1400x900 and 390x844 and keeps its
  axes while the run advances (a table-backed audit whose pace the test sets: PaceGate).

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
    open_page,
    pick,
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
WIDE = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from eraudit_core.store import Store
    from tests._control_pair import arm_and_control
    from tests._synthetic import build_synthetic_store

    work = tmp_path_factory.mktemp("controls")
    db = work / "studio.duckdb"
    with Store(db) as store:
        info = build_synthetic_store(store, n_pairs=4, n_search=2, n_test=8)
        arm, control = arm_and_control(store, work)
    return {
        "db": str(db),
        "work": str(work),
        "honest": info.run_ids["honest"],
        "adversarial": info.run_ids["adversarial"],
        "arm": arm,  # names `control` as its control: the Explorer reads it against it
        "control": control,
    }


@pytest.fixture(scope="module")
def server(two_runs: dict[str, str]):  # type: ignore[no-untyped-def]
    with dashboard(two_runs["db"], Path(two_runs["work"]) / "streamlit.log") as url:
        yield url


def _picker_text(page, label_start: str) -> str:  # type: ignore[no-untyped-def]
    """What a selectbox shows: its text and its input's value (where versions put it)."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label_start).first
    return str(
        box.evaluate(
            "el => [el.innerText, ...[...el.querySelectorAll('input')].map(i => i.value)]"
            ".join(' | ')"
        )
    )


def test_a_question_of_a_comparison_opens_it_with_both_runs(server, two_runs, browser) -> None:  # type: ignore[no-untyped-def]
    left, right = two_runs["adversarial"], two_runs["honest"]
    page = browser.new_page(viewport=WIDE)
    open_page(page, f"{server}/results?run={left}&compare={right}", "Compare two runs side")
    link = page.locator(".eraudit-diff a").first
    link.wait_for(timeout=60_000)
    href = str(link.get_attribute("href"))
    pair = re.search(r"pair=([^&]+)", href).group(1)  # type: ignore[union-attr]
    link.click()
    page.wait_for_url(re.compile(r"/explorer\?"), timeout=60_000)
    page.get_by_text("This question in both runs").wait_for(timeout=60_000)
    settle(page)
    assert f"pair={pair}" in page.url and f"run={left}" in page.url, page.url
    both = page.locator('[data-testid="stMain"]').inner_text()
    assert left in both and right in both
    page.close()


def test_not_comparable_runs_say_why_in_words_without_disagreement_counts(
    server, two_runs, browser, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    from eraudit_core.store import Store

    # a copy of the honest run judged at another epsilon: not comparable with the others
    with Store(two_runs["db"]) as store:
        run = store.run(two_runs["honest"])
        config = {**run["config"], "epsilon": float(run["config"]["epsilon"]) * 2}
        store.create_run("run-other-eps", label="other epsilon", config=config, n_pairs=0)
        store.set_run_status("run-other-eps", "done")
    page = browser.new_page(viewport=WIDE)
    url = f"{server}/results?run={two_runs['adversarial']}&compare=run-other-eps"
    open_page(page, url, "Compare two runs side")
    page.get_by_text("cannot be compared question by question").wait_for(timeout=60_000)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "Tolerance epsilon:" in main and "Disagreements only" not in main
    assert "pool_sizes" not in main and "paraphrase_sets" not in main
    page.close()


def test_explorer_filters_and_sort_survive_a_reload(server, two_runs, browser) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport=WIDE)
    open_page(page, f"{server}/explorer?run={two_runs['adversarial']}", "Why this verdict")
    pick(page, "Sort", "largest D")
    page.wait_for_url(re.compile(r"sort=largest"), timeout=30_000)
    search = page.get_by_role("textbox", name="Search questions and rewordings")
    search.fill("ship")
    search.press("Enter")
    settle(page)
    page.wait_for_url(re.compile(r"q=ship"), timeout=30_000)
    before = page.url
    page.reload()
    page.get_by_text("Why this verdict").first.wait_for(timeout=60_000)
    settle(page)
    assert "sort=largest" in page.url and "q=ship" in page.url, (before, page.url)
    assert "largest D" in _picker_text(page, "Sort")
    end = time.time() + 20  # the input is filled by the rerun that follows the reload
    while search.input_value() != "ship" and time.time() < end:
        time.sleep(0.3)
    assert search.input_value() == "ship"
    page.close()


def test_explorer_control_and_took_filters_survive_a_reload(server, two_runs, browser) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport=WIDE)
    open_page(page, f"{server}/explorer?run={two_runs['arm']}", "Why this verdict")
    pick(page, "Sort", "lowest bound")
    page.wait_for_url(re.compile(r"sort=lowest"), timeout=30_000)
    pick(page, "Did the adaptation take on this question?", "took here")
    page.wait_for_url(re.compile(r"took=took"), timeout=30_000)
    pick(page, "Against the control", "beyond control")
    page.wait_for_url(re.compile(r"null=beyond"), timeout=30_000)
    page.keyboard.press("Escape")  # a multiselect keeps its list open after a choice
    before = page.url
    page.reload()
    page.get_by_text("Why this verdict").first.wait_for(timeout=60_000)
    settle(page)
    for param in ("took=took", "null=beyond", "sort=lowest"):
        assert param in page.url, (param, before, page.url)
    assert "took here" in _picker_text(page, "Did the adaptation take")
    assert "lowest bound" in _picker_text(page, "Sort")
    chosen = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Against the control")
    assert "beyond control" in chosen.inner_text()
    # one question of the four is beyond its control and took (tests/_control_pair.py)
    picker = _picker_text(page, "Hidden question (")
    assert "(1 of 4" in picker and "beyond control" in picker, picker
    page.close()


# -- Home (the embedded demo): one story, and Explore buttons -----------------------------------


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from tests._demo_store import demo_store_copy

    work = tmp_path_factory.mktemp("explore")
    return {"db": str(demo_store_copy(work / "studio.duckdb")), "work": str(work)}


@pytest.fixture(scope="module")
def demo_home(demo_db, browser):  # type: ignore[no-untyped-def]
    """(dashboard URL, a page on Home once its Explore buttons are drawn)."""
    log = Path(demo_db["work"]) / "streamlit.log"
    with dashboard(demo_db["db"], log, ERAUDIT_NO_DEMO="") as url:
        page = browser.new_page(viewport=WIDE)
        page.goto(url)  # Home computes the demo's tables: seconds idle, minutes at load 20
        page.get_by_role("button", name="Explore the concealed arm").wait_for(timeout=600_000)
        settle(page)
        yield url, page
        page.close()


PAIR_PATTERNS = (  # the sentences under Home's lead that name an arm and its control
    r"Here: (\S+) against its control (\S+)\.",
    r"(\S+) beside its control (\S+):",
    r"hidden questions (\S+) has accuracy [^,]+, its control (\S+) ",
)


@pytest.mark.timeout(1800)  # the demo store copy: 80-110 s idle, >600 s at load 20
def test_home_lead_and_the_sentences_under_it_name_one_pair(demo_home) -> None:  # type: ignore[no-untyped-def]
    _, page = demo_home
    main = page.locator('[data-testid="stMain"]').inner_text()
    paragraphs = [p.strip() for p in main.split("\n") if p.strip()]
    lead = paragraphs[paragraphs.index("ER-Audit Studio") + 1]
    first_section = main[: main.index("Explore the ")]
    pairs = [m.groups() for pat in PAIR_PATTERNS for m in re.finditer(pat, first_section)]
    assert len(pairs) == len(PAIR_PATTERNS) and len(set(pairs)) == 1, pairs
    arm, control = pairs[0]
    assert arm in lead and control in lead, (arm, control, lead)
    # the lead names no run of another pair on the page (the model organisms' section)
    others = {
        name for pat in PAIR_PATTERNS[:1] for m in re.finditer(pat, main) for name in m.groups()
    }
    assert others - {arm, control}, "the page names a second pair under its own rule"
    for name in others - {arm, control}:
        assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", lead), (name, lead)


@pytest.mark.timeout(1800)  # the demo store copy: 80-110 s idle, >600 s at load 20
def test_explore_opens_the_explorer_on_the_arms_most_severe_question(demo_db, demo_home) -> None:  # type: ignore[no-untyped-def]
    from eraudit_core import present
    from eraudit_core.store import Store

    with Store(demo_db["db"]) as store:
        q = present.explorer_questions(store, "demo-concealed")
        severe = present.sort_questions(q, present.SORTS[0]).iloc[0]
    _, page = demo_home
    page.get_by_role("button", name="Explore the concealed arm").click()
    page.wait_for_url(re.compile(r"/explorer\?"), timeout=60_000)
    page.get_by_text("Why this verdict").first.wait_for(timeout=60_000)
    settle(page)
    assert "run=demo-concealed" in page.url and f"pair={severe['pair_id']}" in page.url
    assert f"#{severe['pair_index']} [" in _picker_text(page, "Hidden question (")


# -- the live panel's chart ---------------------------------------------------------------------

CHART_JS = """() => {
  const gd = document.querySelector('[class*="st-key-live-"] .js-plotly-plot');
  if (!gd || !gd._fullLayout) return null;
  const r = gd.getBoundingClientRect();
  const points = (gd._fullData || []).filter(t => (t.mode || '').includes('lines') && (t.line || {}).dash !== 'dash')
    .map(t => (t.x || []).length).reduce((a, b) => a + b, 0);
  return {top: r.top, bottom: r.bottom, height: r.height, points: points,
          x: gd._fullLayout.xaxis.range, y: gd._fullLayout.yaxis.range};
}"""


def _chart_when(page, ok, timeout: float = 60.0) -> dict:  # type: ignore[no-untyped-def]
    end = time.time() + timeout
    while time.time() < end:
        state = page.evaluate(CHART_JS)
        if state and ok(state):
            return dict(state)
        time.sleep(0.3)
    raise AssertionError(f"the live chart never showed what was expected: {state}")


def test_the_live_chart_is_on_the_first_screen_and_keeps_its_axes(browser, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.pages._steady_audit import gated_dashboard_audit

    with gated_dashboard_audit(tmp_path) as (url, gate, audit):
        gate.allow(3)  # the first question, its search and one batch of its test
        gate.held()
        seen = {}
        for name, size in (("wide", WIDE), ("phone", PHONE)):
            page = browser.new_page(viewport=size)
            page.goto(f"{url}/run")
            first = _chart_when(page, lambda s: s["points"] >= 1)
            assert first["top"] >= 0 and first["bottom"] <= size["height"], (name, first)
            page.screenshot(path=str(tmp_path / f"live-{name}.png"))
            seen[name] = (page, first)
        gate.allow(2)  # two more batches: the chart grows, its axes stay
        gate.held()
        for page, first in seen.values():
            later = _chart_when(page, lambda s, f=first: s["points"] > f["points"])
            assert later["x"] == first["x"] and later["y"] == first["y"], (first, later)
            assert later["height"] == first["height"] and later["top"] == first["top"]
            page.close()
        gate.open()
        assert audit.wait(timeout=120) == 0
