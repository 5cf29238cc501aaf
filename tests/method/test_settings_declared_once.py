"""A setting is declared once: a field added to the declaration appears in the CLI's help and
parser, the Run form, the report's settings table and the comparability check, with nothing
else edited. The fake field lives on a subclass of AuditConfig that `_settings` (the one
reader of the declaration) is pointed at for the test."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from streamlit.testing.v1 import AppTest

from eraudit_core.errors import InputError
from eraudit_core.method import (
    DEMO,
    PRESETS,
    AuditConfig,
    Range,
    RunRecord,
    comparison_fields,
    setting,
    setting_named,
    verdict_fields,
)
from eraudit_core.method import _settings as declared
from eraudit_core.method import _stored_run as stored_run
from eraudit_core.store import Store
from eraudit_core.types import RunStatus
from tests import _synthetic as synthetic

ROOT = Path(__file__).resolve().parents[2]
FAKE_LABEL = "Fake threshold (declared only by this test)"
FAKE_HELP = "A setting that only this test declares; it must reach every place settings show."


@dataclass(frozen=True)
class WithFake(AuditConfig):
    made: ClassVar[list[WithFake]] = []

    fake_threshold: float = setting(
        0.25,
        label=FAKE_LABEL,
        help=FAKE_HELP,
        valid=Range(0.0, 1.0),
        changes_verdicts=True,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        WithFake.made.append(self)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(declared, "AuditConfig", WithFake)
    WithFake.made.clear()


def _help(command: str) -> str:
    from eraudit_core.cli._main import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    return " ".join(sub[command].format_help().split())


def test_the_fake_field_is_an_option_of_both_audit_commands(fake: None) -> None:
    from eraudit_core.cli._main import build_parser
    from eraudit_core.cli._run_options import _config

    for command in ("audit", "audit-table"):
        shown = _help(command)
        assert (
            f"--fake-threshold FAKE_THRESHOLD {FAKE_HELP} (valid: [0, 1]; default: 0.25)" in shown
        )
    args = build_parser().parse_args(
        ["audit-table", "t.csv", "--db", "x.duckdb", "--fake-threshold", "0.4"]
    )
    config = _config(args)
    assert isinstance(config, WithFake) and config.fake_threshold == 0.4
    # the declared range refuses by the option's name
    args.fake_threshold = 1.5
    with pytest.raises(InputError, match=r"--fake-threshold: AuditConfig.fake_threshold must be"):
        _config(args)


def test_without_the_fake_field_the_cli_does_not_offer_it() -> None:
    assert "--fake-threshold" not in _help("audit")


@pytest.fixture
def store_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> synthetic.SyntheticInfo:
    db = tmp_path / "studio.duckdb"
    with Store(db) as store:
        info = synthetic.build_synthetic_store(store, n_pairs=2, n_search=2, n_test=3)
    monkeypatch.setenv("ERAUDIT_DB", str(db))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    return info


def _run_form() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/run.py").run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_the_fake_field_is_on_the_run_form_and_reaches_the_config(
    fake: None, store_env: synthetic.SyntheticInfo
) -> None:
    at = _run_form()
    box = next(n for n in at.number_input if n.label == FAKE_LABEL)
    assert (box.value, box.help, box.min, box.max) == (0.25, FAKE_HELP, 0.0, 1.0)
    box.set_value(0.6).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(c.fake_threshold == 0.6 for c in WithFake.made)
    # the request the form builds is sized (the Start button's metrics are shown)
    assert any(m.label == "model queries, at most" for m in at.metric)


def test_without_the_fake_field_the_form_does_not_show_it(
    store_env: synthetic.SyntheticInfo,
) -> None:
    at = _run_form()
    assert FAKE_LABEL not in {n.label for n in at.number_input}


def test_the_fake_field_is_a_row_of_the_reports_settings_table(fake: None) -> None:
    from eraudit_core.present.report._report import _settings_table

    def run(config: AuditConfig) -> RunRecord:
        return RunRecord("run-x", None, RunStatus.DONE, config, {}, 0, pre_name="a")

    html = str(_settings_table(run(WithFake(fake_threshold=0.375))))
    assert FAKE_LABEL in html and "0.375" in html
    assert FAKE_LABEL not in str(_settings_table(run(AuditConfig())))


def test_the_fake_field_is_compared_and_an_older_config_has_its_default(
    fake: None, store_env: synthetic.SyntheticInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eraudit_core.present import run_differences

    # stored runs read back (`RunRecord`) with the field declared, as the comparison reads them
    monkeypatch.setattr(stored_run, "AuditConfig", WithFake)

    assert "fake_threshold" in comparison_fields() and "fake_threshold" in verdict_fields()
    with Store(os.environ["ERAUDIT_DB"]) as store:
        run_id = store_env.run_ids["honest"]
        rec = store.run(run_id)
        assert "fake_threshold" not in rec["config"]  # stored before the field existed

        def copy(new_id: str, **change: Any) -> str:
            store.create_run(new_id, label=new_id, config={**rec["config"], **change}, n_pairs=0)
            return new_id

        other = copy("run-fake-other", fake_threshold=0.7)
        same = copy("run-fake-same", fake_threshold=0.25)
        got = [d for d in run_differences(store, run_id, other) if d["field"] == "fake_threshold"]
        assert got == [{"field": "fake_threshold", "a": 0.25, "b": 0.7}]
        fields = {d["field"] for d in run_differences(store, run_id, same)}
        assert "fake_threshold" not in fields


def test_each_preset_override_is_a_declared_change_with_a_reason() -> None:
    assert DEMO in PRESETS
    for preset in PRESETS:
        assert preset.reason.strip()
        config = preset.config()
        for name, override in preset.overrides.items():
            assert override.reason.strip() and "\n" not in override.reason, name
            assert getattr(config, name) == override.value != setting_named(name).default, name
    epsilon = next(line for line in DEMO.lines() if line.startswith("Tolerance epsilon"))
    assert epsilon.startswith("Tolerance epsilon 0.5 (default 0.1): ")
    with pytest.raises(InputError, match="no field 'eps'"):
        declared.Preset("typo", "a preset naming no setting", {"eps": declared.Override(1, "x")})


WIDGETS = {
    "button",
    "checkbox",
    "color_picker",
    "date_input",
    "multiselect",
    "number_input",
    "radio",
    "select_slider",
    "selectbox",
    "slider",
    "text_area",
    "text_input",
    "time_input",
    "toggle",
}


def test_the_run_page_writes_no_widget_per_setting() -> None:
    """pages/run.py keeps its own widgets for what is not a setting (benchmark, preset,
    control run, label); every setting's widget is drawn from its declaration."""
    tree = ast.parse((ROOT / "pages" / "run.py").read_text(encoding="utf-8"))
    labels = []
    for node in ast.walk(tree):
        call = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if call and node.func.attr in WIDGETS:  # type: ignore[attr-defined]
            first = node.args[0] if node.args else None  # type: ignore[attr-defined]
            labels.append(first.value if isinstance(first, ast.Constant) else None)
    assert sorted(labels) == ["Benchmark", "Control run", "Run label", "Settings preset"]
