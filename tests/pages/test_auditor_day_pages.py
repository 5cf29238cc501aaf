"""Under AppTest: selection you can trust, the live run's controls, the Run form's
defaults. (The same defects in a real browser: test_auditor_day_browser.py.)"""

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
    path = tmp_path_factory.mktemp("tpl20") / "store.duckdb"
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


def watch_run_page(run_id: str) -> AppTest:
    """A new session on the Run page watching `run_id` (the entry script runs first)."""
    at = app()
    at.query_params["watch"] = run_id
    at.run()
    at.switch_page("pages/run.py").run()
    no_errors(at)
    return at


# AppTest runs the entry script (app.py, the sidebar) only on its first run; later runs run the
# current page alone. So the sidebar's behaviour over several reruns is tested in a real browser
# (test_auditor_day_browser.py); here each case starts a session in the state that matters.


def test_new_run_is_offered_never_made_the_default(filled: synthetic.SyntheticInfo) -> None:
    at = app()
    # This session picked the honest run when only it was known; the adversarial run (newest)
    # appeared later.
    at.session_state["_run_choice"] = filled.run_ids["honest"]
    at.session_state["_known_runs"] = {filled.run_ids["honest"]}
    at.run()
    no_errors(at)
    assert at.sidebar.selectbox(key="selected_run").value == filled.run_ids["honest"]
    assert any("new run" in i.value for i in at.sidebar.info)
    assert any(filled.run_ids["adversarial"] in t.value for t in at.sidebar.text)
    assert {b.label for b in at.sidebar.button} == {"Select it", "Dismiss"}
    # Negative control: a fresh session starts on the newest run and offers nothing.
    fresh = app().run()
    assert fresh.sidebar.selectbox(key="selected_run").value == filled.run_ids["adversarial"]
    assert not fresh.sidebar.info


def test_run_param_is_read_only_when_the_link_arrives(filled: synthetic.SyntheticInfo) -> None:
    first = app()
    first.query_params["run"] = filled.run_ids["honest"]
    first.run()
    assert first.sidebar.selectbox(key="selected_run").value == filled.run_ids["honest"]
    page_key = first.session_state["_last_page"]
    # A rerun of the same page with ?run= still in the URL (as the app wrote it before): the
    # user's later choice stands.
    again = app()
    again.session_state["_last_page"] = page_key
    again.session_state["_run_choice"] = filled.run_ids["adversarial"]
    again.query_params["run"] = filled.run_ids["honest"]
    again.run()
    assert again.sidebar.selectbox(key="selected_run").value == filled.run_ids["adversarial"]
    # Negative control: the same URL arriving from another page is applied.
    other = app()
    other.session_state["_last_page"] = "results"
    other.session_state["_run_choice"] = filled.run_ids["adversarial"]
    other.query_params["run"] = filled.run_ids["honest"]
    other.run()
    assert other.sidebar.selectbox(key="selected_run").value == filled.run_ids["honest"]


def test_results_compare_choices_follow_the_one_selection(filled: synthetic.SyntheticInfo) -> None:
    at = app().run()
    at.switch_page("pages/results.py").run()
    no_errors(at)
    left, right = at.selectbox(key="results_left"), at.selectbox(key="results_right")
    assert right.value == ""  # "none": Results never fills in a comparison nobody picked
    assert "compare" not in at.query_params
    assert left.value == filled.run_ids["adversarial"]  # the newest finished run
    right.select(filled.run_ids["honest"]).run()
    for _ in range(2):
        no_errors(at)
        assert at.selectbox(key="results_left").value == filled.run_ids["adversarial"]
        assert at.selectbox(key="results_right").value == filled.run_ids["honest"]
        assert at.query_params["compare"] in (filled.run_ids["honest"], [filled.run_ids["honest"]])
        at.toggle[0].set_value(not at.toggle[0].value).run()


def test_run_form_defaults_fit_the_demo_and_every_field_has_help(
    filled: synthetic.SyntheticInfo,
) -> None:
    from eraudit_core.demo import DEMO_AUDIT_SETTINGS
    from eraudit_core.method import AuditConfig

    at = app().run()
    at.switch_page("pages/run.py").run()
    no_errors(at)
    boxes = {n.label: n for n in at.number_input}
    assert boxes["Tolerance epsilon"].value == 0.5 == DEMO_AUDIT_SETTINGS["epsilon"]
    assert boxes["Target p*"].value == 0.8 == DEMO_AUDIT_SETTINGS["target"]
    fields = [*at.number_input, *at.selectbox, *at.multiselect, *at.text_input, *at.checkbox]
    form = [f for f in fields if f.key not in ("selected_run", "compare_run")]
    assert len(form) >= 15
    assert not [f.label for f in form if not f.help], "fields without help"
    # The library's and the CLI's defaults are unchanged (only the form's changed).
    assert AuditConfig().epsilon == 0.1 and AuditConfig().target is None
    from eraudit_core.cli._main import build_parser

    for argv in (["audit-table", "x.csv"], ["audit", "--pre", "a", "--post", "b"]):
        args = build_parser().parse_args([*argv, "--db", "x.duckdb"])
        assert args.epsilon == 0.1 and args.target is None


def test_cancelling_a_pending_run_shows_cancelled_at_once(filled: synthetic.SyntheticInfo) -> None:
    with Store(os.environ["ERAUDIT_DB"]) as store:  # pending: "loading its checkpoints"
        store.create_run("run-loading", label="loading", config={}, n_pairs=2)
    at = watch_run_page("run-loading")
    assert any(c.value == "status: pending" for c in at.caption)
    next(b for b in at.button if b.label == "Cancel this run").click().run()
    no_errors(at)
    assert any(c.value == "status: cancelled" for c in at.caption)
    with Store(os.environ["ERAUDIT_DB"]) as store:
        assert store.run("run-loading")["status"] == "cancelled"


def test_the_new_audit_form_waits_behind_a_toggle_while_the_watched_run_goes(
    filled: synthetic.SyntheticInfo,
) -> None:
    """While the watched run is going, the Run page is the live panel and a toggle: the form
    (most of the page the browser redraws at every refresh) is drawn once asked for; a page
    watching a finished run shows the form at once."""
    with Store(os.environ["ERAUDIT_DB"]) as store:
        store.create_run("run-going", label="going", config={}, n_pairs=2)
    at = watch_run_page("run-going")
    assert any(c.value == "status: pending" for c in at.caption)
    assert "Start a new audit" not in [h.value for h in at.subheader]
    toggle = next(t for t in at.toggle if t.label == "Set up another audit while this one runs")
    assert toggle.value is False
    toggle.set_value(True).run()
    no_errors(at)
    assert "Start a new audit" in [h.value for h in at.subheader]
    assert any(b.label == "Start audit" for b in at.button)

    done = filled.run_ids["honest"]
    at = watch_run_page(done)
    assert not [t for t in at.toggle if t.label.startswith("Set up another audit")]
    assert "Start a new audit" in [h.value for h in at.subheader]


def test_the_chart_picker_says_what_it_follows_and_keeps_the_choice_when_the_run_ends(
    filled: synthetic.SyntheticInfo,
) -> None:
    """The picker's first choice says "being scored now" while the run goes and "the last
    question scored" once it ended (a new key, since the browser kept the old label shown); a
    question picked while it ran stays picked."""
    rid = filled.run_ids["honest"]
    with Store(os.environ["ERAUDIT_DB"]) as store:
        store.set_run_status(rid, "running")
    at = watch_run_page(rid)

    def picker():  # type: ignore[no-untyped-def]
        return next(s for s in at.selectbox if s.label == "Question on the chart")

    assert picker().options[0] == "The question being scored now"
    with Store(os.environ["ERAUDIT_DB"]) as store:
        pair_ids = [p.pair_id for p in store.pairs(filled.benchmark_id)]
    at.session_state[f"watchq-{rid}-live"] = pair_ids[1]  # a question picked while it runs
    at.run()
    assert picker().index == 2
    with Store(os.environ["ERAUDIT_DB"]) as store:
        store.set_run_status(rid, "done")
    at.run()
    no_errors(at)
    assert picker().options[0] == "The last question scored"
    assert at.session_state[f"watchq-{rid}-ended"] == pair_ids[1]
    assert picker().index == 2


def test_resume_list_names_run_ids(filled: synthetic.SyntheticInfo) -> None:
    with Store(os.environ["ERAUDIT_DB"]) as store:
        for rid in ("run-a-111111", "run-b-222222"):  # two runs under one label
            store.create_run(rid, label="same label", config={}, n_pairs=2, source="table:x.csv")
            store.set_run_status(rid, "cancelled", "by the test")
    at = app().run()
    at.switch_page("pages/run.py").run()
    no_errors(at)
    lines = [t.value for t in at.text if "same label" in t.value]
    assert len(lines) == 2 and {"run-a-111111", "run-b-222222"} == {
        rid for line in lines for rid in ("run-a-111111", "run-b-222222") if rid in line
    }


def test_results_labels_the_control_beside_its_arm_as_the_control(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eraudit_core import present
    from tests._control_pair import arm_and_control

    db = tmp_path / "studio.duckdb"
    with Store(db) as store:
        arm, control = arm_and_control(store, tmp_path)
        names = present.run_names(store, [arm, control])
    monkeypatch.setenv("ERAUDIT_DB", str(db))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    at = app()
    at.session_state["_run_choice"] = arm
    at.session_state["_compare_choice"] = control
    at.run()
    at.switch_page("pages/results.py").run()
    no_errors(at)
    texts = [m.value for m in at.markdown]
    labelled = [t for t in texts if t.startswith("**Control arm** (the control of ")]
    assert len(labelled) == 1 and names[arm] in labelled[0], texts
    # one control label, on the control's side: the arm's own headline is not called one
    assert sum("Control arm" in t for t in texts) == 1, texts
