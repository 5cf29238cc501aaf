"""The selected and compared runs in the URL (`?run=`, `?compare=`), so a reload or a shared
link opens the same runs."""

from __future__ import annotations

import streamlit as st

from ui.run_picking import COMPARE_SLOT, SELECTED_SLOT, select_run, set_compare_run

_LAST_PAGE = "_last_page"


def apply_deep_link(page_key: str, ids: list[str]) -> None:
    """Read `?run=` / `?compare=` only when a URL arrives from outside this page: the first
    run of a session (a bookmark, a shared link, a reload) or a link from another page. A rerun
    of the same page never reads them, so what the page itself wrote to the URL cannot undo
    a choice made since."""
    arrived = st.session_state.get(_LAST_PAGE) != page_key
    st.session_state[_LAST_PAGE] = page_key
    if not arrived:
        return
    rid = st.query_params.get("run")
    if rid and rid in ids:
        select_run(rid)
    cmp = st.query_params.get("compare")
    if cmp and cmp in ids and cmp != st.session_state.get(SELECTED_SLOT):
        set_compare_run(cmp)


def sync_selection_url() -> None:
    """`run=` and `compare=` in the URL, as the session holds them."""
    for key, slot in (("run", SELECTED_SLOT), ("compare", COMPARE_SLOT)):
        value = st.session_state.get(slot)
        if value:
            if st.query_params.get(key) != value:
                st.query_params[key] = value
        elif key in st.query_params:
            del st.query_params[key]
