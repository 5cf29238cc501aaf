"""Each page's filters in the URL, so a reload or a shared link shows the same view.

A filter's value lives in a session-state slot (it survives a page that does not draw it) and
is mirrored into the query string. A page reads its keys from the URL only when it is arrived
at (`page_arrival`); on its own reruns the widgets rule and the URL follows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

PAGE_KEYS: dict[str, tuple[str, ...]] = {
    "explorer": ("q", "verdict", "evidence", "null", "took", "sort", "pair"),
    "results": ("show", "colour", "amplified", "min_drop", "together", "only_diff", "diff_sort"),
}
_FILTER_PAGE = "_filter_page"
_FILTER_SLOT = "_filter::"


def page_arrival(page_key: str) -> bool:
    """True on a page's first draw since the session drew another page (or ever): then its
    filters are read from the URL. Called by the page itself, so it holds when a page runs
    on its own (AppTest.switch_page)."""
    arrived = st.session_state.get(_FILTER_PAGE) != page_key
    st.session_state[_FILTER_PAGE] = page_key
    return arrived


def leave_filter_pages(page_key: str) -> None:
    """The entry script, on every page: a page without filters resets the arrival mark and
    drops other pages' filter keys from the URL (their values stay in the session)."""
    if page_key not in PAGE_KEYS:
        st.session_state[_FILTER_PAGE] = page_key
    mine = PAGE_KEYS.get(page_key, ())
    for keys in PAGE_KEYS.values():
        for key in keys:
            if key not in mine and key in st.query_params:
                del st.query_params[key]


def _parse(raw: list[str], default: Any) -> Any:
    if isinstance(default, bool):
        return raw[-1] in ("1", "true", "yes")
    if isinstance(default, float):
        return float(raw[-1])
    if isinstance(default, int):
        return int(raw[-1])
    if isinstance(default, (list, tuple)):
        return list(raw)
    return raw[-1]


def _url_text(value: Any) -> str | list[str]:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return f"{value:g}" if isinstance(value, float) else str(value)


def filter_widget(
    param: str,
    default: Any,
    arrived: bool,
    options: Sequence[Any] | Callable[[Any], bool] | None = None,
    widget_key: str | None = None,
) -> dict[str, Any]:
    """Keyword arguments for a filter widget whose value is owned by a session slot and
    mirrored in the URL under `param`: its value comes from the URL when the page is arrived
    at (and the URL's value is valid), else from the slot, else `default`. Pass them to the
    widget without a value/index/default of its own, then call `put_filter(param, value,
    default)` with what it returns."""
    slot = _FILTER_SLOT + param
    widget_key = widget_key or f"flt-{param}"
    if arrived and param in st.query_params:
        try:
            value = _parse(st.query_params.get_all(param), default)
        except ValueError:
            value = None
        if value is not None and _valid(value, options):
            st.session_state[slot] = value
    value = st.session_state.get(slot, default)
    if not _valid(value, options):
        value = default
    st.session_state[widget_key] = list(value) if isinstance(value, (list, tuple)) else value
    return {"key": widget_key, "on_change": _filter_changed, "args": (widget_key, slot)}


def _valid(value: Any, options: Sequence[Any] | Callable[[Any], bool] | None) -> bool:
    if options is None:
        return True
    if callable(options):  # a check, e.g. a number input's range
        return bool(options(value))
    if isinstance(value, (list, tuple)):
        return all(v in options for v in value)
    return value in options


def _filter_changed(widget_key: str, slot: str) -> None:
    st.session_state[slot] = st.session_state.get(widget_key)


def put_filter(param: str, value: Any, default: Any) -> None:
    """Mirror a filter's value into the URL (absent when it is the default)."""
    is_default = (
        list(value) == list(default)
        if isinstance(default, (list, tuple)) and isinstance(value, (list, tuple))
        else value == default
    )
    if is_default:
        if param in st.query_params:
            del st.query_params[param]
        return
    text = _url_text(value)
    current = st.query_params.get_all(param)
    if current != ([text] if isinstance(text, str) else text):
        st.query_params[param] = text
