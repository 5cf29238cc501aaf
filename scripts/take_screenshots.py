"""Screenshots of every dashboard page on the embedded demo, at 1400x900 and 390x844 (a phone),
for the README. Headless Chromium via Playwright, the dashboard started by
the browser tests' own harness (tests/pages/_browser.py) with the demo on.

Each page is opened on the concealed arm (the Explorer on its most severe question, Results
alone and then compared with the honest arm), waited on until Streamlit has finished, and shot
as the viewport shows it (Streamlit scrolls inside the page, so this is the first screen);
the page's horizontal overflow (document scrollWidth minus the viewport width) is printed, and
the script exits 1 when a page overflows a phone.

    .venv/bin/python scripts/take_screenshots.py [--db demo.duckdb] [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "pages"))

from _browser import chromium, dashboard, pick, settle  # noqa: E402

SIZES = ((1400, 900), (390, 844))
# Elements of the previous run of the script are greyed (data-stale) until the rerun replaces them.
STALE_GONE_JS = "() => !document.querySelector('[data-stale=\"true\"]')"
OVERFLOW_JS = "() => document.documentElement.scrollWidth - window.innerWidth"


def pages(url: str, runs: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, link, text that shows the page has rendered) of every page, on the concealed arm."""
    concealed = runs["concealed"]
    return [
        ("home", f"{url}/?run={concealed}", "Recent runs"),
        ("setup", f"{url}/setup", "Paraphrase sets"),
        ("run", f"{url}/run", "Start a new audit"),
        ("explorer", f"{url}/explorer?run={concealed}", "Why this verdict"),
        ("results", f"{url}/results?run={concealed}", "Compare two runs side by side"),
        ("sensitivity", f"{url}/sensitivity", "Findings"),
        ("share", f"{url}/share?run={concealed}", "In plain words"),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--db", default=None, help="a store with the demo (default: build one)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    ap.add_argument("--only", default="", help="comma-separated page names (default: all)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from eraudit_core.demo import ensure_demo
    from eraudit_core.store import Store

    db = args.db or str(Path(tempfile.mkdtemp()) / "demo.duckdb")
    with Store(db) as store:
        runs = dict(ensure_demo(store).run_ids)
    only = {n for n in args.only.split(",") if n}
    overflowing = []
    log = Path(tempfile.mkdtemp()) / "dashboard.log"
    with dashboard(db, log, startup_s=180, ERAUDIT_NO_DEMO="") as url, chromium() as browser:
        for width, height in SIZES:
            page = browser.new_page(viewport={"width": width, "height": height})  # type: ignore[attr-defined]
            for name, link, marker in pages(url, runs):
                if only and name not in only:
                    continue
                page.goto(link)
                page.get_by_text(marker).first.wait_for(timeout=180_000)
                settle(page)
                views = [name]
                if name == "results":  # then the control beside the arm, as an auditor compares
                    views.append("results-compare")
                for view in views:
                    if view == "results-compare":
                        pick(page, "Right", runs["honest"])
                        # the comparison is drawn once the prompt to pick a Right run is gone
                        page.get_by_text("Pick a run on the Right").wait_for(
                            state="hidden", timeout=120_000
                        )
                    page.wait_for_function(STALE_GONE_JS, timeout=120_000)
                    page.wait_for_timeout(1500)  # plotly draws after Streamlit settles
                    path = out / f"{view}-{width}x{height}.png"
                    page.screenshot(path=str(path), timeout=300_000)
                    overflow = int(page.evaluate(OVERFLOW_JS))
                    print(f"{path}  horizontal overflow {overflow} px")
                    if overflow > 0 and width < 600:
                        overflowing.append(f"{view} at {width} px: {overflow} px")
            page.close()
    if overflowing:
        print("overflows a phone: " + "; ".join(overflowing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
