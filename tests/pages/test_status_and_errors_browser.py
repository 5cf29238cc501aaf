"""What a person sees change, in a real browser, after they act:

- Cancel and Resume change what the sidebar's run picker and the live panel say within 2 s
  (a table-backed audit whose pace the test sets with PaceGate, so the run is still going
  whatever the machine's speed when the test clicks);
- a paraphrase import that fails names the file the user chose, not a temporary path.

Headless Chromium from Debian's `chromium` package, driven by Playwright (tests/pages/_browser.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from tests.pages._browser import (
    browser_marks,
    chromium,
    dashboard,
    first_run_id,
    open_page,
    pick,
    settle,
    shown,
)

pytestmark = browser_marks()
WIDE = {"width": 1400, "height": 900}
SIDEBAR_PICKER = "Selected run"
PANEL_STATUS_JS = """() => [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
  .map(c => c.innerText).filter(t => t.startsWith('status: ')).join(' | ')"""


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    with chromium() as b:
        yield b


def _said_within(page, limit_s: float, ok: Callable[[str, str], bool]) -> tuple[float, str, str]:  # type: ignore[no-untyped-def]
    """Seconds until the sidebar picker's text and the panel's status line satisfy `ok`
    (read every 0.1 s); AssertionError when that took longer than `limit_s`, saying how long
    it did take (read on for up to 30 s) and what the page said at `limit_s`."""
    start = time.time()
    at_limit: tuple[str, str] | None = None
    while time.time() - start <= 30.0:
        sidebar = shown(page, SIDEBAR_PICKER)
        panel = str(page.evaluate(PANEL_STATUS_JS))
        took = time.time() - start
        if ok(sidebar, panel):
            assert at_limit is None, (
                f"the page changed after {took:.1f} s, not within {limit_s} s; at {limit_s} s "
                f"the sidebar said {at_limit[0]!r}, the panel {at_limit[1]!r}"
            )
            return took, sidebar, panel
        if took > limit_s and at_limit is None:
            at_limit = (sidebar, panel)
        time.sleep(0.1)
    raise AssertionError(f"after 30 s the sidebar says {sidebar!r}, the panel {panel!r}")


def test_cancel_and_resume_change_sidebar_and_panel_within_2_s(browser, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from eraudit_core.store import Store
    from tests.pages._steady_audit import gated_dashboard_audit

    with gated_dashboard_audit(tmp_path) as (url, gate, audit):
        run_id = first_run_id(str(tmp_path / "studio.duckdb"))
        gate.allow(2)  # the first question's search and one batch of its test, then it waits
        gate.held()
        page = browser.new_page(viewport=WIDE)
        open_page(page, f"{url}/run?watch={run_id}", "Live audit")
        pick(page, SIDEBAR_PICKER, run_id)
        page.get_by_text("status: running").wait_for(timeout=60_000)

        page.get_by_role("button", name="Cancel this run").click()
        took, sidebar, panel = _said_within(
            page, 2.0, lambda s, p: "cancel" in s and "status: cancel" in p
        )
        print(f"\ncancel: sidebar {sidebar!r}, panel {panel!r} after {took:.2f} s")
        # the engine, waiting at the gate, reads the cancel there and stops
        _, err = audit.communicate(timeout=120)
        assert audit.returncode == 1 and f"run {run_id} was cancelled" in err, err
        page.get_by_text("status: cancelled").wait_for(timeout=60_000)
        settle(page)

        page.get_by_text(re.compile(r"^Unfinished runs")).click()
        page.get_by_role("button", name="Resume").click()
        took, sidebar, panel = _said_within(
            page,
            2.0,
            lambda s, p: (
                re.search(r"resuming|running", s) is not None
                and re.search(r"status: (resuming|running)", p) is not None
            ),
        )
        print(f"resume: sidebar {sidebar!r}, panel {panel!r} after {took:.2f} s")
        gate.open()  # the resumed run (in the dashboard's process) goes to its end
        page.get_by_text("Finished: verdicts").wait_for(timeout=300_000)
        page.close()
    with Store(tmp_path / "studio.duckdb") as store:
        assert store.run(run_id)["status"] == "done"


def test_a_failed_paraphrase_import_names_the_chosen_file(browser, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from eraudit_core.store import Store
    from tests._synthetic import synthetic_benchmark

    db = tmp_path / "studio.duckdb"
    with Store(db) as store:
        store.add_benchmark(synthetic_benchmark(2))
    with dashboard(str(db), tmp_path / "streamlit.log") as url:
        page = browser.new_page(viewport=WIDE)
        open_page(page, f"{url}/setup", "Paraphrase sets")
        uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="Paraphrase file")
        uploader.locator('input[type="file"]').set_input_files(
            {
                "name": "my rewordings.jsonl",
                "mimeType": "application/json",
                "buffer": b"{not json\n",
            }
        )
        uploader.get_by_text("my rewordings.jsonl").wait_for(timeout=30_000)
        page.get_by_role("button", name="Filter and import").click()
        error = page.locator('[data-testid="stAlertContentError"]').filter(
            has_text="were not imported"
        )
        error.wait_for(timeout=60_000)
        text = error.inner_text()
        assert "my rewordings.jsonl" in text, text
        assert "/tmp" not in text and "tmp" not in text.split("my rewordings.jsonl")[0], text
        page.close()
