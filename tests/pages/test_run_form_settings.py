"""The Run form's settings come from AuditConfig's metadata and open on the demo preset: the
same help text as `eraudit audit --help`, the preset's values, the stated ranges."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from eraudit_core.method import DEMO_PRESET, field_help, field_label
from eraudit_core.store import Store
from tests import _synthetic as synthetic

ROOT = Path(__file__).resolve().parents[2]

NUMBER_SETTINGS = (
    "epsilon",
    "k",
    "search_budget",
    "test_budget",
    "target",
    "tv_delta",
    "batch_size",
    "min_drop",
    "min_label_mass",
)


@pytest.fixture
def form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    db = tmp_path / "studio.duckdb"
    with Store(db) as store:
        synthetic.build_synthetic_store(store, n_pairs=2, n_search=2, n_test=3)
    monkeypatch.setenv("ERAUDIT_DB", str(db))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/run.py").run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_the_form_opens_on_the_preset_with_the_settings_help(form: AppTest) -> None:
    boxes = {n.label: n for n in form.number_input}
    for name in NUMBER_SETTINGS:
        box = boxes[field_label(name)]
        assert box.value == getattr(DEMO_PRESET, name), name
        assert box.help == field_help(name), name
    conf = next(s for s in form.selectbox if s.label == field_label("confidence"))
    assert conf.value == DEMO_PRESET.confidence and conf.help == field_help("confidence")
    checks = {c.label: c for c in form.checkbox}
    assert checks[field_label("stop_at_target")].value is DEMO_PRESET.stop_at_target
    tolerant = checks[field_label("continue_after_counterexample")]
    assert tolerant.value is DEMO_PRESET.continue_after_counterexample
    # the preset is not the library's default: the form shows the preset, not AuditConfig()
    assert boxes[field_label("epsilon")].value == 0.5 != 0.1


def test_the_form_and_the_cli_show_one_epsilon_help(form: AppTest) -> None:
    from eraudit_core.cli._main import build_parser

    box = next(n for n in form.number_input if n.label == field_label("epsilon"))
    help_text = build_parser()._subparsers._group_actions[0].choices["audit"].format_help()  # type: ignore[union-attr]
    assert box.help in " ".join(help_text.split())


def test_the_stated_range_limits_the_form(form: AppTest) -> None:
    boxes = {n.label: n for n in form.number_input}
    assert boxes[field_label("tv_delta")].max == 1.0 and boxes[field_label("tv_delta")].min == 0.0
    assert boxes[field_label("test_budget")].min == 1
    assert boxes[field_label("min_drop")].min == 0.0


def test_an_epsilon_from_a_calibration_reaches_the_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eraudit_core.null import calibrate_epsilon

    db = tmp_path / "cal.duckdb"
    with Store(db) as store:
        info = synthetic.build_synthetic_store(store, n_pairs=2, n_search=2, n_test=3)
        # an organism calibration: percentiles of D on the arm known to be degraded (the low
        # percentiles of these small synthetic runs are negative, which is refused)
        cal = calibrate_epsilon(store, info.run_ids["adversarial"], [90.0], name="organism")
    monkeypatch.setenv("ERAUDIT_DB", str(db))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/run.py").run()
    at.selectbox(key="epsilon-from").select("organism:p90").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = [c.value for c in at.caption if c.value.startswith("epsilon = ")]
    assert shown == [f"epsilon = {cal.percentiles['p90']:.6g} from organism:p90"]
    # selection is judged by content: the form audits another checkpoint than the organism's
    # (the normal case), so no selection is said, and the run can start
    assert not any("selection" in w.value for w in at.warning)
    assert any(m.label == "model queries, at most" for m in at.metric)


def test_the_control_run_choice_is_checked_before_an_audit_can_start(form: AppTest) -> None:
    import os

    control = next(s for s in form.selectbox if s.label == "Control run")
    assert control.value == ""  # none by default: the form is unchanged
    assert "This control run cannot be used" not in " ".join(e.value for e in form.error)
    # a synthetic score-table run does not stand on the form's base (demo:base): refused, named
    with Store(os.environ["ERAUDIT_DB"]) as store:
        run_id = str(store.runs()["run_id"].iloc[0])
    control.set_value(run_id).run()
    assert not form.exception, [e.message for e in form.exception]
    shown = " ".join(e.value for e in form.error)
    assert "This control run cannot be used" in shown and "base" in shown


def test_the_preset_picker_says_why_and_switches_every_setting(form: AppTest) -> None:
    from eraudit_core.method import DEMO, AuditConfig

    picker = next(s for s in form.selectbox if s.label == "Settings preset")
    assert picker.value == DEMO.name
    notes = " ".join(c.value for c in form.caption)
    assert "Tolerance epsilon 0.5 (default 0.1): at 0.1 the honest demo organism" in notes
    picker.set_value("library defaults").run()
    assert not form.exception, [e.message for e in form.exception]
    boxes = {n.label: n for n in form.number_input}
    defaults = AuditConfig()
    for name in ("epsilon", "search_budget", "test_budget", "batch_size"):
        assert boxes[field_label(name)].value == getattr(defaults, name), name
    certify = next(c for c in form.checkbox if c.label == "Certify against a target p*")
    assert certify.value is False and boxes[field_label("target")].disabled
    assert any(
        m.label == "n* (successes needed for p*)" and m.value == "no target" for m in form.metric
    )
    # back to the demo: its values return
    next(s for s in form.selectbox if s.label == "Settings preset").set_value("demo").run()
    boxes = {n.label: n for n in form.number_input}
    assert boxes[field_label("epsilon")].value == 0.5 and boxes[field_label("target")].value == 0.8
