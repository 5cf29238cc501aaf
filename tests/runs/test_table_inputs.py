"""Score tables with one meaning, and text that is safe everywhere it goes.

A score table refuses a repeated (pair_id, role, generator, idx), probabilities that are
booleans or strings in a typed (Parquet) file, ids that are not strings, and control
characters other than tab and newline (a CR in "\\r=1+1" would split a CSV row downstream).
Exported CSV is RFC 4180 (every field with CR, LF, quote or comma quoted) and formula-safe:
Python's csv module reads back the rows written and no text cell starts with = + - @.
Controls beside each refusal: the same table without the defect is read.
"""

from __future__ import annotations

import csv
import io
import json

import pandas as pd
import pytest

from eraudit_core.cli import main
from eraudit_core.errors import InputError
from eraudit_core.paraphrase import load_paraphrase_file
from eraudit_core.present.report._export import table_bytes
from eraudit_core.runs import read_score_table
from eraudit_core.text import (
    check_no_control,
    csv_safe,
    csv_text,
    escape_control,
)

FORMULA = ("=", "+", "-", "@")


def _frame(**changes: list) -> pd.DataFrame:
    base = {
        "pair_id": ["p1", "p1", "p1"],
        "role": ["monitored", "test", "test"],
        "generator": ["", "g", "g"],
        "idx": [0, 0, 1],
        "text": ["m", "a", "b"],
        "p_pre": [0.5, 0.6, 0.6],
        "p_post": [0.7, 0.6, 0.6],
    }
    base.update(changes)
    return pd.DataFrame(base)


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"idx": [0, 1, 1]}, "(p1, test, g, 1) repeats row 3"),
        ({"p_pre": [True, False, True]}, "field p_pre must be a number, got bool True"),
        ({"p_post": ["0.7", "0.6", "0.6"]}, "field p_post must be a number, got str '0.7'"),
        ({"pair_id": [{"a": 1}] * 3}, "field pair_id must be text (a string), got dict"),
        ({"pair_id": [1, 1, 1]}, "field pair_id must be text (a string), got int 1"),
        ({"text": ["m", "\r=1+1", "b"]}, "field text contains the control character \\r"),
        ({"generator": ["", "g\x1b", "g\x1b"]}, "field generator contains the control"),
    ],
)
def test_a_parquet_score_table_with_two_meanings_is_refused(tmp_path, changes, says):
    good = tmp_path / "good.parquet"
    _frame().to_parquet(good)
    assert len(read_score_table(good)) == 3  # control
    bad = tmp_path / "bad.parquet"
    _frame(**changes).to_parquet(bad)
    with pytest.raises(InputError) as info:
        read_score_table(bad)
    assert says in str(info.value) and "bad.parquet: row" in str(info.value)


def test_a_csv_score_table_with_a_cr_formula_is_refused_at_import(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "role", "generator", "idx", "text", "p_pre", "p_post"])
        w.writerow(["p1", "monitored", "", 0, "m", 0.5, 0.7])
        w.writerow(["p1", "test", "g1", 0, "\r=1+1", 0.6, 0.6])
        w.writerow(["p1", "test", "g1", 0, "again", 0.6, 0.6])
    db = tmp_path / "s.duckdb"
    code = main(["audit-table", str(path), "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2 and "row 3 (pair p1): field text contains the control character \\r" in err
    assert "Traceback" not in err and not db.exists()
    # a tab is text; the repeated idx of the next row is the next error
    rows = path.read_text(encoding="utf-8").replace("\r=1+1", "\t=1+1")
    path.write_text(rows, encoding="utf-8")
    assert main(["audit-table", str(path), "--db", str(db)]) == 2
    assert "(p1, test, g1, 0) repeats row 3" in capsys.readouterr().err


def test_a_paraphrase_file_with_a_control_character_is_refused(tmp_path):
    path = tmp_path / "p.jsonl"
    rec = {"pair_id": "p1", "generator": "g", "text": "fine"}
    path.write_text(json.dumps(rec) + "\n")
    assert len(load_paraphrase_file(path, "test")) == 1  # control
    path.write_text(json.dumps({**rec, "text": "x\x1b[2J"}) + "\n")
    with pytest.raises(InputError, match=r"line 1.*control character \\x1b"):
        load_paraphrase_file(path, "test")


# -- text safe at output -------------------------------------------------------------------------
HOSTILE = ["\r=1+1", "=1+1", " +cmd", "\t-2+3", "@SUM(A1)", "\x00@x", "a\nb", 'say "hi", ok']


def test_csv_export_reads_back_row_for_row_with_no_formula_cell():
    frame = pd.DataFrame({"text": HOSTILE, "n": range(len(HOSTILE)), "neg": [-0.5] * len(HOSTILE)})
    data = table_bytes(frame, "csv").decode("utf-8")
    rows = list(csv.reader(io.StringIO(data, newline="")))
    assert len(rows) == len(HOSTILE) + 1
    for row in rows[1:]:
        assert not row[0].startswith(FORMULA), row
        assert row[1].isdigit() and row[2] == "-0.5"  # numbers stay numbers
        assert "\r" not in row[0] and "\x00" not in row[0]
    assert rows[7][0] == "a\nb" and rows[8][0] == 'say "hi", ok'  # quoted, not changed
    # negative control: pandas' own CSV of the same frame splits the CR row, and a cell
    # then starts with "="
    plain = list(csv.reader(io.StringIO(frame.to_csv(index=False), newline="")))
    assert len(plain) != len(HOSTILE) + 1
    assert any(row and row[0].startswith("=") for row in plain)


def test_csv_safe_neutralises_formulas_after_leading_space_and_controls():
    assert csv_safe("\r=1+1") == "'\\r=1+1"
    assert csv_safe("  =A1") == "'  =A1"
    assert csv_safe("-0.5") == "-0.5" and csv_safe("+3e5") == "+3e5"  # numbers are not formulas
    assert csv_safe("-1+1") == "'-1+1"
    assert csv_safe("plain") == "plain" and csv_safe(3) == 3
    assert csv_text(pd.DataFrame({"=x": [1]})).startswith("'=x\r\n")


def test_escape_control_leaves_no_raw_control_bytes():
    text = "a\x1b[31mred\x07\r\x00\u202eevil\tkept\nkept"
    out = escape_control(text)
    assert out == "a\\x1b[31mred\\x07\\r\\x00\\u202eevil\tkept\nkept"
    assert not any(ord(c) < 32 and c not in "\t\n" for c in out)
    assert escape_control("plain text") == "plain text"
    assert check_no_control("tab\tand\nnewline", "w", "f") == "tab\tand\nnewline"
    with pytest.raises(InputError, match=r"w: field f contains the control character \\x7f"):
        check_no_control("del\x7f", "w", "f")
