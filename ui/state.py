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
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from eraudit_core.errors import InputError
from eraudit_core.jobs import JobRunner
from eraudit_core.present import imported_note
from eraudit_core.store import Store

DB_ENV = "ERAUDIT_DB"
NO_DEMO_ENV = "ERAUDIT_NO_DEMO"
DEFAULT_DB = Path.home() / ".eraudit" / "studio.duckdb"
RUN_KEY = "selected_run"
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
    row = runs.loc[runs["run_id"] == run_id]
    if row.empty:
        return run_id
    label = row["label"].iloc[0] or run_id
    note = imported_note(row.iloc[0].to_dict()) if "imported_from" in row else None
    return f"{label} [{row['status'].iloc[0]}]" + (f" ({note})" if note else "")


def selected_run() -> str | None:
    """The run chosen in the sidebar, else the `run` query parameter, else the newest run.

    The fallbacks matter when a page runs without the entry script having drawn the sidebar
    (a page opened directly, or under AppTest.switch_page).
    """
    ids = set(runs_frame()["run_id"])
    for rid in (st.session_state.get(RUN_KEY), st.query_params.get("run")):
        if rid and rid in ids:
            return str(rid)
    runs = runs_frame()
    return None if runs.empty else str(runs["run_id"].iloc[0])


def default_runs_to_show() -> list[str]:
    """The selected run and its comparison; without one, runs on the same benchmark (up to 3)."""
    sel = selected_run()
    if sel is None:
        return []
    cmp = compare_run()
    if cmp:
        return [sel, cmp]
    runs = runs_frame()
    bench = runs.loc[runs["run_id"] == sel, "benchmark_id"].iloc[0]
    same = [r for r in runs.loc[runs["benchmark_id"] == bench, "run_id"] if r != sel]
    return [sel, *same[:2]]


def compare_run() -> str | None:
    rid = st.session_state.get(COMPARE_KEY)
    return str(rid) if rid else None


def select_run(run_id: str) -> None:
    """Make `run_id` the selected run from the next rerun on.

    The sidebar widget already exists when a page runs, and a widget's state cannot change
    after it is drawn, so the choice waits in a pending slot that the next rerun applies.
    """
    st.session_state["_pending_run"] = run_id


def sync_selection_from_query() -> None:
    """Apply a pending choice, or a deep link (?run=...) once, before the sidebar is drawn."""
    pending = st.session_state.pop("_pending_run", None)
    if pending:
        st.session_state[RUN_KEY] = pending
        st.session_state["_applied_run_param"] = pending
        return
    rid = st.query_params.get("run")
    if rid and st.session_state.get("_applied_run_param") != rid:
        st.session_state["_applied_run_param"] = rid
        if rid in set(runs_frame()["run_id"]):
            st.session_state[RUN_KEY] = rid


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
