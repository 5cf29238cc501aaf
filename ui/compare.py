"""Two runs as a per-question diff on the Results page (issue 20 item 3): side by side,
disagreements only on demand, sorted as chosen, wrapped to fit the page."""

from __future__ import annotations

import html

import pandas as pd
import streamlit as st

from eraudit_core import present
from ui import state

DIFF_CSS = """
<style>
.eraudit-diff { width: 100%; overflow-x: hidden; }
.eraudit-diff table { width: 100%; table-layout: fixed; border-collapse: collapse;
  font-size: .85rem; }
.eraudit-diff th, .eraudit-diff td { border-bottom: 1px solid #ddd; padding: .3rem .35rem;
  vertical-align: top; text-align: left; overflow-wrap: anywhere; white-space: normal; }
.eraudit-diff th { background: #f6f6f6; }
.eraudit-diff tr.differ td { background: #fff4e0; }
.eraudit-diff td.num { text-align: right; font-variant-numeric: tabular-nums; }
@media (max-width: 640px) {  /* a phone: let numbers keep their width, the question wraps */
  .eraudit-diff table { table-layout: auto; font-size: .72rem; }
  .eraudit-diff th { width: auto !important; overflow-wrap: normal; }
  .eraudit-diff td.num, .eraudit-diff td.verdict { overflow-wrap: normal; white-space: nowrap; }
  .eraudit-diff th, .eraudit-diff td { padding: .25rem .2rem; }
}
</style>
"""
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
    """The diff rows as an escaped HTML table; rows whose verdicts differ are shaded."""
    esc = html.escape
    head = "".join(f'<th style="width:{w}%">{esc(h)}</th>' for h, w in COLUMNS)
    body = "".join(
        f'<tr class="{"" if r["agree"] else "differ"}">'
        f"<td>{'' if pd.isna(r['pair_index']) else int(r['pair_index'])}</td>"
        f"<td>{esc(' '.join(str(r['question']).split()))}</td>"
        f'<td class="verdict">{esc(r["verdict_a"] or "not in this run")}</td>'
        f'<td class="verdict">{esc(r["verdict_b"] or "not in this run")}</td>'
        f'<td class="num">{_num(r["d_a"])}</td><td class="num">{_num(r["d_b"])}</td>'
        f'<td class="num">{_num(r["bound_a"])}</td><td class="num">{_num(r["bound_b"])}</td></tr>'
        for r in diff.to_dict("records")
    )
    return (
        DIFF_CSS + f'<div class="eraudit-diff"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


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
