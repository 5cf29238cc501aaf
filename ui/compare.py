"""Two runs as a per-question diff on the Results page: side by side,
disagreements only on demand, sorted as chosen, wrapped to fit the page."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from eraudit_core import present
from ui import store_access, url_filters

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


def diff_html(
    diff: pd.DataFrame, left: str | None = None, right: str | None = None, shade: bool = True
) -> str:
    """The diff rows as an escaped HTML fragment (template compare_diff.html). With both run
    ids, each question links to the Explorer on that question with the two runs side by side
    (on the left run, or on the right one for a question only it has). `shade` marks rows whose
    verdicts differ: off when the runs are not comparable, where a difference means nothing."""
    from ui.explore import explorer_link

    def href(r: dict) -> str:
        if left is None or right is None:
            return ""
        if pd.isna(r["verdict_a"]) and not pd.isna(r["verdict_b"]):
            return explorer_link(right, str(r["pair_id"]), left)
        return explorer_link(left, str(r["pair_id"]), right)

    rows = [
        {
            "agree": bool(r["agree"]) or not shade,
            "href": href(r),
            "index": "" if pd.isna(r["pair_index"]) else int(r["pair_index"]),
            "question": " ".join(str(r["question"]).split()),
            "verdict_a": r["verdict_a"] or "not in this run",
            "verdict_b": r["verdict_b"] or "not in this run",
            **{k: _num(r[k]) for k in ("d_a", "d_b", "bound_a", "bound_b")},
        }
        for r in diff.to_dict("records")
    ]
    return present.html_fragment("compare_diff.html", columns=COLUMNS, rows=rows)


def show(left: str, right: str, arrived: bool = False, comparable: bool = True) -> None:
    """The per-question diff of two runs with its filter and sort (kept in the session and the
    URL, see `url_filters.filter_widget`). Runs that are not comparable are listed side by side
    without disagreement counts: their verdicts were reached under different rules."""
    diff = present.verdict_diff(store_access.get_store(), left, right)
    c1, c2 = st.columns([2, 3])
    if comparable:
        n_differ = int((~diff["agree"]).sum())
        only = c1.toggle(
            f"Disagreements only ({n_differ} of {len(diff)})",
            **url_filters.filter_widget(
                "only_diff", False, arrived, widget_key="compare-disagreements-only"
            ),
        )
        url_filters.put_filter("only_diff", bool(only), False)
    else:
        only = False
        c1.caption("Each question of both runs, side by side (not a comparison).")
    sorts = list(present.DIFF_SORTS) if comparable else list(present.DIFF_SORTS)[1:]
    how = c2.selectbox(
        "Sort questions",
        sorts,
        **url_filters.filter_widget(
            "diff_sort", sorts[0], arrived, sorts, widget_key="compare-sort"
        ),
    )
    url_filters.put_filter("diff_sort", how, sorts[0])
    shown = present.sort_diff(diff, how, disagreements_only=only)
    if shown.empty:
        st.info("The two runs give every shared question the same verdict.")
        return
    st.caption("Click a question to open it in the Explorer with both runs side by side.")
    st.markdown(diff_html(shown, left, right, shade=comparable), unsafe_allow_html=True)
