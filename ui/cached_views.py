"""A run's tables and sweeps for the pages, computed once per stored state of the run.

Keyed by the run's stored state, so a finished run is computed once per process and a running
one is recomputed as questions finish. The epsilon sweep replays every stored step and is the
slow one, so it is cached on its own and the page draws the cheap views first.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from ui.store_access import db_path, get_store, open_store


def _state_key(run_id: str) -> tuple[str, str, int, str]:
    rec = get_store().run_progress(run_id)
    return (db_path(), str(rec["status"]), int(rec["pairs_done"]), str(rec["finished_at"]))


@st.cache_data(show_spinner=False, max_entries=64)
def _run_views(
    path: str, run_id: str, status: str, pairs_done: int, finished_at: str
) -> dict[str, Any]:
    from eraudit_core import present
    from eraudit_core.method import RunRecord

    store = open_store(path)
    run = RunRecord.read(store, run_id)
    pairs = store.pair_results(run_id)
    return {
        "pairs": pairs,
        "questions": present.question_summary(pairs),
        "standard": present.standard_evaluation(pairs, run.name),
        "confidence": present.confidence_sweep(pairs, run.config),
        "confidence_simultaneous": present.confidence_sweep(pairs, run.config, simultaneous=True),
    }


@st.cache_data(
    show_spinner="Replaying the stored scores at other tolerances (once per run)...",
    max_entries=64,
)
def _epsilon_view(
    path: str, run_id: str, status: str, pairs_done: int, finished_at: str
) -> pd.DataFrame:
    from eraudit_core import present

    return present.run_epsilon_sweep(open_store(path), run_id)


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

    return present.debate_findings(open_store(path), keys[0][0], keys[1][0])


def debate_findings(adversarial_run: str, honest_run: str) -> dict[str, Any]:
    """`present.debate_findings` of two runs, recomputed only when either's state changes."""
    keys = tuple((rid, *_state_key(rid)[1:]) for rid in (adversarial_run, honest_run))
    return _debate_findings(db_path(), keys)
