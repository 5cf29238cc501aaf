"""The HTML report on a 390x844 phone in a real browser: with every folded section open, no
table and no page scrolls sideways (0 px horizontal overflow), each table row is a card whose
lines show the column's plain name (td::before from data-label); at 1400 px the tables stay
ordinary tables. One static file, no dashboard; screenshots as in _browser.screenshots."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pages._browser import CHROMIUM, chromium, screenshots

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,  # a real Chromium: about 10 s
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)",
    ),
]
PHONE, WIDE = {"width": 390, "height": 844}, {"width": 1400, "height": 900}

# Open every <details>, then measure: how far the page and each table reach past their box,
# the rightmost cell edge, and per card-table cell what its ::before shows against its label.
MEASURE_JS = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const tables = [...document.querySelectorAll('table.cards')];
  const cells = tables.flatMap(t => [...t.querySelectorAll('td')]);
  const shown = c => getComputedStyle(c, '::before').content;
  return {
    page: document.documentElement.scrollWidth - window.innerWidth,
    tables: tables.length,
    table_overflow: Math.max(0, ...tables.map(t => t.scrollWidth - t.clientWidth)),
    cell_right: Math.max(...cells.map(c => c.getBoundingClientRect().right)),
    cells: cells.length,
    mislabelled: cells.filter(c => shown(c) !== JSON.stringify(c.dataset.label)
                                   && !c.closest('table.kv')).length,
    td_display: getComputedStyle(cells[0]).display,
    thead: getComputedStyle(tables[0].querySelector('thead')).position,
  };
}"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from eraudit_core.present import build_report
    from eraudit_core.store import Store
    from tests._synthetic import build_synthetic_store

    out = tmp_path_factory.mktemp("phone") / "report.html"
    with Store() as store:
        info = build_synthetic_store(store, n_pairs=6, n_search=2, n_test=12, seed=2)
        runs = [info.run_ids["adversarial"], info.run_ids["honest"]]
        out.write_text(build_report(store, runs), encoding="utf-8")
    return out


def test_report_tables_are_cards_on_a_phone_and_tables_on_a_desktop(report: Path) -> None:
    with chromium() as browser, screenshots(report.parent / "screenshots") as shots:
        page = browser.new_page(viewport=PHONE)
        page.goto(report.as_uri(), wait_until="load", timeout=180_000)
        phone = page.evaluate(MEASURE_JS)
        print(f"\n390x844: {phone}")
        assert phone["tables"] >= 8 and phone["cells"] > 100, phone
        assert phone["page"] == 0 and phone["table_overflow"] == 0, phone
        assert phone["cell_right"] <= PHONE["width"], phone
        assert phone["td_display"] != "table-cell" and phone["thead"] == "absolute", phone
        assert phone["mislabelled"] == 0, phone
        page.locator("table.cards").first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "report-summary-390x844.png"), full_page=False)
        page.close()
        page = browser.new_page(viewport=WIDE)
        page.goto(report.as_uri(), wait_until="load", timeout=180_000)
        wide = page.evaluate(MEASURE_JS)
        print(f"1400x900: {wide}")
        assert wide["page"] == 0, wide
        assert wide["td_display"] == "table-cell" and wide["thead"] == "static", wide
        page.close()
