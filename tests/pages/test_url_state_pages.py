"""The selection and the filters in the URL and the session, under AppTest: a session without
`run=` opens the newest finished run, filters survive other pages and come back from the URL,
and Results never picks a comparison. (The same in a real browser, with reloads:
test_url_state_browser.py.)"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from eraudit_core.store import Store
from tests import _synthetic as synthetic

ROOT = Path(__file__).resolve().parents[2]

APP = str(ROOT / "app.py")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, synthetic.SyntheticInfo]:
    path = tmp_path_factory.mktemp("tpl28") / "store.duckdb"
    with Store(path) as store:
        info = synthetic.build_synthetic_store(store, n_pairs=3, n_search=2, n_test=4)
    return path, info


@pytest.fixture
def filled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, template: tuple[Path, synthetic.SyntheticInfo]
) -> synthetic.SyntheticInfo:
    db = tmp_path / "studio.duckdb"
    shutil.copy(template[0], db)
    monkeypatch.setenv("ERAUDIT_DB", str(db))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    return template[1]


def app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=60)


def no_errors(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]


def _param(at: AppTest, key: str) -> list[str]:
    value = at.query_params.get(key)
    return [] if value is None else [value] if isinstance(value, str) else list(value)


@pytest.mark.parametrize("status", ["cancelled", "pending", "failed"])
def test_a_fresh_session_opens_the_newest_finished_run(
    filled: synthetic.SyntheticInfo, status: str
) -> None:
    with Store(os.environ["ERAUDIT_DB"]) as store:  # newer than every finished run, 0 questions
        store.create_run("run-empty-newest", label="live demo", config={}, n_pairs=3)
        if status != "pending":
            store.set_run_status("run-empty-newest", status, "by the test")
        assert store.runs()["run_id"].iloc[0] == "run-empty-newest"
    at = app().run()
    no_errors(at)
    assert at.sidebar.selectbox(key="selected_run").value == filled.run_ids["adversarial"]
    assert _param(at, "run") == [filled.run_ids["adversarial"]]
    # ...and the newer run is offered, not chosen
    assert any("new run" in i.value for i in at.sidebar.info)
    assert any("run-empty-newest" in t.value for t in at.sidebar.text)
    # Negative control: once a run is done it is the default.
    with Store(os.environ["ERAUDIT_DB"]) as store:
        store.set_run_status("run-empty-newest", "done")
    assert app().run().sidebar.selectbox(key="selected_run").value == "run-empty-newest"


def test_a_link_to_an_older_run_offers_no_finished_run_as_new(
    filled: synthetic.SyntheticInfo,
) -> None:
    at = app()
    at.query_params["run"] = filled.run_ids["honest"]  # older than the adversarial run
    at.run()
    no_errors(at)
    assert at.sidebar.selectbox(key="selected_run").value == filled.run_ids["honest"]
    assert not any("new run" in i.value for i in at.sidebar.info)
    # Negative control: the same link with an unfinished run newer than every finished one
    # offers that run, and only that one.
    with Store(os.environ["ERAUDIT_DB"]) as store:
        store.create_run("run-pending-newest", label="live demo", config={}, n_pairs=3)
    at = app()
    at.query_params["run"] = filled.run_ids["honest"]
    at.run()
    assert [i.value for i in at.sidebar.info] == ["A new run is in the store:"]
    offered = " ".join(t.value for t in at.sidebar.text)
    assert "run-pending-newest" in offered and filled.run_ids["adversarial"] not in offered


def test_no_finished_run_selects_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        store.create_run("run-only-pending", label="loading", config={}, n_pairs=2)
    monkeypatch.setenv("ERAUDIT_DB", str(db))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    at = app().run()
    no_errors(at)
    assert at.sidebar.selectbox(key="selected_run").value in ("", None)
    assert "run" not in at.query_params


def test_the_run_link_selects_it_and_the_url_follows_a_pick(
    filled: synthetic.SyntheticInfo,
) -> None:
    at = app()
    at.query_params["run"] = filled.run_ids["honest"]
    at.run()
    no_errors(at)
    assert at.sidebar.selectbox(key="selected_run").value == filled.run_ids["honest"]
    at.sidebar.selectbox(key="compare_run").select(filled.run_ids["adversarial"]).run()
    # (AppTest reruns the page alone after the first run; Results writes the URL itself)
    at.switch_page("pages/results.py").run()
    no_errors(at)
    assert _param(at, "compare") == [filled.run_ids["adversarial"]]
    assert at.selectbox(key="results_right").value == filled.run_ids["adversarial"]


def test_results_leaves_compare_with_at_none(filled: synthetic.SyntheticInfo) -> None:
    at = app().run()
    at.switch_page("pages/results.py").run()
    no_errors(at)
    assert at.selectbox(key="results_right").value == ""
    assert at.session_state["_compare_choice"] is None
    assert "compare" not in at.query_params
    assert any("Pick a run on the Right" in i.value for i in at.info)


def test_explorer_filters_survive_other_pages_and_go_in_the_url(
    filled: synthetic.SyntheticInfo,
) -> None:
    at = app().run()
    at.switch_page("pages/explorer.py").run()
    no_errors(at)
    at.selectbox(key="flt-sort").select("largest D").run()
    at.multiselect(key="flt-verdict").select("degraded").run()
    no_errors(at)
    assert _param(at, "sort") == ["largest D"] and _param(at, "verdict") == ["degraded"]
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/explorer.py").run()
    no_errors(at)
    assert at.selectbox(key="flt-sort").value == "largest D"
    assert at.multiselect(key="flt-verdict").value == ["degraded"]
    # Negative control: a new session starts from the defaults...
    fresh = app().run()
    fresh.switch_page("pages/explorer.py").run()
    assert fresh.selectbox(key="flt-sort").value == "most severe first"
    assert fresh.multiselect(key="flt-verdict").value == []


def test_explorer_filters_come_back_from_the_url(filled: synthetic.SyntheticInfo) -> None:
    at = app()
    at.query_params["sort"] = "largest drop"
    at.query_params["evidence"] = ["has a counterexample"]
    at.query_params["took"] = "took here: monitored gain above k"
    at.query_params["q"] = "ship"
    at.switch_page("pages/explorer.py").run()  # a link that lands on the Explorer
    no_errors(at)
    assert at.selectbox(key="flt-sort").value == "largest drop"
    assert at.multiselect(key="flt-evidence").value == ["has a counterexample"]
    assert at.selectbox(key="flt-took").value == "took here: monitored gain above k"
    assert at.text_input(key="flt-q").value == "ship"
    # a value the page does not know falls back to the default (never an exception)
    bad = app()
    bad.query_params["sort"] = "random order"
    bad.switch_page("pages/explorer.py").run()
    no_errors(bad)
    assert bad.selectbox(key="flt-sort").value == "most severe first"


def test_a_comparison_and_its_disagreement_filter_survive_navigation(
    filled: synthetic.SyntheticInfo,
) -> None:
    at = app()
    at.run()
    at.switch_page("pages/results.py").run()
    left = at.selectbox(key="results_left").value
    other = next(r for r in filled.run_ids.values() if r != left)
    at.selectbox(key="results_right").select(other).run()
    no_errors(at)
    # the synthetic arms stand on one base: the disagreement filter is offered, off at first
    toggle = next(t for t in at.toggle if t.key == "compare-disagreements-only")
    assert toggle.value is False
    toggle.set_value(True).run()
    no_errors(at)
    assert _param(at, "only_diff") == ["1"]
    at.switch_page("pages/explorer.py").run()
    at.switch_page("pages/results.py").run()
    no_errors(at)
    assert at.selectbox(key="results_right").value == other
    assert next(t for t in at.toggle if t.key == "compare-disagreements-only").value is True


def test_results_filters_from_the_url_are_checked(filled: synthetic.SyntheticInfo) -> None:
    at = app()
    at.query_params["min_drop"] = "0.05"
    at.query_params["colour"] = "amplified"
    at.query_params["only_diff"] = "1"
    at.query_params["compare"] = filled.run_ids["honest"]
    at.switch_page("pages/results.py").run()
    no_errors(at)
    assert at.number_input(key="flt-min_drop").value == 0.05
    assert at.radio(key="flt-colour").value == "amplified"
    # Negative control: out of range or unknown values fall back to the defaults
    bad = app()
    bad.query_params["min_drop"] = "7"
    bad.query_params["colour"] = "purple"
    bad.switch_page("pages/results.py").run()
    no_errors(bad)
    assert bad.number_input(key="flt-min_drop").value == 0.0
    assert bad.radio(key="flt-colour").value == "run"
