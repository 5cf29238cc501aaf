"""The Explorer's filters on the reading against the control and on whether the adaptation
took, under AppTest: offered only for a run that names a control, read from and written to
the URL, and narrowing the question picker to the questions they name (tests/_control_pair.py
holds the known paired differences)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from eraudit_core import present
from eraudit_core.store import Store
from tests._control_pair import arm_and_control

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    db = tmp_path / "studio.duckdb"
    with Store(db) as store:
        arm, control = arm_and_control(store, tmp_path)
    monkeypatch.setenv("ERAUDIT_DB", str(db))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    return {"arm": arm, "control": control}


def _explorer(**params: str | list[str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page("pages/explorer.py").run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _listed(at: AppTest) -> list[str]:
    return list(at.selectbox(key="explorer_pair").options)


def _param(at: AppTest, key: str) -> list[str]:
    value = at.query_params.get(key)
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def test_null_and_took_filters_come_back_from_the_url_and_narrow_the_picker(runs) -> None:
    at = _explorer(run=runs["arm"], null=["beyond control"], took=present.TOOK_HERE)
    assert at.multiselect(key="flt-null").value == ["beyond control"]
    assert at.selectbox(key="flt-took").value == present.TOOK_HERE
    listed = _listed(at)
    assert len(listed) == 1 and "#0 [" in listed[0] and "beyond control" in listed[0]
    assert "1 of 4" in at.selectbox(key="explorer_pair").label
    # the question's reading in words, under the verdict
    assert any("10.00 points below the control's" in m.value.replace("\\", "") for m in at.markdown)
    # the run's own answer first: half its monitored gains are at or below k
    assert any(w.value.startswith("Did the adaptation take? No:") for w in at.warning)


def test_changing_the_new_filters_writes_them_to_the_url(runs) -> None:
    at = _explorer(run=runs["arm"])
    assert len(_listed(at)) == 4 and not _param(at, "null") and not _param(at, "took")
    at.multiselect(key="flt-null").select("better than control").run()
    at.selectbox(key="flt-took").select(present.NOT_TOOK_HERE).run()
    assert not at.exception
    assert _param(at, "null") == ["better than control"]
    assert _param(at, "took") == [present.NOT_TOOK_HERE]
    listed = _listed(at)
    assert len(listed) == 1 and "better than control" in listed[0]
    # within control and took here: no question is both
    at.multiselect(key="flt-null").set_value(["within control"]).run()
    assert any("No question matches" in w.value for w in at.warning)
    # back to the defaults: the parameters leave the URL
    at.multiselect(key="flt-null").set_value([]).run()
    at.selectbox(key="flt-took").select(present.TOOK_ANY).run()
    assert not _param(at, "null") and not _param(at, "took") and len(_listed(at)) == 4


def test_a_run_without_a_control_offers_no_null_filter(runs) -> None:
    at = _explorer(run=runs["control"], null=["beyond control"])
    assert not [m for m in at.multiselect if m.key == "flt-null"]
    assert len(_listed(at)) == 4 and "control" not in _listed(at)[0].split("]")[0]
    assert any(c.value.startswith("Did the adaptation take? Yes:") for c in at.caption)


def test_a_link_opens_its_question_even_when_the_filters_leave_it_out(runs) -> None:
    at = _explorer(run=runs["arm"], null=["better than control"], pair="q_worse")
    assert at.selectbox(key="explorer_pair").value == "q_worse"
    assert any("does not match the filters above" in i.value for i in at.info)
    listed = _listed(at)
    assert len(listed) == 2  # the linked one, then the one the filters keep
    assert listed[0].endswith("of q_worse") and listed[1].endswith("of q_better")
    # negative control: without the link the filters alone decide
    plain = _explorer(run=runs["arm"], null=["better than control"])
    assert [q[-8:] for q in _listed(plain)] == ["q_better"] and not plain.info


def test_a_control_that_does_not_match_says_why_instead_of_a_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "studio.duckdb"
    with Store(db) as store:
        arm, _ = arm_and_control(store, tmp_path, arm_k=0.01)
    monkeypatch.setenv("ERAUDIT_DB", str(db))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    at = _explorer(run=arm, null=["beyond control"])
    assert not [m for m in at.multiselect if m.key == "flt-null"]
    why = [c.value.replace("\\", "") for c in at.caption if "cannot be read against" in c.value]
    assert len(why) == 1 and "control" in why[0], why
    assert len(_listed(at)) == 4
