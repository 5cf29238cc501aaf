"""On the pages (AppTest): the Explorer opens with "Why this verdict" for every
verdict; Results colours and filters by amplified and drop; Share shows the noise floor and the
control beside the arm."""

from __future__ import annotations

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
    path = tmp_path_factory.mktemp("tpl") / "store.duckdb"
    with Store(path) as store:
        info = synthetic.build_synthetic_store(store, n_pairs=4, n_search=3, n_test=6)
        store.update_run_provenance(
            info.run_ids["adversarial"],
            {"control_run": info.run_ids["honest"], "noise_floor": {"value": 0.05, "source": "t"}},
        )
    return path, info


@pytest.fixture
def filled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, template) -> synthetic.SyntheticInfo:  # type: ignore[no-untyped-def]
    path = tmp_path / "studio.duckdb"
    shutil.copy(template[0], path)
    monkeypatch.setenv("ERAUDIT_DB", str(path))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    return template[1]


def test_explorer_opens_with_why_this_verdict_for_every_verdict(filled) -> None:  # type: ignore[no-untyped-def]
    run_id = filled.run_ids["adversarial"]
    with Store(str(Path(__import__("os").environ["ERAUDIT_DB"]))) as store:
        statuses = dict(store.pair_results(run_id)[["pair_id", "status"]].itertuples(index=False))
    assert "degraded" in statuses.values() and len(set(statuses.values())) > 1
    for pair_id in statuses:
        at = AppTest.from_file(APP, default_timeout=60).run()
        at.query_params.update({"run": run_id, "pair": pair_id})
        at.switch_page("pages/explorer.py").run()
        assert not at.exception, [e.message for e in at.exception]
        assert at.subheader[0].value == "Why this verdict", pair_id
        captions = [c.value for c in at.caption]
        assert "prompt not available: scores came from a table" in captions
        assert any("p(true answer)" in m.value.replace("\\", "") for m in at.markdown)


def test_results_colours_and_filters_by_amplified_and_drop(filled) -> None:  # type: ignore[no-untyped-def]
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/results.py").run()
    assert not at.exception, [e.message for e in at.exception]
    at.radio[0].set_value("amplified").run()
    assert not at.exception
    at.radio[0].set_value("drop").run()
    at.number_input[0].set_value(0.5).run()
    assert not at.exception, [e.message for e in at.exception]


def test_share_shows_the_control_and_the_noise_floor(filled) -> None:  # type: ignore[no-untyped-def]
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.query_params.update({"run": filled.run_ids["adversarial"]})
    at.switch_page("pages/share.py").run()
    assert not at.exception, [e.message for e in at.exception]
    text = (" ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)).replace(
        "\\", ""
    )
    # renamed: the fast-vs-naive gap is the scorer's numerical precision, not noise
    assert "control" in text and "Numerical precision of the scorer 0.05" in text
    # the first screen opens with the reading against the control (its primary test and the
    # questions worse and better than the control), in normal text (markdown, not a caption)
    leads = [m.value.replace("\\", "") for m in at.markdown if "its control" in m.value]
    assert leads and at.markdown[0].value.replace("\\", "") == leads[0]
    assert "95% interval" in leads[0] and "p = " in leads[0]
    assert "worse than the control" in leads[0] and "better" in leads[0]
    assert not any("its control" in c.value for c in at.caption)
