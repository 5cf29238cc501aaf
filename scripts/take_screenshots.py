"""Screenshots of the demo for the README (issue 19): Home (lead, chance check, controls),
the Question explorer ("Why this verdict"), Results (scatter coloured by amplified) and Share
(noise floor, control, why the worst question is degraded). Headless Chromium via Playwright.

    .venv/bin/python scripts/take_screenshots.py [--db demo.duckdb] [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.pages._browser import chromium, free_port, settle, wait_http  # noqa: E402


@contextmanager
def demo_dashboard(db: str, log_path: Path) -> Iterator[str]:
    """The dashboard on loopback with the demo on (the test harness turns it off)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "ERAUDIT_NO_DEMO"}
    env["ERAUDIT_DB"] = db
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
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_http(f"http://127.0.0.1:{port}/_stcore/health", timeout=180)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--db", default=None, help="a store with the demo (default: build one)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from eraudit_core.demo import ensure_demo
    from eraudit_core.store import Store

    db = args.db or str(Path(tempfile.mkdtemp()) / "demo.duckdb")
    with Store(db) as store:
        info = ensure_demo(store)
        concealed = info.run_ids["concealed"]
        pairs = store.pair_results(concealed)
        amplified = pairs[(pairs["status"] == "degraded") & pairs["amplified"].astype(bool)]
        pair = str(amplified["pair_id"].iloc[0])
    with (
        demo_dashboard(db, Path(tempfile.mkdtemp()) / "dashboard.log") as url,
        chromium() as browser,
    ):
        page = browser.new_page(viewport={"width": 1400, "height": 1800})  # type: ignore[attr-defined]
        shots = [
            ("home_lead_and_controls.png", url, "Recent runs"),
            (
                "explorer_why_this_verdict.png",
                f"{url}/explorer?run={concealed}&pair={pair}",
                "Why this verdict",
            ),
            ("results_amplified.png", f"{url}/results?run={concealed}", "Per question"),
            ("share_evidence.png", f"{url}/share?run={concealed}", "In plain words"),
        ]
        for name, link, marker in shots:
            page.goto(link)
            page.get_by_text(marker).first.wait_for(timeout=120_000)
            settle(page)
            if name.startswith("results"):
                page.get_by_text("amplified", exact=True).first.click()
                settle(page)
            page.screenshot(
                path=str(out / name),
                full_page=name.startswith(("home", "share")),
                timeout=300_000,  # a busy machine renders slowly
            )
            print(out / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
