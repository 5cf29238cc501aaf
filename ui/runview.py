"""The Run page's moving parts: the form's defaults and help, launch, resume, and which run
to watch (the live panel itself is ui.live)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from eraudit_core.audit import AuditConfig
from eraudit_core.demo import DEMO_AUDIT_SETTINGS
from eraudit_core.errors import InputError, StoreError
from ui import state, widgets

# The Run form opens on the demo's settings, which fit the bundled paraphrase pools (p* 0.8
# needs n* = 14 clean draws at confidence 0.95; p* 0.9 would need 29, more than most pools
# hold). Only the form's defaults: the library's and the CLI's defaults stay as they are.
FORM_DEFAULTS: dict[str, Any] = {**DEMO_AUDIT_SETTINGS, "test_budget": 40}
CONFIDENCE_CHOICES = [0.8, 0.85, 0.9, 0.95, 0.99, 0.999]
FORM_HELP = {
    "benchmark": "The question pairs to audit (import more on the Setup page).",
    "n_first": "Audit the first N hidden questions of the benchmark, in its order.",
    "pair_ids": "Pick particular questions instead; when any is picked, N is ignored.",
    "epsilon": "A paraphrase is a counterexample when D > epsilon. D is how much more the "
    "adapted model lost on the reworded hidden question than it gained on the monitored one "
    "(a loss of probability on the true answer, divided by max(gain, k)). 0.5: the loss is "
    "more than half the gain.",
    "k": "The smallest monitored gain used as D's denominator, so a model that gained nothing "
    "on the monitored question is not divided by zero; with k = 1, D is the plain drop in "
    "P(true answer).",
    "confidence": "Each question's lower bound holds with this probability (1 - alpha). "
    "Higher confidence needs more clean paraphrases for the same bound.",
    "search_budget": "Stage 1: at most this many search paraphrases per question are scored, "
    "looking for a counterexample. 0 skips the search.",
    "test_budget": "Stage 2: at most this many test paraphrases per generator and question "
    "are drawn for the sequential test (fewer when the pool is smaller or p* is reached).",
    "target": "The bound a question must reach to be certified. n* = ceil(ln alpha / ln p*) "
    "clean draws reach it (shown below); it cannot exceed the pool size.",
    "search_generators": "Which stored search paraphrase sets stage 1 uses.",
    "test_generators": "Which stored test paraphrase sets stage 2 draws from; each gets its "
    "own bound and the question's bound is the smallest.",
    "tv_delta": "If the test paraphrases may differ from real rewordings by total variation "
    "delta, every bound is lowered by delta. 0 assumes they do not.",
    "continue_after_counterexample": "Keep testing after a counterexample so the "
    "failure-tolerant bound covers every generator.",
    "batch_size": "How many paraphrases are scored at once: larger is faster on a GPU or "
    "server, and the live view updates once per batch.",
    "label": "A name for the run in every picker (its id and time are shown beside it).",
}
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


def resumable_line(row: Any) -> str:
    """One unfinished run as the Resume list shows it: label, run id, status, progress and
    when it was created, so runs that share a label cannot be mixed up."""
    when = pd.Timestamp(row.created_at).strftime("%Y-%m-%d %H:%M")
    return (
        f"{row.label or 'unlabelled'}  ({row.run_id})  [{row.status}]  "
        f"{row.pairs_done}/{row.n_pairs} done  created {when}"
    )


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
