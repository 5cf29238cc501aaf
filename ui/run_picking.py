"""Which run the session shows: the selected run, the run it is compared with, and the runs
offered as new.

The selection lives in two session-state slots and nowhere else. They are not widget keys:
Streamlit drops a widget's state when its identity changes (new options) or when a page does
not draw it, which would revert the user's choice. Pickers are drawn from these slots and
write back to them when the user changes them (`bind_picker`).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from eraudit_core.present import control_run_of, imported_note
from eraudit_core.types import RunStatus
from ui.store_access import runs_frame, status_shown

RUN_KEY = "selected_run"  # the sidebar's pickers (widget keys; the choice is in *_SLOT)
COMPARE_KEY = "compare_run"
SELECTED_SLOT = "_run_choice"
COMPARE_SLOT = "_compare_choice"
NO_RUN = ""  # the "none" choice of an optional picker (a selectbox shows None as empty)
_KNOWN_RUNS = "_known_runs"


def run_label(runs: pd.DataFrame, run_id: str) -> str:
    """What every run picker shows: run id, status and time first (so a narrow picker still
    tells runs apart and shows which are finished), then the label and any import note."""
    row = runs.loc[runs["run_id"] == run_id]
    if row.empty:
        return run_id
    r = row.iloc[0]
    parts = [run_id, status_shown(run_id, str(r["status"]), r.get("cancel_requested") in (True, 1))]
    created = r.get("created_at")
    if created is not None and not pd.isna(created):
        parts.append(pd.Timestamp(created).strftime("%m-%d %H:%M"))
    parts.append(str(r["label"] or "unlabelled"))
    note = imported_note(r.to_dict()) if "imported_from" in row else None
    if note:
        parts.append(note)
    return " · ".join(parts)


def default_run(runs: pd.DataFrame) -> str | None:
    """The run a session without a choice opens: the newest whose status is done. A pending,
    running, cancelled, failed or interrupted run is never chosen for the user (it is offered
    by the new-run notice instead); None when no run is done."""
    if runs.empty:
        return None
    done = runs.loc[runs["status"] == RunStatus.DONE, "run_id"]
    return str(done.iloc[0]) if not done.empty else None


def selected_run() -> str | None:
    """The run the user chose, else a `run` deep link, else the newest finished run.

    The fallbacks matter when a page runs without the entry script having drawn the sidebar
    (a page opened directly, or under AppTest.switch_page).
    """
    runs = runs_frame()
    ids = set(runs["run_id"])
    for rid in (st.session_state.get(SELECTED_SLOT), st.query_params.get("run")):
        if rid and rid in ids:
            return str(rid)
    return default_run(runs)


def compare_run() -> str | None:
    rid = st.session_state.get(COMPARE_SLOT)
    return str(rid) if rid and rid != st.session_state.get(SELECTED_SLOT) else None


def default_runs_to_show() -> list[str]:
    """The selected run and its comparison; without one, finished runs on the same benchmark
    (up to 3), so an empty cancelled run is never shown unasked."""
    sel = selected_run()
    if sel is None:
        return []
    cmp = compare_run()
    if cmp:
        return [sel, cmp]
    return related_runs(runs_frame(), sel)


def related_runs(runs: pd.DataFrame, sel: str, most: int = 3) -> list[str]:
    """`sel` and the finished runs that belong beside it: its control and the runs that name
    it as theirs; without either, finished runs on the same benchmark with as many questions.
    Why: "the newest runs on the benchmark" would put a 40-question model organism beside two
    222-question debate arms, another experiment, and make Results replay all three."""
    done = runs[runs["status"] == RunStatus.DONE]
    controls = {
        str(r): control_run_of(p) for r, p in zip(runs["run_id"], runs["provenance"], strict=True)
    }
    family = [controls.get(sel)] + [r for r in done["run_id"] if controls.get(str(r)) == sel]
    alongside = [str(r) for r in family if r and r != sel and r in set(done["run_id"])]
    if not alongside:
        row = runs.loc[runs["run_id"] == sel].iloc[0]
        alike = done[
            (done["benchmark_id"] == row["benchmark_id"]) & (done["n_pairs"] == row["n_pairs"])
        ]
        alongside = [str(r) for r in alike["run_id"] if r != sel]
    return [sel, *dict.fromkeys(alongside)][:most]


def select_run(run_id: str) -> None:
    """Make `run_id` the selected run (every picker shows it from the next draw on)."""
    st.session_state[SELECTED_SLOT] = run_id
    if st.session_state.get(COMPARE_SLOT) == run_id:
        st.session_state[COMPARE_SLOT] = None


def set_compare_run(run_id: str | None) -> None:
    st.session_state[COMPARE_SLOT] = run_id


def bind_picker(widget_key: str, value: object) -> None:
    """Show `value` in the picker `widget_key`, drawn right after.

    Setting a widget's value through session state before it is drawn is how Streamlit lets
    the app, not the widget, own the value; `picker_changed` copies a user's change into the
    slot it stands for."""
    st.session_state[widget_key] = value


def picker_changed(widget_key: str, slot: str) -> None:
    """on_change of a bound picker: the user's choice becomes the one source of truth."""
    st.session_state[slot] = st.session_state.get(widget_key) or None
    if slot == SELECTED_SLOT and st.session_state.get(COMPARE_SLOT) == st.session_state[slot]:
        st.session_state[COMPARE_SLOT] = None


def initial_selection(runs: pd.DataFrame) -> str | None:
    """The selected run, fixed the first time a session sees runs (the newest finished one
    then, see `default_run`) and changed only by the user: a run started later never takes
    its place. None while no run is done and none was picked."""
    ids = list(runs["run_id"])
    current = st.session_state.get(SELECTED_SLOT)
    if current not in ids:
        current = default_run(runs)
        st.session_state[SELECTED_SLOT] = current
    if (
        st.session_state.get(COMPARE_SLOT) not in ids
        or st.session_state.get(COMPARE_SLOT) == current
    ):
        st.session_state[COMPARE_SLOT] = None
    return None if current is None else str(current)


def new_runs(ids: list[str], default: str | None = None) -> list[str]:
    """Runs to offer (newest first): those that appeared since this session first listed the
    runs, and at the session's start those newer than its default, the newest done run (so
    not done, and not chosen). A link to an older run does not make the finished runs after
    it "new"."""
    if _KNOWN_RUNS not in st.session_state:
        start = ids.index(default) if default in ids else len(ids)
        st.session_state[_KNOWN_RUNS] = set(ids[start:])
    known = st.session_state[_KNOWN_RUNS]
    return [r for r in ids if r not in known]


def acknowledge_runs(run_ids: list[str]) -> None:
    st.session_state.setdefault(_KNOWN_RUNS, set()).update(run_ids)
