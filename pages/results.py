"""Results: scatter (click a point to open the question), epsilon and confidence sweeps,
standard evaluation, and two runs side by side."""

from __future__ import annotations

import streamlit as st

from eraudit_core import present
from eraudit_core.method import RunRecord
from eraudit_core.types import Verdict
from ui import (
    cached_views,
    compare,
    entry,
    run_picking,
    store_access,
    story,
    url_filters,
    url_selection,
    widgets,
)

entry.ensure_navigation()
st.title("Results")
runs = store_access.runs_frame()
if runs.empty:
    st.info("No runs in this store yet. Start one on the Run page.")
    st.stop()
ids = list(runs["run_id"])
# Every filter below lives in the session (it survives other pages) and in the URL.
arrived = url_filters.page_arrival("results")
shown_default = run_picking.default_runs_to_show()
chosen = st.multiselect(
    "Runs to show",
    ids,
    format_func=lambda r: run_picking.run_label(runs, r),
    **url_filters.filter_widget("show", shown_default, arrived, ids),
)
url_filters.put_filter("show", chosen, shown_default)
if not chosen:
    st.info("Choose at least one run.")
    st.stop()
store = store_access.get_store()
data = {r: cached_views.run_views(r) for r in chosen}
label = present.run_names(store, chosen)  # unique, so runs labelled alike never merge
epsilons = {RunRecord.read(store, r).config.epsilon for r in chosen}

st.subheader("Per question")
st.caption(
    "Each point is one hidden question. Right: the adapted model is confident in the true "
    "answer on the original wording; up: some paraphrase made it lose more than it gained on the "
    "monitored question. Click a point to open that question."
)
c1, c2, c3 = st.columns([2, 2, 2])
COLOURS = ["run", "amplified", "drop"]
colour_by = c1.radio(
    "Colour points by",
    COLOURS,
    horizontal=True,
    help="amplified: the monitored gain g <= k, so D = drop / k and every drop counts 1/k "
    "times; drop: p_pre - p_post on the question's worst rewording",
    **url_filters.filter_widget("colour", "run", arrived, COLOURS),
)
url_filters.put_filter("colour", colour_by, "run")
AMPLIFIED = ["all", "only amplified", "not amplified"]
only_amplified = c2.selectbox(
    "Amplified (g <= k)",
    AMPLIFIED,
    **url_filters.filter_widget("amplified", "all", arrived, AMPLIFIED),
)
url_filters.put_filter("amplified", only_amplified, "all")
min_shown_drop = c3.number_input(
    "Hide questions whose worst drop is below",
    min_value=0.0,
    max_value=1.0,
    step=0.01,
    format="%.3f",
    **url_filters.filter_widget("min_drop", 0.0, arrived, lambda v: 0.0 <= v <= 1.0),
)
url_filters.put_filter("min_drop", float(min_shown_drop), 0.0)
points = present.scatter_points(store, chosen)
if only_amplified != "all":
    points = points[
        points["amplified"].fillna(False).astype(bool) == (only_amplified == "only amplified")
    ]
points = points[points["worst_drop"].fillna(0.0).astype(float) >= min_shown_drop]
event = st.plotly_chart(
    present.scatter_figure(
        points,
        epsilon=epsilons.pop() if len(epsilons) == 1 else None,
        colour_by=colour_by,
    ),
    key="results-scatter",
    on_select="rerun",
    selection_mode="points",
)
points = event.selection.points if event and event.selection else []
if points and points[0].get("customdata"):
    run_id, pair_id = points[0]["customdata"][:2]
    run_picking.select_run(str(run_id))
    st.session_state.pop("_applied_pair_param", None)
    st.switch_page("pages/explorer.py", query_params={"run": str(run_id), "pair": str(pair_id)})

st.subheader("Sensitivity to the tolerance epsilon")
sweeps = {r: cached_views.epsilon_view(r) for r in chosen}
st.plotly_chart(present.epsilon_figure({label[r]: sweeps[r] for r in chosen}), key="results-eps")
unavailable = {label[r]: int(sweeps[r]["n_unavailable"].max()) for r in chosen}
if any(unavailable.values()):
    st.caption(
        "Some questions cannot be judged at another epsilon from the stored scores (the run "
        "stopped at a counterexample that would no longer count); they are counted as 'not "
        "judgeable' (dotted series) rather than extrapolated. Score-table runs keep every row "
        "of their table, so they are judgeable at every epsilon."
    )
    for name, n in unavailable.items():
        if n:
            st.text(f"{name}: up to {n} question(s) not judgeable")
st.subheader("Bounds across confidence levels")
together = st.toggle(
    "All questions at once (simultaneous, Bonferroni alpha / N)",
    help="Per question (default), each bound is wrong with probability at most alpha, so across "
    "N questions at most alpha x N bounds are wrong on average. Simultaneously, every bound is "
    "read at confidence 1 - alpha / N, so all N hold at once with the stated confidence.",
    **url_filters.filter_widget("together", False, arrived),
)
url_filters.put_filter("together", bool(together), False)
key = "confidence_simultaneous" if together else "confidence"
st.plotly_chart(
    present.confidence_figure({label[r]: data[r][key] for r in chosen}), key="results-conf"
)
st.caption(
    "Mean lower bound over all questions of a run; degraded and inconclusive questions count "
    "as 0. "
    + (
        "Each question's bound is read at 1 - alpha / N."
        if together
        else "Each bound is a per-question statement made before its result is known."
    )
)

st.subheader("Standard evaluation (original questions)")
std = widgets.concat([data[r]["standard"].assign(run=label[r]) for r in chosen])
st.plotly_chart(present.standard_evaluation_figure(std), key="results-std")
st.dataframe(std, hide_index=True, width="stretch")

st.subheader("Compare two runs side by side")
c1, c2 = st.columns(2)
# Left is the selected run and Right the compared run: the same two choices as the sidebar's,
# kept in session state, so a rerun (or another page) never puts other runs here.
a = widgets.run_picker(
    "Left",
    ids if run_picking.selected_run() else [run_picking.NO_RUN, *ids],
    runs,
    "results_left",
    run_picking.SELECTED_SLOT,
    run_picking.selected_run(),
    c1,
)
# Right is the sidebar's "Compare with": this page never picks it for the user.
b = widgets.run_picker(
    "Right",
    [run_picking.NO_RUN, *[r for r in ids if r != a]],
    runs,
    "results_right",
    run_picking.COMPARE_SLOT,
    run_picking.compare_run(),
    c2,
)
url_selection.sync_selection_url()
if not b:
    st.info(
        'Pick a run on the Right (or in the sidebar\'s "Compare with") to compare it with '
        "the left run question by question."
    )
for col, rid in ((c1, a), (c2, b)):
    if not rid:
        continue
    with col:
        verdict = present.run_verdict(store.run(rid), store.pair_results(rid))
        if headline := present.null_headline(store, rid):
            st.markdown(widgets.md_escape(headline))
        story.verdict_line(rid, verdict)  # a control's counts labelled as the control's own
        story.took_section(rid)
        widgets.run_card(rid)
        with st.expander("In plain words"):
            for s in verdict["sentences"]:
                st.text(s)
if a and b:
    comparison = present.compare_runs(store, a, b)
    if not comparison["comparable"]:
        st.warning(
            "These two runs cannot be compared question by question: they differ in what they "
            "stand on (settings, base model or paraphrases), so a difference in their verdicts "
            "could come from that rather than from the adaptations. No test is shown.\n\n"
            + "\n".join(
                f"- {widgets.md_escape(w)}"
                for w in present.differences_in_words(comparison["differences"])
            )
        )
    else:
        names = present.run_names(store, [a, b])
        st.markdown(present.primary_sentence(comparison, names[a], names[b]))
        st.caption("  \n".join(present.compare_sentences(comparison, names[a], names[b])[2:]))
    compare.show(a, b, arrived, comparable=bool(comparison["comparable"]))
for rid in chosen:
    control = present.control_summary(store, rid)
    if control is not None:
        st.caption(f"{label[rid]}: {present.control_sentence(control)}")
if a and st.button("Open the left run's first degraded question"):
    pairs = store.pair_results(a)
    bad = pairs[pairs["status"] == Verdict.DEGRADED]
    if bad.empty:
        st.info("The left run has no degraded question.")
    else:
        run_picking.select_run(a)
        st.session_state.pop("_applied_pair_param", None)
        st.switch_page(
            "pages/explorer.py", query_params={"run": a, "pair": str(bad["pair_id"].iloc[0])}
        )
