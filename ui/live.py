"""The Run page's live panel: a running audit as an auditor reads it, polled from the store.

The background thread (eraudit_core.runs via JobRunner) never calls streamlit; the panel is an
`st.fragment(run_every=...)` that re-reads the store, so a browser reload, a second tab or a
restarted app all see the same state. Progress, rate and time left come from
`present.live_progress` (paraphrases as they are written, a moving-window rate, elapsed time
without pauses); the chart follows any question of the run from its first scored paraphrase.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import streamlit as st

from eraudit_core import present
from eraudit_core.errors import StoreError
from eraudit_core.text import safe_label
from eraudit_core.types import ACTIVE_RUN_STATUSES, RunStatus
from ui import store_access, widgets

# Each poll reruns the panel and the browser redraws its charts, on the cores that score: at
# 1.5 s the one-click audit took 87 s to its verdicts in the browser, at 3 s 59-63 s
# (docs/dashboard.md). 3 s still updates the Step line well within the promised 5 s.
POLL_SECONDS = 3.0
# How often the page looks whether this process's audit thread has ended or reported its
# first scored paraphrases (`redraw_now`). The look reads no store and draws nothing, so it
# can be frequent: the verdicts and the first scored paraphrase then show within about half a
# second of the store having them instead of at the next panel refresh, up to 3 s later.
END_POLL_SECONDS = 0.5
FOLLOW = ""  # the question picker's "follow the question being scored" choice


@st.cache_data(show_spinner=False, max_entries=32)
def _plans(path: str, run_id: str) -> dict[str, int]:
    """Planned paraphrases per question (fixed for a run: its inputs are recorded)."""
    store = store_access.get_store()
    return present.run_plans(store, store.run(run_id))


@st.cache_data(show_spinner=False, max_entries=4)
def _steps(path: str, run_id: str, n_steps: int) -> pd.DataFrame:
    """The run's steps, read again only when their count changed (`n_steps`): a poll between
    two batches costs the audit's cores nothing but the count."""
    return store_access.get_store().steps(run_id, with_prompts=False)


@st.cache_data(show_spinner=False, max_entries=4)
def _pair_results(path: str, run_id: str, n_done: int) -> pd.DataFrame:
    """The run's verdicts, read again only when a question finished (`n_done`)."""
    return store_access.get_store().pair_results(run_id)


@st.cache_data(show_spinner=False, max_entries=32)
def _question_texts(path: str, run_id: str) -> dict[str, str]:
    """Hidden question per pair id, from the run's recorded inputs (fixed for a run)."""
    store = store_access.get_store()
    return present.run_question_texts(store, store.run(run_id))


def is_active(run_id: str) -> bool:
    """Running here (this process's thread is alive: loading, or just resumed and not yet
    marked running) or anywhere (the store says so, e.g. an audit in a terminal)."""
    rec = store_access.run_record(run_id)
    job = store_access.job_state(run_id)
    return bool(job["alive"]) or (rec is not None and rec["status"] in ACTIVE_RUN_STATUSES)


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    s = int(round(s))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def _traffic(traffic: dict[str, Any] | None, active: bool) -> None:
    """Requests in flight and prompts/s of served checkpoints, as the engine last stored them."""
    if not traffic:
        return
    cols = st.columns(4)
    cols[0].metric("requests in flight", int(traffic.get("in_flight", 0)) if active else 0)
    if active:
        cols[1].metric(
            f"prompts/s (last {traffic.get('window_s', 10):g} s)", traffic["prompts_per_s"]
        )
    else:
        cols[1].metric("prompts/s (this session)", traffic.get("prompts_per_s_session", 0.0))
    cols[2].metric("prompts scored by the servers", int(traffic.get("prompts", 0)))
    cols[3].metric("most requests in flight", int(traffic.get("peak_in_flight", 0)))
    st.caption(
        f"Served checkpoints: {traffic.get('requests', 0)} requests, {traffic.get('retries', 0)} "
        f"retries, {traffic.get('failures', 0)} failed after retries, "
        f"{traffic.get('fallbacks', 0)} labels read from prompt log-probs (outside the top-k), "
        f"at most {traffic.get('peak_prompts_in_flight', 0)} prompts in flight (a request "
        f"carries up to batch=N of them); updated {traffic.get('updated_at', '-')} UTC. A "
        "prompt is one answer order of one question; counts start when the run (or its "
        "resumption) started."
    )


def _current_question(steps: pd.DataFrame, plans: dict[str, int], finished: set[str]) -> str:
    """The question being scored: that of the last written step unless it has finished, else
    the first question without a verdict."""
    if not steps.empty:
        last = str(steps.sort_values("recorded_at")["pair_id"].iloc[-1])
        if last not in finished:
            return last
    waiting = [p for p in plans if p not in finished and not p.startswith("#")]
    if waiting:
        return waiting[0]
    return str(steps["pair_id"].iloc[-1]) if not steps.empty else next(iter(plans), "")


def _question_choice(
    run_id: str,
    ids: list[str],
    texts: dict[str, str],
    verdicts: dict[str, str],
    now: str,
    going: bool,
) -> str:
    """Which question the chart shows: the one being scored (default) or any other; `going`:
    the run is pending or running."""

    def label(pid: str) -> str:
        if pid == FOLLOW:
            return "The question being scored now" if going else "The last question scored"
        status = verdicts.get(pid) or ("being scored" if pid == now else "waiting")
        return f"{safe_text(texts.get(pid, pid), 80)}  [{status}]"

    # The browser keeps a selectbox's shown label while its key stays, so "being scored now"
    # outlived the run; a key per phase redraws it, and the choice made meanwhile carries over.
    phase, other = ("live", "ended") if going else ("ended", "live")
    key, before = f"watchq-{run_id}-{phase}", f"watchq-{run_id}-{other}"
    if key not in st.session_state and st.session_state.get(before) in (FOLLOW, *ids):
        st.session_state[key] = st.session_state[before]
    pick = st.selectbox(
        "Question on the chart",
        [FOLLOW, *ids],
        format_func=label,
        key=key,
        help="Every question of the run, with its verdict once it has one.",
    )
    return now if pick == FOLLOW else str(pick)


def safe_text(text: str, limit: int) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "\u2026"


@st.cache_data(show_spinner=False, max_entries=8)
def _chart(path: str, run_id: str, pair_id: str, n_steps: int, text: str):  # type: ignore[no-untyped-def]
    """The question's bound on fixed axes (`present.live_bound_figure`), titled by its text;
    built again only when the run's step count changed (a refresh between two batches sends
    the same figure without computing it)."""
    from eraudit_core.method import RunRecord

    steps = _steps(path, run_id, n_steps)
    return present.live_bound_figure(
        steps[steps["pair_id"] == pair_id],
        title=safe_label(text, 90),
        config=RunRecord.read(store_access.get_store(), run_id).config,
    )


def _finished(run_id: str, rec: dict[str, Any]) -> None:
    """A run that ended: its verdict counts and the way on to Results and Share."""
    pairs = store_access.get_store().pair_results(run_id)
    ov = present.run_overview(pairs)
    what = "Finished" if rec["status"] == RunStatus.DONE else f"Stopped ({rec['status']})"
    st.markdown(f"**{what}: verdicts of {ov['n_pairs']} question(s)**")
    c = st.columns(4)
    c[0].metric("degraded", ov["n_degraded"])
    c[1].metric("certified", ov["n_certified"])
    c[2].metric("passed (not a certificate)", ov["n_passed"])
    c[3].metric("inconclusive", ov["n_inconclusive"])
    c = st.columns(2)
    c[0].page_link(
        "pages/results.py",
        label="See this run in Results",
        icon=":material/insights:",
        query_params={"run": run_id},
    )
    c[1].page_link(
        "pages/share.py",
        label="Share this run",
        icon=":material/ios_share:",
        query_params={"run": run_id},
    )


def cancel(run_id: str) -> None:
    """Ask the run to stop after its current batch; a run still loading its checkpoints
    (pending) has nothing to finish and reads cancelled at once."""
    store = store_access.get_store()
    status = store.run_progress(run_id)["status"]
    store.request_cancel(run_id)
    store_access.get_runner().cancel(run_id)
    # No toast here: an element drawn from a callback of a fragment rerun lands at the top of
    # the app (Streamlit warns) and can leave the page's later widgets unresponsive.
    if status == RunStatus.PENDING:
        store.set_run_status(run_id, RunStatus.CANCELLED, "cancelled by the user before it started")


def _earlier_phases(run_id: str, rec: dict[str, Any]) -> list[dict[str, Any] | None]:
    """The stored steps of earlier runs of the same two checkpoints (newest first): their
    loading time is this machine's measured loading time."""
    runs = store_access.runs_frame()
    same = runs[
        (runs["run_id"] != run_id)
        & (runs["pre_name"] == rec.get("pre_name"))
        & (runs["post_name"] == rec.get("post_name"))
    ]
    out = []
    for raw in same.get("phase", []):
        if isinstance(raw, str):
            out.append(json.loads(raw))
    return out


def _loading(prog: dict[str, Any]) -> bool:
    """Still before its first scored paraphrase (loading or registering the checkpoints)."""
    phase = prog.get("phase") or {}
    return int(prog["steps"] or 0) == 0 and not str(phase.get("step") or "").startswith("scoring")


def _step(
    rec: dict[str, Any],
    prog: dict[str, Any],
    shown: str,
    earlier: list[dict[str, Any] | None],
) -> None:
    """The one line that says what the worker does now, with the panel's one clock (seconds
    since the click); while it loads, the time left as an earlier run of the same checkpoints
    measured it."""
    now = datetime.now(UTC).replace(tzinfo=None)
    n = int(prog["n_pairs"] or 0)
    scoring = f"scoring question {min(int(prog['pairs_done']) + 1, n)} of {n}" if n else None
    line = present.step_line(prog.get("phase"), shown, now, rec.get("created_at"), scoring)
    if line is None:
        return
    st.markdown(f"**{widgets.md_escape(line)}**")
    if shown not in ACTIVE_RUN_STATUSES or not earlier:
        return
    left = present.loading_left(prog.get("phase"), earlier, now, rec.get("created_at"))
    took = next((x for x in map(present.loading_seconds, earlier) if x is not None), None)
    if left is not None and took is not None:
        st.caption(
            f"Loading took {fmt_seconds(took)} for the last run of these checkpoints on this "
            f"machine: about {fmt_seconds(left)} left before scoring starts."
        )


def _loading_left(
    rec: dict[str, Any], prog: dict[str, Any], earlier: list[dict[str, Any] | None]
) -> float | None:
    now = datetime.now(UTC).replace(tzinfo=None)
    return present.loading_left(prog.get("phase"), earlier, now, rec.get("created_at"))


def _details(prog: dict[str, Any], live: present.LiveProgress, steps: pd.DataFrame) -> None:
    """What an auditor may want besides the chart and the count: rate, counterexamples, model
    queries, where the time went, and served checkpoints' traffic."""
    n_cex = int(steps["is_counterexample"].sum()) if not steps.empty else 0
    rate = "-" if live.rate is None else f"{live.rate:.2f}"
    with st.expander("Where the time went, rate, counterexamples and model queries"):
        st.text(
            f"paraphrases/s over the last minute: {rate}\n"
            f"counterexamples so far: {n_cex}\n"
            f"model queries scored {prog['queries_scored']}, read from the cache "
            f"{prog['queries_cached']} (counted when a question finishes)"
        )
        times = present.step_times(prog.get("phase"))
        if not times.empty:
            st.dataframe(times.round({"seconds": 1}), hide_index=True, width="stretch")
        _traffic(prog.get("traffic"), str(prog["status"]) in ACTIVE_RUN_STATUSES)


def _count(prog: dict[str, Any], live: present.LiveProgress, loading: float | None) -> str:
    """The panel's one count: questions with a verdict and paraphrases scored, and the time
    left once a rate is known."""
    left = (
        f"; about {fmt_seconds(live.time_left_s)} left"
        if live.time_left_s is not None
        else (f"; about {fmt_seconds(loading)} of loading left" if loading is not None else "")
    )
    return (
        f"{prog['pairs_done']} of {prog['n_pairs']} questions done, "
        f"{live.scored} paraphrases scored{left}"
    )


def _panel(run_id: str, was_active: bool, status_drawn: str | None = None) -> None:
    store = store_access.get_store()
    rec = store_access.run_record(run_id)
    job = store_access.job_state(run_id)
    if rec is None:
        if job["error"]:
            widgets.show_error("The run stopped before it started:", RuntimeError(job["error"]))
        elif job["alive"]:
            st.markdown("**Step: starting**")
        else:
            st.warning("This run is not in the store.")
        return
    prog = store.run_progress(run_id)
    status = str(prog["status"])
    shown = store_access.status_shown(run_id, status, store.cancel_requested(run_id))
    # Which run, what it does now, then its chart: what a reload must show at once, above the
    # fold on a phone.
    widgets.run_heading(str(rec.get("label") or run_id), run_id)
    # earlier runs' loading times matter only until this run scores (they say the time left)
    loading = status in ACTIVE_RUN_STATUSES and _loading(prog)
    earlier = _earlier_phases(run_id, rec) if loading else []
    _step(rec, prog, shown, earlier)
    running = status == RunStatus.RUNNING
    steps = _steps(store_access.db_path(), run_id, int(prog["steps"]))
    plans = _plans(store_access.db_path(), run_id)
    pairs = _pair_results(store_access.db_path(), run_id, int(prog["pairs_done"]))
    finished = set(pairs["pair_id"])
    texts = {**_question_texts(store_access.db_path(), run_id),
             **dict(zip(pairs["pair_id"], pairs["hidden_question"], strict=True))}  # fmt: skip
    ids = [p for p in plans if not p.startswith("#")]
    now_q = _current_question(steps, plans, finished)
    chart = st.container()
    if ids:
        verdicts = dict(zip(pairs["pair_id"], pairs["status"], strict=True))
        pair_id = _question_choice(
            run_id, ids, texts, verdicts, now_q, status in ACTIVE_RUN_STATUSES
        )
        fig = _chart(
            store_access.db_path(), run_id, pair_id, int(prog["steps"]), texts.get(pair_id, pair_id)
        )
        chart.plotly_chart(fig, key=f"live-{run_id}", config={"displaylogo": False})
    live = present.live_progress(
        plans=plans,
        finished=list(finished),
        steps=steps,
        now=datetime.now(UTC).replace(tzinfo=None),
        active_seconds=prog["active_seconds"],
        resumed_at=prog["resumed_at"],
        running=running,
    )
    left = _loading_left(rec, prog, earlier) if loading else None
    st.progress(live.fraction, text=_count(prog, live, left))
    st.session_state[_scored_key(run_id)] = live.scored
    st.caption(f"status: {shown}")
    active = is_active(run_id)
    if rec.get("error") and status != RunStatus.DONE:
        st.caption("Message:")
        st.text(str(rec["error"]))
    if status not in ACTIVE_RUN_STATUSES:
        _finished(run_id, rec)
    if ids:
        st.page_link(
            "pages/explorer.py",
            label="Open this question in the explorer",
            query_params={"run": run_id, "pair": pair_id},
        )
    _details(prog, live, steps)
    if (was_active and not active) or status != status_drawn:
        # the run ended, was stored, or its status changed (cancelled while loading): redraw
        # the whole page once, so the sidebar's pickers and the Cancel button follow
        st.rerun()


def redraw_now(job: dict[str, Any], scored_drawn: int | None, redrawn_first: bool) -> bool:
    """Whether the end watch redraws the whole page now: this process's audit thread has
    ended (the panel then shows the verdicts, the sidebar the run's final status), or its
    engine has reported scored paraphrases while the panel shows none (a user's first sign
    that the audit works, otherwise up to a 3-s refresh late). The second happens once per
    run and page (`redrawn_first`)."""
    if not job["alive"]:
        return True
    return bool(job["reported"]) and not scored_drawn and not redrawn_first


def _scored_key(run_id: str) -> str:
    return f"live-scored-drawn-{run_id}"


def _end_watch(run_id: str) -> None:
    """Looks every `END_POLL_SECONDS` at this process's audit thread, never at the store, and
    redraws the page when `redraw_now` says so."""
    first = f"live-first-redraw-{run_id}"
    job = store_access.job_state(run_id)
    if redraw_now(
        job, st.session_state.get(_scored_key(run_id)), bool(st.session_state.get(first))
    ):
        if job["alive"]:
            st.session_state[first] = True
        st.rerun()


def _polled_panel(run_id: str, was_active: bool, status_drawn: str | None) -> None:
    """`_panel`, with a notice instead of a crash when the store stays busy (the next poll
    tries again)."""
    try:
        _panel(run_id, was_active, status_drawn)
    except StoreError as exc:
        widgets.store_notice(exc, key=f"store-busy-live-{run_id}")


def watch_panel(run_id: str) -> bool:
    """The live panel; it polls the store while the run is active and stops once it ends.
    Returns whether the run is active."""
    active = is_active(run_id)
    rec = store_access.run_record(run_id)
    status_drawn = (
        None if rec is None else str(store_access.get_store().run_progress(run_id)["status"])
    )
    if st.query_params.get("watch") != run_id:
        st.query_params["watch"] = run_id
    st.fragment(run_every=POLL_SECONDS if active else None)(_polled_panel)(
        run_id, active, status_drawn
    )
    if store_access.job_state(run_id)["alive"]:
        st.fragment(run_every=END_POLL_SECONDS)(_end_watch)(run_id)
    stoppable = active and status_drawn in ACTIVE_RUN_STATUSES
    if stoppable and not store_access.get_store().cancel_requested(run_id):
        # Outside the polled fragment and as a callback: the click reruns the whole page once,
        # the callback runs before anything is drawn (so the sidebar's picker and the panel
        # both say "cancelling" in that one redraw), and a poll of the fragment arriving at
        # the same moment cannot swallow the click.
        st.button("Cancel this run", key=f"cancel-{run_id}", on_click=cancel, args=(run_id,))
    return active
