"""The report's tables read well on a phone for people who do not program: plain column names
(no `n_pairs`, no `mtp`), and every cell carries its column's name in `data-label`, which the
phone layout (report.css, under 600 px) shows before the value, so each row reads as a card."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eraudit_core import present
from eraudit_core.present.report._tables import PLAIN_COLUMNS, cell_text, table_html
from eraudit_core.store import Store
from tests import _synthetic as synthetic

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "eraudit_core" / "present" / "report" / "templates"
SUMMARY_HEADERS = [
    "checkpoint",
    "questions",
    "monitored accuracy (standard evaluation)",
    "hidden accuracy (standard evaluation)",
    "hidden mean p(true)",
    "degraded",
    "certified",
    "passed",
    "inconclusive",
    "mean lower bound (degraded and inconclusive count 0)",
    "adaptation took (fewer than half of the monitored gains at or below k)",
    "monitored gains at or below k",
]


class _Tables(HTMLParser):
    """Every <table> of a page: its class, column headers, and per row each cell's
    (data-label or None, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []  # type: ignore[type-arg]
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"class": a.get("class") or "", "headers": [], "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag == "th" and self.tables:
            self.tables[-1]["headers"].append("")
            self._cell = self.tables[-1]["headers"]
        elif tag == "td" and self.tables:
            self.tables[-1]["rows"][-1].append([a.get("data-label"), ""])
            self._cell = self.tables[-1]["rows"][-1][-1]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "td"):
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell[-1] += data


def tables_of(html: str) -> list[dict]:  # type: ignore[type-arg]
    parser = _Tables()
    parser.feed(html)
    for t in parser.tables:
        t["rows"] = [r for r in t["rows"] if r]  # the header row holds no <td>
    return parser.tables


def unlabelled_cells(html: str) -> list[str]:
    """What keeps a table of `html` from reading as cards on a phone: a table without column
    headers, a row with another number of cells than headers, a cell whose data-label is
    missing or differs from its column's header. Empty when every cell is labelled."""
    problems = []
    for i, t in enumerate(tables_of(html)):
        if not t["headers"]:
            problems.append(f"table {i}: no column headers")
        for j, row in enumerate(t["rows"]):
            if len(row) != len(t["headers"]):
                problems.append(f"table {i} row {j}: {len(row)} cells, {len(t['headers'])} headers")
            for header, (label, _) in zip(t["headers"], row, strict=False):
                if label != header:
                    problems.append(f"table {i} row {j}: data-label {label!r} under {header!r}")
    return problems


@pytest.fixture(scope="module")
def report() -> str:
    with Store() as store:
        info = synthetic.build_synthetic_store(store, n_pairs=6, n_search=2, n_test=12, seed=2)
        return present.build_report(store, [info.run_ids["adversarial"], info.run_ids["honest"]])


def _summary(html: str) -> list[dict]:  # type: ignore[type-arg]
    part = html.split("<h2>Summary</h2>", 1)[1].split("plotly-graph-div", 1)[0]
    return tables_of(part)


def test_the_summary_table_has_plain_headers(report: str) -> None:
    (summary,) = _summary(report)
    assert summary["headers"] == SUMMARY_HEADERS
    assert "questions" in summary["headers"] and "hidden mean p(true)" in summary["headers"]
    for h in summary["headers"]:
        assert h != "n_pairs" and "mtp" not in h.lower(), h
    # one row per checkpoint: before adaptation, then each run's adapted checkpoint
    assert len(summary["rows"]) == 3
    counts = [text for label, text in summary["rows"][1] if label == "degraded"]
    assert re.fullmatch(r"\d+", counts[0]), counts  # a count, not "2.00"


def test_no_table_of_the_report_shows_a_code_name(report: str) -> None:
    tables = tables_of(report)
    headers = {h for t in tables for h in t["headers"]}
    assert len(tables) >= 8 and "question id" in headers  # counterexamples shown too
    assert not [h for h in headers if "_" in h or h in PLAIN_COLUMNS and h != PLAIN_COLUMNS[h]]
    assert all("_" not in plain for plain in PLAIN_COLUMNS.values())


def test_every_cell_of_the_report_tables_carries_its_column_name(report: str) -> None:
    tables = tables_of(report)
    cards = [t for t in tables if "cards" in t["class"].split()]
    # every table is a card table but the side-by-side example (two columns, fits a phone)
    assert [t["class"] for t in tables if t not in cards] == []
    assert unlabelled_cells(report) == []
    n_cells = sum(len(r) for t in cards for r in t["rows"])
    assert n_cells > 100


def test_the_check_catches_a_table_without_labels() -> None:
    df = pd.DataFrame({"n_pairs": [3, 4], "hidden_mtp": [0.5, np.nan]})
    labelled = str(table_html(df))
    assert unlabelled_cells(labelled) == []
    # negative controls: the old pandas table, a wrong label, a missing cell
    assert len(unlabelled_cells(df.to_html(index=False))) == 4
    wrong = labelled.replace('data-label="questions">4', 'data-label="hidden mean p(true)">4')
    assert unlabelled_cells(wrong) == [
        "table 0 row 1: data-label 'hidden mean p(true)' under 'questions'"
    ]
    missing = labelled.replace('<td data-label="questions">4</td>', "", 1)
    assert "table 0 row 1: 1 cells, 2 headers" in unlabelled_cells(missing)


def test_cells_read_as_pandas_wrote_them() -> None:
    df = pd.DataFrame(
        {
            "x": [0.12345, np.nan, 1.0],
            "k": [1, 2, 3],
            "flag": [True, False, False],
            "text": ["  padded ", None, "a & b"],
        }
    )
    pandas = df.to_html(index=False, na_rep="n/a", float_format=lambda v: f"{v:.3f}")
    old = [[text for _, text in r] for r in tables_of(pandas)[0]["rows"]]
    new = [[text for _, text in r] for r in tables_of(str(table_html(df)))[0]["rows"]]
    assert new == old and new[1] == ["n/a", "2", "False", "n/a"]
    # where pandas wrote "None" (a missing value among booleans), the report says n/a
    assert cell_text(None) == "n/a" and cell_text(float("nan")) == "n/a"
    assert cell_text(np.float64(2.0), 2) == "2.00" and cell_text(pd.NA) == "n/a"
    assert cell_text(np.bool_(True)) == "True"


def test_labels_and_cells_are_escaped() -> None:
    df = pd.DataFrame({'col"<b>': ['<script>alert("x")</script>']})
    out = str(table_html(df))
    assert "<script>" not in out and "<b>" not in out
    assert 'data-label="col&quot;&lt;b&gt;"' in out
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in out
    assert "|safe" not in (TEMPLATES / "data_table.html").read_text()


def test_the_phone_layout_turns_rows_into_cards() -> None:
    css = (TEMPLATES / "report.css").read_text()
    phone = css.split("@media (max-width: 600px) {\n  table.cards", 1)[1]
    assert "td::before { content: attr(data-label)" in phone
    assert "table.cards tbody, table.cards tr { display: block; }" in phone
    assert "table.cards thead { position: absolute;" in phone  # read aloud, not shown
