"""The dashboard's one door to the library: cached store, job runner, demo, selected runs.

Pages import from here and never open a database, start a thread or load a model themselves.
Resources live in `st.cache_resource`, so one process has one Store per database file (which
holds the file only for a transaction or a short lease, never for the server's lifetime), one
JobRunner and (through the verifier module's own cache) one copy of each model. Results are
never kept only in session state: the selection is a run id, everything else is read back from
the store on each rerun.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from eraudit_core.errors import InputError
from eraudit_core.jobs import JobRunner
from eraudit_core.present import control_run_of, imported_note, shown_status
from eraudit_core.store import Store

DB_ENV = "ERAUDIT_DB"
NO_DEMO_ENV = "ERAUDIT_NO_DEMO"
DEFAULT_DB = Path.home() / ".eraudit" / "studio.duckdb"
RUN_KEY = "selected_run"  # the sidebar's pickers (widget keys; the choice is in *_SLOT)
COMPARE_KEY = "compare_run"


def db_path() -> str:
    """The active database: $ERAUDIT_DB, else ~/.eraudit/studio.duckdb."""
    return os.environ.get(DB_ENV) or str(DEFAULT_DB)


@st.cache_resource(show_spinner=False)
def _open_store(path: str) -> Store:
    """The process's Store for `path`. It holds the file only while it reads or writes, so
    `eraudit` commands in a terminal use the same store while the dashboard runs."""
    store = Store(path)
    # Runs whose process died (not runs a terminal is auditing right now) become resumable.
    store.mark_stale_runs_interrupted()
    return store


def get_store() -> Store:
    return _open_store(db_path())


@st.cache_resource(show_spinner=False)
def get_runner() -> JobRunner:
    return JobRunner()


@st.cache_resource(show_spinner="Preparing the embedded demo (first launch only)...")
def _demo(path: str) -> dict[str, Any]:
    from eraudit_core.demo import ensure_demo

    try:
        return ensure_demo(_open_store(path)).as_dict()
    except (InputError, OSError) as exc:  # a broken demo must not take the dashboard down
        return {"error": str(exc), "run_ids": {}, "live_pair_ids": [], "notes": []}


def demo_info() -> dict[str, Any] | None:
    """The embedded demo (imported once per database), or None when turned off.

    Set ERAUDIT_NO_DEMO=1 to open a store without importing the demo.
    """
    if os.environ.get(NO_DEMO_ENV):
        return None
    return _demo(db_path())


# -- runs and selection ------------------------------------------------------------------------


def runs_frame() -> pd.DataFrame:
    return get_store().runs()


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


# The selection lives in these two session-state slots and nowhere else. They are not widget
# keys: a widget's state is dropped when its identity changes (new options) or when a page
# does not draw it, and that is how choices used to revert. Pickers are drawn from these slots
# and write back to them when the user changes them (`bind_picker`).
SELECTED_SLOT = "_run_choice"
COMPARE_SLOT = "_compare_choice"
_KNOWN_RUNS = "_known_runs"
_LAST_PAGE = "_last_page"


def default_run(runs: pd.DataFrame) -> str | None:
    """The run a session without a choice opens: the newest whose status is done. A pending,
    running, cancelled, failed or interrupted run is never chosen for the user (it is offered
    by the new-run notice instead); None when no run is done."""
    if runs.empty:
        return None
    done = runs.loc[runs["status"] == "done", "run_id"]
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
    Why: "the newest runs on the benchmark" put a 40-question model organism beside two
    222-question debate arms, another experiment, and made Results replay all three."""
    done = runs[runs["status"] == "done"]
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


NO_RUN = ""  # the "none" choice of an optional picker (a selectbox shows None as empty)


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


# -- the URL: run, compare and each page's filters ----------------------------------------------
# The selection and the filters live in session-state slots (they survive a page that does not
# draw them) and are mirrored into the query string, so a reload or a shared link shows the same
# view. A page reads its keys from the URL only when it is arrived at (`page_arrival`); on its
# own reruns the widgets rule and the URL follows.

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


def sync_selection_url() -> None:
    """`run=` and `compare=` in the URL, as the session holds them."""
    for key, slot in (("run", SELECTED_SLOT), ("compare", COMPARE_SLOT)):
        value = st.session_state.get(slot)
        if value:
            if st.query_params.get(key) != value:
                st.query_params[key] = value
        elif key in st.query_params:
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


# -- checkpoints ------------------------------------------------------------------------------


def validate_checkpoint_spec(text: str) -> str:
    """Parse a checkpoint spec (local or served) without loading it; returns its canonical text."""
    from eraudit_core.verifier import parse_spec

    return parse_spec(text).text


def register_checkpoint(
    spec_text: str, name: str = "", *, readout: str | None = None, min_label_mass: float = 0.5
) -> dict[str, Any]:
    """Load a checkpoint once (cached by the verifier module), fingerprint and store it.

    The probe set's label mass must reach `min_label_mass` (else the error names the readout
    to try); `readout` overrides the detected readout profile. A served checkpoint is checked
    against its earlier registration (its probe question must still get the same log-probs)
    before anything is stored."""
    from eraudit_core.audit import register_checkpoint as register
    from eraudit_core.verifier import load_checkpoint, parse_spec

    spec = parse_spec(spec_text)
    verifier = load_checkpoint(spec, readout=readout)
    details = register(get_store(), verifier, name or spec.text, min_label_mass=min_label_mass)
    return {"fingerprint": verifier.fingerprint, **details}


# -- runs in the background -------------------------------------------------------------------


def run_record(run_id: str) -> dict[str, Any] | None:
    """The stored run, or None while a launched run is still loading its checkpoints."""
    try:
        return get_store().run(run_id)
    except InputError:
        return None


def status_shown(run_id: str, status: str, cancel_requested: bool) -> str:
    """`present.shown_status` with what this process knows of the run's worker."""
    job = get_runner().get(run_id)
    here = bool(job and job.alive and not job.cancel_event.is_set())
    return shown_status(status, cancel_requested=cancel_requested, resuming_here=here)


def job_state(run_id: str) -> dict[str, Any]:
    """What this process knows about a run's thread: alive, and an error if it died."""
    job = get_runner().get(run_id)
    return {
        "known": job is not None,
        "alive": bool(job and job.alive),
        "error": job.error if job else None,
    }


# -- views, cached per run state ---------------------------------------------------------------
# Keyed by the run's stored state, so a finished run is computed once per process and a running
# one is recomputed as questions finish. The epsilon sweep replays every stored step and is the
# slow one, so it is cached on its own and the page draws the cheap views first.


def _state_key(run_id: str) -> tuple[str, str, int, str]:
    rec = get_store().run_progress(run_id)
    return (db_path(), str(rec["status"]), int(rec["pairs_done"]), str(rec["finished_at"]))


@st.cache_data(show_spinner=False, max_entries=64)
def _run_views(
    path: str, run_id: str, status: str, pairs_done: int, finished_at: str
) -> dict[str, Any]:
    from eraudit_core import present
    from eraudit_core.audit import AuditConfig

    store = _open_store(path)
    run = store.run(run_id)
    pairs = store.pair_results(run_id)
    config = AuditConfig.from_dict(run["config"])
    return {
        "pairs": pairs,
        "questions": present.question_summary(pairs),
        "standard": present.standard_evaluation(pairs, str(run["label"] or run_id)),
        "confidence": present.confidence_sweep(pairs, config),
        "confidence_simultaneous": present.confidence_sweep(pairs, config, simultaneous=True),
    }


@st.cache_data(
    show_spinner="Replaying the stored scores at other tolerances (once per run)...",
    max_entries=64,
)
def _epsilon_view(
    path: str, run_id: str, status: str, pairs_done: int, finished_at: str
) -> pd.DataFrame:
    from eraudit_core import present

    return present.run_epsilon_sweep(_open_store(path), run_id)


def run_views(run_id: str) -> dict[str, Any]:
    """Per-run views except the epsilon sweep (see `epsilon_view`)."""
    path, status, done, finished = _state_key(run_id)
    return _run_views(path, run_id, status, done, finished)


def epsilon_view(run_id: str) -> pd.DataFrame:
    """`views.epsilon_sweep` of a run, recomputed only when its stored state changes."""
    path, status, done, finished = _state_key(run_id)
    return _epsilon_view(path, run_id, status, done, finished)


@st.cache_data(show_spinner="Reading both debate arms beside the paper (once)...", max_entries=8)
def _debate_findings(path: str, keys: tuple[Any, ...]) -> dict[str, Any]:
    from eraudit_core import present

    return present.debate_findings(_open_store(path), keys[0][0], keys[1][0])


def debate_findings(adversarial_run: str, honest_run: str) -> dict[str, Any]:
    """`present.debate_findings` of two runs, recomputed only when either's state changes."""
    keys = tuple((rid, *_state_key(rid)[1:]) for rid in (adversarial_run, honest_run))
    return _debate_findings(db_path(), keys)
