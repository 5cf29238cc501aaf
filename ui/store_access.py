"""The dashboard's one door to the store, the job runner and the embedded demo.

Pages and ui/ modules open no database and start no thread themselves: they ask here.
Resources live in `st.cache_resource`, so one process has one Store per database file (which
holds the file only for a transaction or a short lease, never for the server's lifetime) and
one JobRunner. Results are never kept only in session state: everything is read back from
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
from eraudit_core.present import shown_status
from eraudit_core.store import Store

DB_ENV = "ERAUDIT_DB"
NO_DEMO_ENV = "ERAUDIT_NO_DEMO"
DEFAULT_DB = Path.home() / ".eraudit" / "studio.duckdb"


def db_path() -> str:
    """The active database: $ERAUDIT_DB, else ~/.eraudit/studio.duckdb."""
    return os.environ.get(DB_ENV) or str(DEFAULT_DB)


@st.cache_resource(show_spinner=False)
def open_store(path: str) -> Store:
    """The process's Store for `path`. It holds the file only while it reads or writes, so
    `eraudit` commands in a terminal use the same store while the dashboard runs."""
    store = Store(path)
    # Runs whose process died (not runs a terminal is auditing right now) become resumable.
    store.mark_stale_runs_interrupted()
    return store


def get_store() -> Store:
    return open_store(db_path())


@st.cache_resource(show_spinner=False)
def get_runner() -> JobRunner:
    return JobRunner()


@st.cache_resource(show_spinner="Preparing the embedded demo (first launch only)...")
def _demo(path: str) -> dict[str, Any]:
    from eraudit_core.demo import ensure_demo

    try:
        return ensure_demo(open_store(path)).as_dict()
    except (InputError, OSError) as exc:  # a broken demo must not take the dashboard down
        return {"error": str(exc), "run_ids": {}, "live_pair_ids": [], "notes": []}


def demo_info() -> dict[str, Any] | None:
    """The embedded demo (imported once per database), or None when turned off.

    Set ERAUDIT_NO_DEMO=1 to open a store without importing the demo.
    """
    if os.environ.get(NO_DEMO_ENV):
        return None
    return _demo(db_path())


def runs_frame() -> pd.DataFrame:
    return get_store().runs()


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
