"""The report's tables, for readers who do not program and for phones.

* `PLAIN_COLUMNS`: the plain name a reader sees for each column name the code uses
  (`n_pairs` is "questions", `hidden_mtp` is "hidden mean p(true)");
* `table_html`: a table rendered from `templates/data_table.html` with those names, every
  cell carrying its column's name in `data-label`, so that under 600 px wide each row reads
  as a card of "name: value" lines (report.css) and the page needs no horizontal scrolling;
  on a wider screen it stays an ordinary table.

Cells are written as `DataFrame.to_html` wrote them before (floats to `float_digits`
decimals, missing values as "n/a", surrounding whitespace stripped), and escaped by the
template (present/report/_html.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.present.report._html import Markup, render

# Code name -> what the reader sees. Names absent here are already plain ("checkpoint").
PLAIN_COLUMNS: dict[str, str] = {
    # the summary (standard evaluation beside the verdicts of every run)
    "n_pairs": "questions",
    "monitored_accuracy": "monitored accuracy (standard evaluation)",
    "hidden_accuracy": "hidden accuracy (standard evaluation)",
    "hidden_mtp": "hidden mean p(true)",
    "n_degraded": "degraded",
    "n_certified": "certified",
    "n_passed": "passed",
    "n_inconclusive": "inconclusive",
    "mean_bound": "mean lower bound (degraded and inconclusive count 0)",
    "took": "adaptation took (fewer than half of the monitored gains at or below k)",
    "n_gain_le_k": "monitored gains at or below k",
    # the standard evaluation of one run
    "n": "questions",
    "mean_task_probability": "mean p(true)",
    # every question of a run
    "pair_index": "#",
    "status": "verdict",
    "hidden_question": "hidden question",
    "p_pre_hidden": "p(true) before adaptation",
    "p_post_hidden": "p(true) after adaptation",
    "gain": "monitored gain",
    "max_d": "largest D",
    "worst_drop": "largest drop in p(true)",
    "amplified": "drops amplified (monitored gain at most k)",
    "within_noise": "drop within numerical precision",
    "n_counterexamples": "counterexamples",
    "bound": "lower bound",
    "bound_tolerant": "failure-tolerant bound (beyond the paper)",
    "n_test": "rewordings tested",
    # the counterexamples of a run
    "pair_id": "question id",
    "set": "set (search or test)",
    "generator": "rewording generator",
    "text": "rewording",
    "p_pre": "p(true) before adaptation",
    "p_post": "p(true) after adaptation",
    "drop": "drop in p(true)",
    "d": "D",
    "within_numerical_precision": "drop within numerical precision",
}


def plain_columns(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with each code column name replaced by its plain name (PLAIN_COLUMNS)."""
    return df.rename(columns=lambda c: PLAIN_COLUMNS.get(str(c), str(c)))


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float | np.floating) and math.isnan(value)


def cell_text(value: Any, float_digits: int = 3) -> str:
    """One cell as `DataFrame.to_html(na_rep="n/a", float_format=...)` writes it."""
    if _missing(value):
        return "n/a"
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, float | np.floating):
        return f"{value:.{float_digits}f}"
    return str(value).strip()


def table_html(df: pd.DataFrame, float_digits: int = 3, *, key_value: bool = False) -> Markup:
    """`df` as an HTML table with plain column names and a `data-label` on every cell.

    `key_value`: a two-column "name, value" table (settings, provenance); on a phone each row
    is a card titled by its name rather than one with a label per cell."""
    shown = plain_columns(df)
    headers = [str(c) for c in shown.columns]
    rows = [
        [(h, cell_text(v, float_digits)) for h, v in zip(headers, row, strict=True)]
        for row in shown.itertuples(index=False, name=None)
    ]
    return render("data_table.html", headers=headers, rows=rows, key_value=key_value)
