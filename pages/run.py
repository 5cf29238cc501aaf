"""Run: configure an audit, see its cost up front, start it, watch it live, cancel or resume."""

from __future__ import annotations

import streamlit as st

from eraudit_core.errors import InputError, StoreError
from eraudit_core.null import FULL_BUDGETS_NOTE, request_with_control
from ui import calibrate, entry, live, run_picking, runview, store_access, widgets

entry.ensure_navigation()
st.title("Run an audit")
store = store_access.get_store()

# -- which run to watch: the URL (?watch=...), this session's last launch, or a running run ----
watch = runview.run_to_watch()
if watch:
    st.subheader("Live audit")
    live.watch_panel(watch)
    st.divider()

resumable = runview.resumable_runs()
if not resumable.empty:
    with st.expander(f"Unfinished runs ({len(resumable)}): resume after a restart or cancel"):
        for row in resumable.itertuples():
            c1, c2 = st.columns([4, 1])
            c1.text(runview.resumable_line(row))
            if c2.button("Resume", key=f"resume-{row.run_id}"):
                runview.resume(str(row.run_id))
                st.rerun()

st.subheader("Start a new audit")
benchmarks = store.benchmarks()
if benchmarks.empty:
    st.info("No benchmark in this store. Import one on the Setup page.")
    st.stop()

bid = st.selectbox(
    "Benchmark",
    list(benchmarks["benchmark_id"]),
    format_func=lambda b: runview.benchmark_label(benchmarks, b),
    help=runview.FORM_HELP["benchmark"],
)
pairs = runview.pair_options(bid)
c1, c2 = st.columns(2)
n_first = c1.number_input(
    "Audit the first N questions",
    min_value=1,
    max_value=len(pairs),
    value=min(3, len(pairs)),
    help=runview.FORM_HELP["n_first"],
)
picked = c2.multiselect(
    "...or pick questions (overrides N)",
    list(pairs),
    format_func=lambda pid: pairs[pid],
    help=runview.FORM_HELP["pair_ids"],
)
pair_ids = picked or list(pairs)[: int(n_first)]

c1, c2 = st.columns(2)
pre_spec = c1.text_input(
    "Checkpoint before adaptation (pre)",
    value="demo:base",
    help="demo:base, a local model directory, a .gguf file, BASE+ADAPTER_DIR, or a served "
    "checkpoint http://HOST:8000/v1#MODEL;tokenizer=LOCAL_SPEC (register and check it on Setup)",
)
post_spec = c2.text_input(
    "Checkpoint after adaptation (post)",
    value="demo:adversarial",
    help="demo:honest, demo:adversarial, demo:concealed, a local directory, BASE+ADAPTER_DIR, or a served "
    "checkpoint (pre and post may be on different servers)",
)
registered = store.checkpoints()
if not registered.empty:
    st.caption("Registered checkpoints (Setup), usable as specs above:")
    st.text("\n".join(str(n) for n in registered["name"]))

sets = store.paraphrase_sets(bid)
search_choices = list(sets.loc[sets["role"] == "search", "generator"]) if not sets.empty else []
test_choices = list(sets.loc[sets["role"] == "test", "generator"]) if not sets.empty else []
if not test_choices:
    st.warning("This benchmark has no test paraphrase set yet: register one on the Setup page.")

setting = runview.setting
preset = runview.FORM_PRESET
c1, c2, c3 = st.columns(3)
epsilon = c1.number_input(**setting("epsilon"), step=0.05, format="%.3f")
k = c2.number_input(**setting("k"), step=0.001, format="%.4f")
confidence = c3.selectbox(
    runview.field_label("confidence"),
    runview.CONFIDENCE_CHOICES,
    index=runview.CONFIDENCE_CHOICES.index(preset.confidence),
    help=runview.field_help("confidence"),
)
c1, c2, c3 = st.columns(3)
search_budget = c1.number_input(**setting("search_budget"))
test_budget = c2.number_input(**setting("test_budget"))
use_target = c3.checkbox(
    "Certify against a target p*",
    value=preset.target is not None,
    help=runview.FORM_HELP["use_target"],
)
target = c3.number_input(**setting("target"), step=0.01, disabled=not use_target)
stop_at_target = c3.checkbox(**setting("stop_at_target"), disabled=not use_target)
c1, c2 = st.columns(2)
search_gens = c1.multiselect(
    runview.field_label("search_generators"),
    search_choices,
    default=search_choices,
    help=runview.field_help("search_generators"),
)
test_gens = c2.multiselect(
    runview.field_label("test_generators"),
    test_choices,
    default=test_choices,
    help=runview.field_help("test_generators"),
)
with st.expander("Advanced"):
    tv_delta = st.number_input(**setting("tv_delta"), step=0.01)
    tolerant = st.checkbox(**setting("continue_after_counterexample"))
    batch = st.number_input(**setting("batch_size"))
    min_drop = st.number_input(**setting("min_drop"), step=0.01, format="%.4f")
    eps_from = calibrate.epsilon_from_field(
        pair_ids,
        post_spec=post_spec,
        settings={"k": k, "search_budget": search_budget, "test_budget": test_budget},
    )
    min_label_mass = st.number_input(**setting("min_label_mass"), step=0.05)
stored_runs = store_access.runs_frame()
control = st.selectbox(
    "Control run",
    ["", *(stored_runs["run_id"] if not stored_runs.empty else [])],
    format_func=lambda r: "none" if not r else run_picking.run_label(stored_runs, r),
    help="An adaptation that should not hurt, audited on the same base, questions, generators, "
    "budgets and k. Each question is then read against it (beyond / better than / within "
    "control) and the run leads with one test over questions; every paraphrase of both "
    "budgets is scored so that the reading has its replicates.",
)
label = st.text_input(
    "Run label",
    value="",
    placeholder="e.g. adversarial arm, eps 0.5",
    help=runview.FORM_HELP["label"],
)

request = runview.make_request(
    bid,
    pair_ids,
    pre_spec,
    post_spec,
    label,
    eps_from,
    epsilon=epsilon,
    k=k,
    confidence=confidence,
    search_budget=int(search_budget),
    test_budget=int(test_budget),
    target=float(target) if use_target and target is not None else None,
    stop_at_target=bool(stop_at_target),
    tv_delta=tv_delta,
    search_generators=tuple(search_gens),
    test_generators=tuple(test_gens),
    continue_after_counterexample=tolerant,
    batch_size=int(batch),
    min_drop=float(min_drop),
    min_label_mass=float(min_label_mass),
)
if request is not None and control:
    try:
        request = request_with_control(store, request, control)
    except InputError as exc:
        widgets.show_error("This control run cannot be used:", exc)
        request = None
    else:
        st.caption(FULL_BUDGETS_NOTE)
if request is not None:
    config = request.config
    cost = runview.cost(bid, pair_ids, config)
    if cost is not None:
        m = st.columns(4)
        m[0].metric("questions", cost["n_pairs"])
        m[1].metric(
            "n* (successes needed for p*)",
            "no target" if cost["n_star"] is None else cost["n_star"],
        )
        m[2].metric(
            "paraphrases, at most", cost["search_paraphrases"] + cost["max_test_paraphrases"]
        )
        m[3].metric("model queries, at most", cost["max_model_queries"])
        st.caption(
            "A model query is one question put to one checkpoint (both answer orders are scored). "
            "Scores already in the store's cache are not queried again."
        )
        runview.pool_summary(cost, config)
    if st.button("Start audit", type="primary", disabled=cost is None):
        try:
            run_id = runview.launch(request)
        except (InputError, StoreError) as exc:
            widgets.show_error("The audit could not start:", exc)
        else:
            st.query_params["watch"] = run_id
            st.rerun()
