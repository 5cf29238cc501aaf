"""The live panel's "Step:" line under AppTest: what the worker wrote to the store, with the
seconds since the click; a cancelled run shows no step and never reads pending."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from eraudit_core.runs._step_reporter import StepReporter
from eraudit_core.store import Store

ROOT = Path(__file__).resolve().parents[2]

APP = str(ROOT / "app.py")


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "studio.duckdb"
    monkeypatch.setenv("ERAUDIT_DB", str(path))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    return path


def _watch(run_id: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["watch"] = run_id
    at.run()
    at.switch_page("pages/run.py").run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _steps(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if "Step" in m.value]


def test_the_step_line_names_the_step_and_the_seconds_since_the_click(db: Path) -> None:
    with Store(db) as store:
        store.create_run("run-loading", label="loading", config={}, n_pairs=2)
        clicked = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(seconds=7)
        StepReporter(store, "run-loading", clicked)("loading demo:base weights")
    at = _watch("run-loading")
    (line,) = _steps(at)
    m = re.search(r"Step\\?: loading demo\\?:base weights \\?\((\d+) s\\?\)", line)
    assert m, line
    assert 7 <= int(m.group(1)) <= 60
    next(b for b in at.button if b.label == "Cancel this run").click().run()
    assert not at.exception
    assert any(c.value == "status: cancelled" for c in at.caption)
    assert not _steps(at)  # a cancelled run has no current step
    with Store(os.environ["ERAUDIT_DB"]) as store:
        assert store.run("run-loading")["status"] == "cancelled"


def test_a_finished_run_shows_where_its_time_went(db: Path) -> None:
    with Store(db) as store:
        store.create_run("run-done", label="done", config={}, n_pairs=0)
        step = StepReporter(store, "run-done")
        step("loading demo:base weights")
        step("scoring question 1 of 1: counterexample search")
        step(None)
        store.set_run_status("run-done", "done")
    at = _watch("run-done")
    assert not _steps(at)
    assert any("Where the time went" in e.label for e in at.expander)
    steps = at.dataframe[-1].value["step"].tolist()
    assert steps == ["loading demo:base weights", "scoring question 1 of 1: counterexample search"]


def test_while_loading_time_left_counts_the_measured_loading(db: Path) -> None:
    with Store(db) as store:
        # an earlier run of the same checkpoints took 40 s from its click to scoring
        store.create_run(
            "run-before", label="a", config={}, n_pairs=1, pre=("", "p"), post=("", "q")
        )
        step = StepReporter(store, "run-before")
        step.log = [{"step": "loading p weights", "seconds": 40.0}]
        step.what = "scoring question 1 of 1: counterexample search"
        step(None)
        store.set_run_status("run-before", "done")
        store.create_run("run-now", label="b", config={}, n_pairs=1, pre=("", "p"), post=("", "q"))
        clicked = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(seconds=10)
        StepReporter(store, "run-now", clicked)("loading p weights")
    at = _watch("run-now")
    (count,) = [p.proto.text for p in at.get("progress")]
    m = re.search(r"about (\d+) s of loading left", count)
    assert m and 15 <= int(m.group(1)) <= 30, count  # 40 s measured, about 10 s gone
    assert any("Loading took 40 s" in c.value for c in at.caption)


def test_the_page_redraws_at_the_end_and_once_at_the_first_scored_paraphrase() -> None:
    """The end watch (every 0.5 s, no store read) redraws the page when this process's audit
    thread ends, and once when the engine has reported scored paraphrases the panel does not
    show yet (its own refresh may be 3 s away); never again for that, whatever the panel
    reads, so a report the store does not reflect cannot make the page redraw twice a second."""
    from ui.live import redraw_now

    going = {"alive": True, "reported": False}
    assert not redraw_now(going, scored_drawn=0, redrawn_first=False)
    assert redraw_now({"alive": False, "reported": True}, scored_drawn=12, redrawn_first=True)
    scored = {"alive": True, "reported": True}
    assert redraw_now(scored, scored_drawn=0, redrawn_first=False)
    assert redraw_now(scored, scored_drawn=None, redrawn_first=False)  # panel not drawn yet
    assert not redraw_now(scored, scored_drawn=0, redrawn_first=True)
    assert not redraw_now(scored, scored_drawn=6, redrawn_first=False)
