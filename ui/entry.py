"""Make every page run inside app.py's navigation, even when a URL lands on it first.

Streamlit treats a `pages/` folder next to the entry script as an old-style multipage app
until some session runs `st.navigation`. On a freshly started server, the first visitor who
opens a page URL directly (a bookmarked deep link such as /explorer?run=...&pair=...) gets
that page run on its own: no shared sidebar, no navigation, and every later session stuck the
same way. Each page calls `ensure_navigation()` first; in that situation it switches the
server to app.py's navigation and reruns, which lands on the same page with the same query
parameters (the page's URL path, hence its hash, is the same in both modes).
"""

from __future__ import annotations

import streamlit as st


def ensure_navigation() -> None:
    try:
        from streamlit import config
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a Streamlit without this switch has no such fallback either
        return
    if config.get_option("global.appTest"):
        # AppTest.switch_page runs a page on its own by design (and resets the switch before
        # every run); a rerun there would only drop the widget event being tested.
        return
    if getattr(PagesManager, "uses_pages_directory", None):
        PagesManager.uses_pages_directory = False
        st.rerun()
