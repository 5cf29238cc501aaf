"""When the dashboard starts loading the one-click audit's checkpoints (`ui.widgets`).

The load takes about 5 s on two cores; started when Home had drawn its button, a click at once
waited for it. app.py now starts it before any page reads the store, on whichever page the
process draws first, and only where the audit is offered (the demo on, its model installed).
AppTest runs a page switched to without app.py, so these tests open the app on Home.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui import store_access, widgets

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the dashboard did, in order: "load" for each start of the background load
    (recorded instead of loading), "demo" for each read of the demo, answered without the
    store (this test is about when the load starts, not about the demo)."""
    seen: list[str] = []
    monkeypatch.setenv("ERAUDIT_DB", str(tmp_path / "studio.duckdb"))
    monkeypatch.delenv(store_access.NO_DEMO_ENV, raising=False)
    monkeypatch.setattr(widgets, "preload_demo_models", lambda: seen.append("load"))
    monkeypatch.setattr(widgets, "demo_models_missing", lambda: None)

    def demo_info() -> dict[str, str]:
        seen.append("demo")
        return {"error": "not under test"}

    monkeypatch.setattr(store_access, "demo_info", demo_info)
    return seen


def _open_home() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_the_load_starts_before_the_page_reads_the_store(calls: list[str]) -> None:
    """app.py starts it before the sidebar and the page read anything; Home here draws no
    button (its demo could not be read), so the load does not wait for Home's button."""
    at = _open_home()
    assert "Run a live demo audit" not in [b.label for b in at.button]
    assert calls[0] == "load" and calls.count("load") == 1


def test_nothing_loads_where_the_audit_is_not_offered(
    calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(store_access.NO_DEMO_ENV, "1")
    _open_home()
    monkeypatch.delenv(store_access.NO_DEMO_ENV)
    monkeypatch.setattr(widgets, "demo_models_missing", lambda: "no model package")
    _open_home()
    assert "load" not in calls and "demo" in calls
