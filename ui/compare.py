"""Two runs as a per-question diff on the Results page: side by side,
disagreements only on demand, sorted as chosen, wrapped to fit the page."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from eraudit_core import present
from ui import state

COLUMNS = (  # (header, width %)
    ("#", 5),
    ("hidden question", 39),
    ("verdict left", 11),
    ("verdict right", 11),
    ("D left", 8),
    ("D right", 8),
    ("bound left", 9),
    ("bound right", 9),
)


def _num(x: float) -> str:
    return "n/a" if pd.isna(x) else f"{x:.2g}"


def diff_html(diff: pd.DataFrame) -> str:
    """The diff rows as an escaped HTML fragment (template compare_diff.html)."""
    rows = [
        {
            "agree": bool(r["agree"]),
            "index": "" if pd.isna(r["pair_index"]) else int(r["pair_index"]),
            "question": " ".join(str(r["question"]).split()),
            "verdict_a": r["verdict_a"] or "not in this run",
            "verdict_b": r["verdict_b"] or "not in this run",
            **{k: _num(r[k]) for k in ("d_a", "d_b", "bound_a", "bound_b")},
        }
        for r in diff.to_dict("records")
    ]
    return present.html_fragment("compare_diff.html", columns=COLUMNS, rows=rows)


def show(left: str, right: str, arrived: bool = False) -> None:
    """The per-question diff of two runs with its filter and sort (kept in the session and the
    URL, see `state.filter_widget`)."""
    diff = present.verdict_diff(state.get_store(), left, right)
    n_differ = int((~diff["agree"]).sum())
    c1, c2 = st.columns([2, 3])
    only = c1.toggle(
        f"Disagreements only ({n_differ} of {len(diff)})",
        **state.filter_widget("only_diff", False, arrived, widget_key="compare-disagreements-only"),
    )
    state.put_filter("only_diff", bool(only), False)
    sorts = list(present.DIFF_SORTS)
    how = c2.selectbox(
        "Sort questions",
        sorts,
        **state.filter_widget("diff_sort", sorts[0], arrived, sorts, widget_key="compare-sort"),
    )
    state.put_filter("diff_sort", how, sorts[0])
    shown = present.sort_diff(diff, how, disagreements_only=only)
    if shown.empty:
        st.info("The two runs give every shared question the same verdict.")
        return
    st.markdown(diff_html(shown), unsafe_allow_html=True)
