"""Setup's errors: the reason inside the error box, and the nearest existing path offered for
a mistyped one."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui.setup_actions import nearest_path, path_hint

ROOT = Path(__file__).resolve().parents[2]

APP = str(ROOT / "app.py")


def test_nearest_path_fixes_each_mistyped_component(tmp_path: Path) -> None:
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "QuALITY-H.json").write_text("[]")
    want = str(tmp_path / "benchmarks" / "QuALITY-H.json")
    assert nearest_path(str(tmp_path / "benchmark" / "QuALITY-H.jsn")) == want
    assert nearest_path(str(tmp_path / "benchmarks" / "QuALTY-H.json")) == want
    # Negative controls: an existing path, an empty one and a name nothing is close to
    assert nearest_path(want) is None and nearest_path("  ") is None
    assert nearest_path(str(tmp_path / "benchmarks" / "zzzzzzzzzz.csv")) is None
    # a checkpoint spec: each side of BASE+ADAPTER; demo and served specs get no hint
    (tmp_path / "adapter").mkdir()
    hint = path_hint(f"demo:base+{tmp_path / 'adaptr'}")
    assert hint == f"Did you mean {tmp_path / 'adapter'}?"
    assert path_hint("demo:nope") is None and path_hint("http://h:8000/v1#m") is None


def test_a_mistyped_benchmark_path_is_explained_inside_the_error_box(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ERAUDIT_DB", str(tmp_path / "studio.duckdb"))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    (tmp_path / "GPQA-H.json").write_text("[]")
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/setup.py").run()
    at.text_input(key="bench-path").input(str(tmp_path / "GPQA-H.jsn"))
    at.button[0].click().run()  # the benchmark form's submit button
    assert not at.exception
    (box,) = [e.value for e in at.error]
    plain = box.replace("\\", "")
    assert plain.startswith("The benchmark was not imported:")
    assert "no such benchmark file" in plain  # the reason, in the same box
    assert f"did you mean {tmp_path / 'GPQA-H.json'}?" in plain


def test_fit_table_labels_every_cell_and_escapes_it() -> None:
    import pandas as pd

    from ui import widgets

    drawn: list[str] = []
    frame = pd.DataFrame({"checkpoint": ["<b>x</b>", "demo:base"], "degraded": [3, None]})
    orig = widgets.st.markdown
    widgets.st.markdown = lambda body, **kw: drawn.append(body)  # type: ignore[assignment]
    try:
        widgets.fit_table(frame)
    finally:
        widgets.st.markdown = orig  # type: ignore[assignment]
    (html,) = drawn
    assert html.count('data-label="checkpoint"') == 2 and html.count('data-label="degraded"') == 2
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html.split("</style>")[1]
    assert "@media (max-width: 640px)" in html  # a card per row on a phone


@pytest.mark.parametrize(
    "content",
    [b"{not json\n", b'{"pair_id": "p1"}\n', b"\xff\xfe\x00bad"],
    ids=["broken-json", "missing-fields", "not-utf8"],
)
def test_a_paraphrase_import_error_names_the_users_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    from eraudit_core.errors import InputError
    from eraudit_core.store import Store
    from tests._synthetic import synthetic_benchmark
    from ui import setup_actions

    db = tmp_path / "studio.duckdb"
    with Store(db) as store:
        bid = store.add_benchmark(synthetic_benchmark(2))
    monkeypatch.setenv("ERAUDIT_DB", str(db))
    with pytest.raises(InputError) as err:
        setup_actions.import_paraphrase_upload(bid, "my rewordings.jsonl", content, "test")
    message = str(err.value)
    assert "my rewordings.jsonl" in message, message
    assert "/tmp" not in message and "tmp" not in message.split("my rewordings.jsonl")[0]
