"""ER-Audit Studio: the dashboard's entry point (`streamlit run app.py`).

Navigation over the pages of docs/design.md §7 and a shared sidebar that shows the active store and
the selected run(s). The pages live in pages/, one file a page; they read everything from the
store through ui/ (`ui.store_access`, `ui.run_picking`).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from eraudit_core import present
from eraudit_core.cores import passive_omp_wait
from eraudit_core.errors import StoreError
from ui import run_picking, store_access, url_filters, url_selection, widgets

# The icon ships with the app: a `:material/...:` page icon makes the browser fetch the favicon
# from a font server, and the dashboard must work offline.
PAGE_ICON = Path(__file__).resolve().parent / "ui" / "assets" / "page_icon.png"

# Before any page imports torch: the audit's threads share the cores with the page and the
# browser, and sleep rather than spin while they wait for each other (eraudit_core/cores.py).
passive_omp_wait()

st.set_page_config(page_title="ER-Audit Studio", page_icon=str(PAGE_ICON), layout="wide")
# The one-click audit's checkpoints start loading with the first page this process draws,
# whichever it is, while the browser is still building it (ui/widgets.py).
widgets.preload_offered_models()

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/setup.py", title="Setup", icon=":material/settings:"),
    st.Page("pages/run.py", title="Run", icon=":material/play_circle:"),
    st.Page("pages/explorer.py", title="Question explorer", icon=":material/search:"),
    st.Page("pages/results.py", title="Results", icon=":material/insights:"),
    st.Page("pages/sensitivity.py", title="Auditor sensitivity", icon=":material/tune:"),
    st.Page("pages/share.py", title="Share", icon=":material/ios_share:"),
]

page = st.navigation(PAGES)

# A wider sidebar on a wide screen, so the run pickers show run id, status and time in full;
# a phone keeps Streamlit's own width.
st.html(present.html_fragment("sidebar_width.html"))


def sidebar() -> None:
    """The active store and the run pickers, shared by every page."""
    store = store_access.get_store()
    demo = store_access.demo_info()

    url_filters.leave_filter_pages(page.url_path)
    with st.sidebar:
        st.caption("Active store")
        st.code(store.path, language=None, wrap_lines=True)
        if demo is not None and demo.get("preparing"):
            # no run is chosen for the session from a half-built demo: the pickers come with
            # the finished runs, as on a store where they were already built
            st.info("Preparing the embedded demo's finished runs (first launch only).")
            return
        runs = store_access.runs_frame()
        if runs.empty:
            st.info("No runs yet. Start one on the Run page.")
            return
        ids = [str(r) for r in runs["run_id"]]
        url_selection.apply_deep_link(page.url_path, ids)
        chosen = run_picking.initial_selection(runs)
        # Without a finished run nothing is chosen for the user: the picker then reads "none".
        options = ids if chosen is not None else [run_picking.NO_RUN, *ids]
        widgets.run_picker(
            "Selected run", options, runs, run_picking.RUN_KEY, run_picking.SELECTED_SLOT, chosen
        )
        others = [run_picking.NO_RUN, *[r for r in ids if r != chosen]]
        widgets.run_picker(
            "Compare with (optional)",
            others,
            runs,
            run_picking.COMPARE_KEY,
            run_picking.COMPARE_SLOT,
            run_picking.compare_run(),
        )
        url_selection.sync_selection_url()
        if chosen is not None:
            widgets.imported_notice(chosen)
        widgets.new_run_notice(runs, run_picking.new_runs(ids, run_picking.default_run(runs)))


# Another process (a terminal audit, an import) may hold the store for a moment; the store
# waits for it, and if it stays busy past its timeout the page says so instead of crashing.
try:
    sidebar()
    page.run()
except StoreError as exc:
    widgets.store_notice(exc)
