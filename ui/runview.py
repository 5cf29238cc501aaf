"""The Run page's moving parts beside the settings (ui.settings_form): which questions and
checkpoints, the cost before starting, launch, resume, and which run to watch (the live panel
itself is ui.live)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from eraudit_core.errors import InputError, StoreError
from eraudit_core.method import AuditConfig, make_config
from eraudit_core.runs import FULL_BUDGETS_NOTE, EpsilonSource, RunRequest, request_with_control
from eraudit_core.types import ACTIVE_RUN_STATUSES, RESUMABLE_RUN_STATUSES
from ui import checkpoints, store_access, widgets

# Help of the form's fields that are not settings of the audit (those are declared with
# the settings, `eraudit_core.method.settings()`).
FORM_HELP = {
    "benchmark": "The question pairs to audit (import more on the Setup page).",
    "n_first": "Audit the first N hidden questions of the benchmark, in its order.",
    "pair_ids": "Pick particular questions instead; when any is picked, N is ignored.",
    "pre": "demo:base, a local model directory, a .gguf file, BASE+ADAPTER_DIR, or a served "
    "checkpoint http://HOST:8000/v1#MODEL;tokenizer=LOCAL_SPEC (register and check it on Setup)",
    "post": "demo:honest, demo:adversarial, demo:concealed, a local directory, BASE+ADAPTER_DIR, "
    "or a served checkpoint (pre and post may be on different servers)",
    "preset": "A named set of settings the form opens on; each value it changes from the "
    "library's default says why below. Every setting can still be changed.",
    "control": "An adaptation that should not hurt, audited on the same base, questions, "
    "generators, budgets and k. Each question is then read against it (beyond / better than / "
    "within control) and the run leads with one test over questions; every paraphrase of both "
    "budgets is scored so that the reading has its replicates.",
    "label": "A name for the run in every picker (its id and time are shown beside it).",
}


_RESUME_FAILED = "_resume_failed"  # the error of the last Resume click, shown once


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
            config=make_config(**settings),
            pair_ids=tuple(pair_ids),
            label=label,
            epsilon=epsilon_source,
        )
    except InputError as exc:
        widgets.show_error("This configuration is not valid:", exc)
        return None


def watch_and_resume() -> bool:
    """The run being watched, live, and the unfinished runs with a Resume button each.
    Returns whether the watched run is still going."""
    from ui import live  # the live panel reads this module's run statuses

    watch = run_to_watch()
    going = False
    if watch:
        st.subheader("Live audit")
        going = live.watch_panel(watch)
        st.divider()
    resumable = resumable_runs()
    if resumable.empty:
        return going
    with st.expander(f"Unfinished runs ({len(resumable)}): resume after a restart or cancel"):
        failed = st.session_state.pop(_RESUME_FAILED, None)
        if failed is not None:
            widgets.show_error("The run could not be resumed:", failed)
        for row in resumable.itertuples():
            c1, c2 = st.columns([4, 1])
            c1.text(resumable_line(row))
            # a callback runs before the page is drawn, so the sidebar and the panel of this
            # very run of the script already say "resuming"
            c2.button("Resume", key=f"resume-{row.run_id}", on_click=resume, args=(row.run_id,))
    return going


# The toggle that draws the new-audit form while a watched run is going.
ANOTHER_AUDIT_KEY = "run-another-audit"


def new_audit_form_shown(watching_a_run: bool) -> bool:
    """Whether the page draws the new-audit form under the live panel.

    Always, unless the watched run is still going: then the form waits behind a toggle, off
    unless this session started that run from the form. Why: every refresh of the panel makes
    the browser lay out the whole page again, and the form is most of it; on a two-core
    machine the browser's work comes out of the audit's. From the click to the verdicts of
    the one-click audit, headless Chromium spent 9.6 s of CPU with the form drawn (0.07-0.23 s
    in each second between two panel refreshes) and 6.6 s without it (0.03-0.09 s):
    `scripts/time_browser_audit.py --timeline`, one round each, docs/dashboard.md.
    """
    if not watching_a_run:
        return True
    return st.toggle(
        "Set up another audit while this one runs",
        key=ANOTHER_AUDIT_KEY,
        help="The form for a new audit. Hidden while a run is watched, so the page the "
        "browser redraws at every refresh of the panel stays small.",
    )


def questions(benchmark_id: str) -> list[str]:
    """The pair ids to audit: the first N of the benchmark, or the ones picked."""
    pairs = pair_options(benchmark_id)
    c1, c2 = st.columns(2)
    n_first = c1.number_input(
        "Audit the first N questions",
        min_value=1,
        max_value=len(pairs),
        value=min(3, len(pairs)),
        help=FORM_HELP["n_first"],
    )
    picked = c2.multiselect(
        "...or pick questions (overrides N)",
        list(pairs),
        format_func=lambda pid: pairs[pid],
        help=FORM_HELP["pair_ids"],
    )
    return picked or list(pairs)[: int(n_first)]


def checkpoint_pickers(benchmark_id: str) -> tuple[str, str]:
    """(pre spec, post spec), with the registered checkpoints listed and a warning when the
    benchmark has no test paraphrase set to audit with."""
    c1, c2 = st.columns(2)
    pre = c1.text_input(
        "Checkpoint before adaptation (pre)", value="demo:base", help=FORM_HELP["pre"]
    )
    post = c2.text_input(
        "Checkpoint after adaptation (post)", value="demo:adversarial", help=FORM_HELP["post"]
    )
    store = store_access.get_store()
    registered = store.checkpoints()
    if not registered.empty:
        st.caption("Registered checkpoints (Setup), usable as specs above:")
        st.text("\n".join(str(n) for n in registered["name"]))
    sets = store.paraphrase_sets(benchmark_id)
    if sets.empty or not (sets["role"] == "test").any():
        st.warning("This benchmark has no test paraphrase set yet: register one on the Setup page.")
    return pre, post


def with_control(request: RunRequest | None, control: str) -> RunRequest | None:
    """The request read against `control` (when one is chosen), or None with the reason shown
    when that control cannot be used."""
    if request is None or not control:
        return request
    try:
        request = request_with_control(store_access.get_store(), request, control)
    except InputError as exc:
        widgets.show_error("This control run cannot be used:", exc)
        return None
    st.caption(FULL_BUDGETS_NOTE)
    return request


def start_panel(benchmark_id: str, pair_ids: list[str], request: RunRequest | None) -> None:
    """What the run will cost, and the Start button (disabled until it can be sized)."""
    if request is None:
        return
    config = request.config
    sized = cost(benchmark_id, pair_ids, config)
    if sized is not None:
        m = st.columns(4)
        m[0].metric("questions", sized["n_pairs"])
        m[1].metric(
            "n* (successes needed for p*)",
            "no target" if sized["n_star"] is None else sized["n_star"],
        )
        m[2].metric(
            "paraphrases, at most", sized["search_paraphrases"] + sized["max_test_paraphrases"]
        )
        m[3].metric("model queries, at most", sized["max_model_queries"])
        st.caption(
            "A model query is one question put to one checkpoint (both answer orders are scored). "
            "Scores already in the store's cache are not queried again."
        )
        pool_summary(sized, config)
    if st.button("Start audit", type="primary", disabled=sized is None):
        try:
            run_id = launch(request)
        except (InputError, StoreError) as exc:
            widgets.show_error("The audit could not start:", exc)
        else:
            st.query_params["watch"] = run_id
            if not st.session_state.get(ANOTHER_AUDIT_KEY):
                st.session_state[ANOTHER_AUDIT_KEY] = True  # keep the form its user is on
            st.rerun()


def cost(benchmark_id: str, pair_ids: list[str], config: AuditConfig) -> dict[str, Any] | None:
    from eraudit_core.runs import expected_queries

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
    from eraudit_core.runs import launch_audit

    for spec in (request.pre_spec, request.post_spec):
        checkpoints.validate_checkpoint_spec(spec)
    run_id = launch_audit(store_access.get_store(), store_access.get_runner(), request)
    st.session_state["watch_run"] = run_id
    return run_id


def resume(run_id: str) -> None:
    """The Resume button's callback: the run goes on in this process and the page watches it;
    a run that cannot go on leaves its error for the Unfinished runs list to show."""
    from eraudit_core.runs import resume_audit

    run_id = str(run_id)
    try:
        resume_audit(store_access.get_store(), store_access.get_runner(), run_id)
    except (InputError, StoreError) as exc:
        st.session_state[_RESUME_FAILED] = exc
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
