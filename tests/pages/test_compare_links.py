"""Each question of a comparison links to the Explorer on that question with both runs (fast:
the HTML the Results page draws, no browser)."""

from __future__ import annotations

import re

import pandas as pd

from ui import compare
from ui.explore import explorer_link


def _diff() -> pd.DataFrame:
    rows = [
        ("p1", 1, "Which ship?", "degraded", "certified", False),
        ("p&2", 2, "Who <b>left</b>?", "passed", "passed", True),
        ("p3", 3, "Only right?", None, "degraded", False),
    ]
    return pd.DataFrame(
        [
            {"pair_id": p, "pair_index": i, "question": q, "verdict_a": a, "verdict_b": b,
             "agree": agree, "d_a": 0.1, "d_b": 0.2, "bound_a": 0.5, "bound_b": 0.6}
            for p, i, q, a, b, agree in rows
        ]
    )  # fmt: skip


def test_each_question_opens_the_explorer_with_both_runs() -> None:
    out = compare.diff_html(_diff(), "run-a", "run-b")
    links = re.findall(r'<a href="([^"]+)" target="_self">', out)
    assert links == [
        "explorer?run=run-a&amp;pair=p1&amp;compare=run-b",
        "explorer?run=run-a&amp;pair=p%262&amp;compare=run-b",
        # a question only the right run has opens on the right run, beside the left
        "explorer?run=run-b&amp;pair=p3&amp;compare=run-a",
    ]
    assert "&lt;b&gt;left&lt;/b&gt;" in out and out.count('class="differ"') == 2


def test_not_comparable_runs_are_listed_without_shading_disagreements() -> None:
    out = compare.diff_html(_diff(), "run-a", "run-b", shade=False)
    assert 'class="differ"' not in out and out.count("<a href=") == 3


def test_without_run_ids_there_are_no_links() -> None:
    assert "<a href" not in compare.diff_html(_diff())


def test_explorer_link_without_a_comparison() -> None:
    assert explorer_link("r", "p") == "explorer?run=r&pair=p"
