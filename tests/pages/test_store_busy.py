"""A store kept busy by another process gives the dashboard a notice, never Streamlit's
redacted crash, and the page works again once the other process lets go."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from eraudit_core.store import Store
from tests._holder import holding_raw_connection

ROOT = Path(__file__).resolve().parents[2]


def test_a_busy_store_gives_a_notice_and_the_page_recovers(tmp_path, monkeypatch):
    db = tmp_path / "busy.duckdb"
    Store(db).close()
    monkeypatch.setenv("ERAUDIT_DB", str(db))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    monkeypatch.setenv("ERAUDIT_BUSY_TIMEOUT", "1")
    with holding_raw_connection(str(db)) as holder:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        assert any("store is busy" in w.value for w in at.warning)
        assert any(f"process {holder.pid}" in t.value for t in at.text)
    at.button(key="store-busy-retry").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert not any("store is busy" in w.value for w in at.warning)
    assert any("No runs" in i.value for i in at.info)
