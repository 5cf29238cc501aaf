"""The Run page's moving parts: the form's fields (from AuditConfig's metadata and the demo
preset), launch, resume, and which run to watch (the live panel itself is ui.live)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from eraudit_core.audit import (
    DEMO_PRESET,
    AuditConfig,
    EpsilonSource,
    RunRequest,
    field_help,
    field_label,
    field_range,
)
from eraudit_core.errors import InputError, StoreError
from eraudit_core.types import ACTIVE_RUN_STATUSES, RESUMABLE_RUN_STATUSES
from ui import checkpoints, store_access, widgets

# The Run form opens on the library's demo preset (it fits the bundled paraphrase pools);
# the library's and the CLI's defaults are AuditConfig's own.
FORM_PRESET: AuditConfig = DEMO_PRESET
CONFIDENCE_CHOICES = [0.8, 0.85, 0.9, 0.95, 0.99, 0.999]
# Help of the form's fields that are not settings of the audit (those are AuditConfig's).
FORM_HELP = {
    "benchmark": "The question pairs to audit (import more on the Setup page).",
    "n_first": "Audit the first N hidden questions of the benchmark, in its order.",
    "pair_ids": "Pick particular questions instead; when any is picked, N is ignored.",
    "use_target": "A question is certified only when its lower bound reaches p*. Without a "
    "target, questions can pass but are never certified.",
    "label": "A name for the run in every picker (its id and time are shown beside it).",
}


def setting(name: str) -> dict[str, Any]:
    """A form field for one AuditConfig setting: its label, help and valid range from the
    setting's metadata, its value from the form's preset (keyword arguments of a widget)."""
    out: dict[str, Any] = {
        "label": field_label(name),
        "help": field_help(name),
        "value": getattr(FORM_PRESET, name),
    }
    valid = field_range(name)
    if valid is not None and valid.low is not None:
        out["min_value"] = valid.low
    if valid is not None and valid.high is not None:
        out["max_value"] = valid.high
    return out


def benchmark_label(benchmarks: pd.DataFrame, bid: str) -> str:
    row = benchmarks.loc[benchmarks["benchmark_id"] == bid].iloc[0]
    return f"{row['name']} ({row['n_pairs']} pairs) - {bid}"


def pair_options(benchmark_id: str) -> dict[str, str]:
    """pair id -> short display text (index and hidden question)."""
    out = {}
    for p in store_access.get_store().pairs(benchmark_id):
        q = " ".join(p.hidden.question.split())
        out[p.pair_id] = f"#{p.index} {q[:90]}"
    return out


def make_request(
    benchmark_id: str,
    pair_ids: list[str],
    pre_spec: str,
    post_spec: str,
    label: str,
    epsilon_source: EpsilonSource | None,
    **settings: Any,
) -> RunRequest | None:
    """Validate the form into a RunRequest, showing the engine's message inline on error."""
    try:
        return RunRequest(
            benchmark=benchmark_id,
            pre_spec=pre_spec,
            post_spec=post_spec,
            config=AuditConfig(**settings),
            pair_ids=tuple(pair_ids),
            label=label,
            epsilon=epsilon_source,
        )
    except InputError as exc:
        widgets.show_error("This configuration is not valid:", exc)
        return None


def cost(benchmark_id: str, pair_ids: list[str], config: AuditConfig) -> dict[str, Any] | None:
    from eraudit_core.audit import expected_queries

    try:
        return expected_queries(store_access.get_store(), benchmark_id, pair_ids, config)
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


def launch(request: RunRequest) -> str:
    """Validate the checkpoint specs here (fast), then start the run in the background."""
    from eraudit_core.audit import launch_audit

    for spec in (request.pre_spec, request.post_spec):
        checkpoints.validate_checkpoint_spec(spec)
    run_id = launch_audit(store_access.get_store(), store_access.get_runner(), request)
    st.session_state["watch_run"] = run_id
    return run_id


def resume(run_id: str) -> None:
    from eraudit_core.audit import resume_audit

    try:
        resume_audit(store_access.get_store(), store_access.get_runner(), run_id)
    except (InputError, StoreError) as exc:
        widgets.show_error("The run could not be resumed:", exc)
        return
    st.session_state["watch_run"] = run_id
    st.query_params["watch"] = run_id


def resumable_runs() -> pd.DataFrame:
    runs = store_access.runs_frame()
    if runs.empty:
        return runs
    runs = runs[runs["status"].isin(RESUMABLE_RUN_STATUSES)]
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
    if rid and (store_access.run_record(rid) is not None or store_access.job_state(rid)["known"]):
        return str(rid)
    runs = store_access.runs_frame()
    if not runs.empty:
        active = runs[runs["status"].isin(ACTIVE_RUN_STATUSES)]
        if not active.empty:
            return str(active["run_id"].iloc[0])
    return None
