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
from ui import live_threads
from ui.demo_preparation import MODELS_LOADING, DemoPreparation

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
    """The process's audit threads; each sets the model's intra-op threads for itself."""
    return JobRunner(prepare=live_threads.apply_audit_threads)


def _demo_error(exc: BaseException | str) -> dict[str, Any]:
    return {"error": str(exc), "run_ids": {}, "live_pair_ids": [], "notes": []}


@st.cache_resource(show_spinner="Importing the embedded demo's questions (first launch only)...")
def _demo_start(path: str) -> dict[str, Any]:
    """The demo as far as it is in the store: complete (`ensure_demo`, quick when its runs are
    all there), or the inputs and the live questions with `preparing`, the arms whose finished
    runs are still to be built (in the background, `_demo_preparation`)."""
    from eraudit_core.demo import demo_runs_to_build, demo_start, ensure_demo

    try:
        store = open_store(path)
        todo = demo_runs_to_build(store)
        if not todo:
            return ensure_demo(store).as_dict()
        return {**demo_start(store).as_dict(), "preparing": todo}
    except (InputError, OSError) as exc:  # a broken demo must not take the dashboard down
        return _demo_error(exc)


@st.cache_resource(show_spinner=False)
def _demo_preparation(path: str) -> DemoPreparation:
    """The demo's finished runs, built once per store and process in the background; it waits
    while the one-click audit's checkpoints load or an audit of this process runs."""
    from eraudit_core.demo import ensure_demo

    runner = get_runner()

    def busy() -> bool:
        return bool(runner.running()) or MODELS_LOADING.is_set()

    return DemoPreparation(
        lambda pause: ensure_demo(open_store(path), should_cancel=pause).as_dict(), busy
    ).start()


def demo_enabled() -> bool:
    """Whether this dashboard opens its store with the embedded demo (ERAUDIT_NO_DEMO unset)."""
    return not os.environ.get(NO_DEMO_ENV)


def demo_info() -> dict[str, Any] | None:
    """The embedded demo (imported once per database), or None when turned off. While its
    finished runs are being built: the inputs and live questions, with `preparing` (the arms
    still to build) and `paused` (waiting for a live audit).

    Set ERAUDIT_NO_DEMO=1 to open a store without importing the demo.
    """
    if not demo_enabled():
        return None
    start = _demo_start(db_path())
    if start.get("error") or not start.get("preparing"):
        return start
    prep = _demo_preparation(db_path())
    if not prep.finished:
        return {**start, "paused": prep.paused}
    if prep.result is None:
        return _demo_error(prep.error or "the demo's preparation stopped")
    return prep.result


def wait_for_demo(timeout: float | None = None) -> bool:
    """Block until the demo's background preparation (if any) ended; True when it has."""
    start = _demo_start(db_path())
    if not start.get("preparing"):
        return True
    return _demo_preparation(db_path()).wait(timeout)


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
    """What this process knows about a run's thread: alive, whether its engine has reported
    progress (something was scored and stored), and an error if it died."""
    job = get_runner().get(run_id)
    return {
        "known": job is not None,
        "alive": bool(job and job.alive),
        "reported": bool(job and job.progress is not None),
        "error": job.error if job else None,
    }
