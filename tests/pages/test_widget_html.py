"""Every HTML the dashboard draws comes from the autoescaped templates: a hostile run label or
question text (`<script>`) reaches the page as text in each widget that writes HTML."""

from __future__ import annotations

import ast
import html
import re
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
ESCAPED = html.escape(HOSTILE)  # as the templates write it
TAG = re.compile(
    r"<(/?)(div|span|style|table|thead|tbody|t[rdh]|script|p|a|b|i|br|ul|li|details|summary"
    r"|pre|del|ins|code|em|strong)\b",
    re.IGNORECASE,
)


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the widgets hand to `st.markdown`, instead of drawing it."""
    from ui import widgets

    out: list[str] = []
    monkeypatch.setattr(widgets.st, "markdown", lambda body, **kw: out.append(body))
    return out


def _assert_inert(out: str) -> None:
    assert HOSTILE not in out and "<script" not in out and "<img" not in out
    assert ESCAPED in out


def test_fit_table_escapes_cells_and_column_names(drawn: list[str]) -> None:
    from ui import widgets

    widgets.fit_table(pd.DataFrame({HOSTILE: [HOSTILE, "plain"], "n": [3, None]}))
    (out,) = drawn
    _assert_inert(out)
    assert out.count(f'data-label="{ESCAPED}"') == 2  # the hostile column name, on both rows
    assert '<td class="num" data-label="n">3.0</td>' in out
    assert '<td class="num" data-label="n"></td>' in out  # a missing number is an empty cell
    assert f'<td class="" data-label="{ESCAPED}">plain</td>' in out


def test_run_heading_escapes_the_label_and_the_id(drawn: list[str]) -> None:
    from ui import widgets

    widgets.run_heading(HOSTILE, "run-" + HOSTILE)
    (out,) = drawn
    _assert_inert(out)
    assert out.count(ESCAPED) == 3  # hover text, label and run id


def test_compare_diff_escapes_the_question_text() -> None:
    from ui import compare

    row = {
        "agree": False,
        "pair_id": "p1",
        "pair_index": 1,
        "question": HOSTILE,
        "verdict_a": "degraded",
        "verdict_b": "passed",
        **dict.fromkeys(("d_a", "d_b", "bound_a", "bound_b"), 0.5),
    }
    _assert_inert(compare.diff_html(pd.DataFrame([row]), "run-a", "run-b"))


def test_rewordings_table_escapes_rewordings_prompts_and_labels() -> None:
    from ui import rewordings

    row = {
        "counterexample": False,
        "within_noise": False,
        "stage": 1,
        "generator": HOSTILE,
        "t": 1,
        "diff": [("=", HOSTILE)],
        "prompt": (HOSTILE, HOSTILE),
        "p_pre": 0.9,
        "p_post": 0.8,
        "drop": 0.1,
        "d": 0.2,
        "bound": 0.5,
        "labels": [HOSTILE],
    }
    out = rewordings.table_html([row], 0.5)
    _assert_inert(out)
    assert out.count(ESCAPED) == 5  # generator, rewording, two prompts, label


def test_no_dashboard_module_writes_html_in_python() -> None:
    """HTML lives in eraudit_core/present/report/templates; a string in ui/, pages/ or app.py that
    holds a tag is HTML built outside the autoescaped templates."""
    files = [*sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "pages").glob("*.py"))]
    found = []
    for path in [*files, ROOT / "app.py"]:
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        found += [
            f"{path.relative_to(ROOT)}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and TAG.search(node.value)
        ]
    assert len(files) > 10 and not found, found
