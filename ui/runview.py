"""The Run page's moving parts: launch, resume, and the live panel polled from the store.

The background thread (eraudit_core.runs via JobRunner) never calls streamlit; the live panel
is an `st.fragment(run_every=...)` that re-reads the store, so a browser reload, a second tab
or a restarted app all see the same state.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd
import streamlit as st

from eraudit_core import present
from eraudit_core.audit import AuditConfig
from eraudit_core.errors import InputError, StoreError
from ui import state, widgets

POLL_SECONDS = 1.5
ACTIVE = ("pending", "running")
RESUMABLE = ("interrupted", "cancelled", "failed")


def benchmark_label(benchmarks: pd.DataFrame, bid: str) -> str:
    row = benchmarks.loc[benchmarks["benchmark_id"] == bid].iloc[0]
    return f"{row['name']} ({row['n_pairs']} pairs) - {bid}"


def pair_options(benchmark_id: str) -> dict[str, str]:
    """pair id -> short display text (index and hidden question)."""
    out = {}
    for p in state.get_store().pairs(benchmark_id):
        q = " ".join(p.hidden.question.split())
        out[p.pair_id] = f"#{p.index} {q[:90]}"
    return out


def make_config(**fields: Any) -> AuditConfig | None:
    """Validate the form into an AuditConfig, showing the engine's message inline on error."""
    try:
        return AuditConfig(**fields)
    except InputError as exc:
        widgets.show_error("This configuration is not valid:", exc)
        return None


def cost(benchmark_id: str, pair_ids: list[str], config: AuditConfig) -> dict[str, Any] | None:
    from eraudit_core.audit import expected_queries

    try:
        return expected_queries(state.get_store(), benchmark_id, pair_ids, config)
    except InputError as exc:
        widgets.show_error("Cannot size this run:", exc)
        return None


def pool_summary(cost: dict[str, Any], config: AuditConfig) -> None:
    """What the bound will be about (a draw from each generator's pool), and pool warnings."""
    pools = cost.get("pools") or {}
    if pools:
        sizes = ", ".join(
            f"{g}: M = {v['min']}" + ("" if v["min"] == v["max"] else f" to {v['max']}")
            for g, v in pools.items()
        )
        st.caption(
            f"Stage 2 draws each generator's test paraphrases uniformly at random without "
            f"replacement from its pool ({sizes} per question; the seed is stored with the "
            f"run). Each bound is about a paraphrase drawn at random from that pool, at "
            f"confidence {config.confidence:g} per question."
        )
    for message in cost.get("warnings") or []:
        st.warning(message + " (the run still proceeds)")


def launch(
    benchmark_id: str,
    pair_ids: list[str],
    pre_spec: str,
    post_spec: str,
    config: AuditConfig,
    label: str,
    provenance: dict[str, Any] | None = None,
) -> str:
    """Validate the checkpoint specs here (fast), then start the run in the background."""
    from eraudit_core.audit import launch_audit

    for spec in (pre_spec, post_spec):
        state.validate_checkpoint_spec(spec)
    run_id = launch_audit(
        state.get_store(),
        state.get_runner(),
        benchmark_id=benchmark_id,
        pre_spec=pre_spec.strip(),
        post_spec=post_spec.strip(),
        config=config,
        pair_ids=pair_ids,
        label=label.strip(),
        provenance=provenance,
    )
    st.session_state["watch_run"] = run_id
    return run_id


def resume(run_id: str) -> None:
    from eraudit_core.audit import resume_audit

    try:
        resume_audit(state.get_store(), state.get_runner(), run_id)
    except (InputError, StoreError) as exc:
        widgets.show_error("The run could not be resumed:", exc)
        return
    st.session_state["watch_run"] = run_id
    st.query_params["watch"] = run_id


def resumable_runs() -> pd.DataFrame:
    runs = state.runs_frame()
    if runs.empty:
        return runs
    runs = runs[runs["status"].isin(RESUMABLE)]
    # Only runs whose inputs were recorded can be rebuilt (model runs and score tables).
    source = runs["source"].fillna("")
    return runs[source.str.startswith("{") | source.str.startswith("table:")]


def run_to_watch() -> str | None:
    """?watch=... in the URL, else this session's last launch, else a run in progress."""
    rid = st.query_params.get("watch") or st.session_state.get("watch_run")
    if rid and (state.run_record(rid) is not None or state.job_state(rid)["known"]):
        return str(rid)
    runs = state.runs_frame()
    if not runs.empty:
        active = runs[runs["status"].isin(ACTIVE)]
        if not active.empty:
            return str(active["run_id"].iloc[0])
    return None


def _is_active(run_id: str) -> bool:
    """Running here (this process's thread is alive: loading, or just resumed and not yet
    marked running) or anywhere (the store says so, e.g. an audit in a terminal)."""
    rec = state.run_record(run_id)
    job = state.job_state(run_id)
    return bool(job["alive"]) or (rec is not None and rec["status"] in ACTIVE)


def _live_numbers(run_id: str, rec: dict[str, Any]) -> dict[str, Any]:
    store = state.get_store()
    prog = store.run_progress(run_id)
    started = prog["started_at"]
    end = prog["finished_at"] or datetime.now(UTC).replace(tzinfo=None)
    elapsed = max(1e-9, (end - started).total_seconds()) if started is not None else 0.0
    pairs = store.pair_results(run_id)
    n_cex = int(pairs["n_counterexamples"].sum()) if not pairs.empty else 0
    queries = int(prog["queries_scored"] or 0)
    done, n = int(prog["pairs_done"]), int(prog["n_pairs"] or 0)
    left = None
    if done and n > done and prog["status"] in ACTIVE and elapsed:
        left = elapsed / done * (n - done)
    return {
        **prog,
        "elapsed": elapsed,
        "counterexamples": n_cex,
        "steps_per_s": (prog["steps"] / elapsed) if elapsed else 0.0,
        "queries_per_s": (queries / elapsed) if elapsed else 0.0,
        "time_left": left,
    }


def _fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    s = int(round(s))
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
        f"{traffic.get('fallbacks', 0)} labels read from prompt log-probs (outside the top-k); "
        f"updated {traffic.get('updated_at', '-')} UTC. A prompt is one answer order of one "
        "question; counts start when the run (or its resumption) started."
    )


def _panel(run_id: str, was_active: bool) -> None:
    store = state.get_store()
    rec = state.run_record(run_id)
    job = state.job_state(run_id)
    if rec is None:
        if job["error"]:
            widgets.show_error("The run stopped before it started:", RuntimeError(job["error"]))
        elif job["alive"]:
            st.info("Loading the checkpoints (the first time can take about half a minute)...")
        else:
            st.warning("This run is not in the store.")
        return
    nums = _live_numbers(run_id, rec)
    st.text(f"{rec.get('label') or run_id}   ({run_id})")
    st.caption(f"status: {rec['status']}")
    cols = st.columns(5)
    cols[0].metric("questions done", f"{nums['pairs_done']} / {nums['n_pairs']}")
    cols[1].metric("questions degraded", nums["pairs_degraded"])
    cols[2].metric("counterexamples so far", nums["counterexamples"])
    cols[3].metric("paraphrases scored per s", f"{nums['steps_per_s']:.1f}")
    cols[4].metric("time left (estimate)", _fmt_seconds(nums["time_left"]))
    n = max(1, int(nums["n_pairs"] or 1))
    st.progress(min(1.0, nums["pairs_done"] / n))
    st.caption(
        f"elapsed {_fmt_seconds(nums['elapsed'])}; model queries scored "
        f"{nums['queries_scored']} ({nums['queries_per_s']:.1f}/s), read from cache "
        f"{nums['queries_cached']} (counted when a question finishes)"
    )
    _traffic(nums.get("traffic"), rec["status"] in ACTIVE)
    if rec.get("error") and rec["status"] != "done":
        st.caption("Message:")
        st.text(str(rec["error"]))
    latest = store.latest_steps(run_id, limit=1)
    if latest.empty:
        st.caption("The bound chart appears when the sequential test (stage 2) starts.")
    else:
        pair_id = str(latest["pair_id"].iloc[0])
        traj = present.bound_trajectory_frame(store.steps(run_id, pair_id))
        target = rec["config"].get("target")
        fig = present.bound_trajectory_figure(
            traj, title=f"Live bound, question {pair_id}", target=target
        )
        st.plotly_chart(fig, key=f"live-{run_id}", config={"displaylogo": False})
        st.page_link(
            "pages/explorer.py",
            label="Open this question in the explorer",
            query_params={"run": run_id, "pair": pair_id},
        )
    active = _is_active(run_id)
    if active and st.button("Cancel this run", key=f"cancel-{run_id}"):
        store.request_cancel(run_id)
        state.get_runner().cancel(run_id)
        st.toast("Cancel requested; the run stops after the current step.")
    if was_active and not active:
        st.rerun()  # the run ended: redraw the page once, without polling


def _polled_panel(run_id: str, was_active: bool) -> None:
    """`_panel`, with a notice instead of a crash when the store stays busy (the next poll
    tries again)."""
    try:
        _panel(run_id, was_active)
    except StoreError as exc:
        widgets.store_notice(exc, key=f"store-busy-live-{run_id}")


def watch_panel(run_id: str) -> None:
    """The live panel; it polls the store while the run is active and stops once it ends."""
    active = _is_active(run_id)
    if st.query_params.get("watch") != run_id:
        st.query_params["watch"] = run_id
    st.fragment(run_every=POLL_SECONDS if active else None)(_polled_panel)(run_id, active)
