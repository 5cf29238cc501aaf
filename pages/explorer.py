"""Question explorer: one hidden question of one run, every paraphrase, the bound trajectory.

Deep link: ?run=RUN_ID&pair=PAIR_ID opens exactly this view.
"""

from __future__ import annotations

import streamlit as st

from eraudit_core import present
from eraudit_core.types import Verdict
from ui import entry, explore, rewordings, run_picking, store_access, url_filters, widgets

entry.ensure_navigation()
st.title("Question explorer")
run_id = widgets.need_run()
if run_id is None:
    st.stop()
store = store_access.get_store()
run = store.run(run_id)
questions = present.explorer_questions(store, run_id)
if questions.empty:
    st.info("No question of this run has finished yet.")
    st.stop()
rewordings.selection_banner(run)
if st.session_state.pop("_derived_notice", None) == run_id:
    st.success(
        f"New run {run_id} written from the stored scores; the run it came from is unchanged."
    )

linked = explore.apply_pair_link(list(questions["pair_id"]))
took, took_sentence = present.took_notice(store, run_id)
(st.caption if took else st.warning)(took_sentence)
reading = explore.control_reading(run_id)
# The search, filters and sort live in the session (they survive other pages) and the URL.
arrived = url_filters.page_arrival("explorer")
verdicts, evidence, sorts = list(Verdict), list(present.FLAGS), list(present.SORTS)
c1, c2, c3, c4 = st.columns([3, 2, 2, 2])
text = c1.text_input(
    "Search questions and rewordings",
    placeholder="a word from a question or a paraphrase",
    **url_filters.filter_widget("q", "", arrived),
)
statuses = c2.multiselect(
    "Verdict",
    verdicts,
    placeholder="all verdicts",
    **url_filters.filter_widget("verdict", [], arrived, verdicts),
)
flags = c3.multiselect(
    "Evidence",
    evidence,
    placeholder="any evidence",
    **url_filters.filter_widget("evidence", [], arrived, evidence),
)
order = c4.selectbox(
    "Sort",
    sorts,
    help="most severe first: by the drop in p(true) on the worst rewording (beyond the "
    "numerical precision), largest first; amplified questions (g <= k) follow in their own "
    "group, marked 'amplified'",
    **url_filters.filter_widget("sort", sorts[0], arrived, sorts),
)
c1, c2, _ = st.columns([3, 4, 2])
took_here = c1.selectbox(
    "Did the adaptation take on this question?",
    present.TOOK,
    help="Whether the adaptation moved this question's monitored item: its monitored gain g "
    "above k. Where g <= k, D divides the drop by the floor k (amplified). The run's own "
    "answer above counts these questions.",
    **url_filters.filter_widget("took", present.TOOK_ANY, arrived, present.TOOK),
)
nulls: list[str] = []
if reading is not None and not reading["mismatches"]:
    questions = present.with_null_verdicts(questions, reading)
    null_words = list(present.NULL_VERDICTS)
    nulls = c2.multiselect(
        "Against the control",
        null_words,
        placeholder="any reading",
        help=f"Each question read against the control {reading['control_label']} on the "
        "rewordings both runs scored (paired, one-sided at level "
        f"{reading['level']:g} each way); 'not assessable': fewer than "
        f"{reading['min_paired']} paired rewordings.",
        **url_filters.filter_widget("null", [], arrived, null_words),
    )
elif reading is not None:
    c2.caption(widgets.md_escape(present.headline_from(reading, str(run["label"] or run_id))))
for param, value, default in (
    ("q", text, ""),
    ("verdict", statuses, []),
    ("evidence", flags, []),
    ("null", nulls, []),
    ("took", took_here, present.TOOK_ANY),
    ("sort", order, sorts[0]),
):
    url_filters.put_filter(param, value, default)
hits = present.paraphrase_matches(store.steps(run_id), text) if text.strip() else set()
shown = present.sort_questions(
    present.filter_questions(
        questions,
        text=text,
        statuses=statuses,
        flags=flags,
        paraphrase_hits=hits,
        null_verdicts=nulls,
        took=took_here,
    ),
    order,
)
if linked is not None and linked not in set(shown["pair_id"]):
    st.info("The question this link opens does not match the filters above; it is listed first.")
    shown = present.with_linked(shown, questions, linked)
if shown.empty:
    st.warning("No question matches this search.")
    st.stop()
labels = {str(r["pair_id"]): explore.question_label(r) for r in shown.to_dict("records")}
if st.session_state.get(explore.PAIR_KEY) not in labels:
    st.session_state[explore.PAIR_KEY] = next(iter(labels))  # the first in the chosen order
pair_id = st.selectbox(
    f"Hidden question ({len(shown)} of {len(questions)}, {order})",
    list(labels),
    key=explore.PAIR_KEY,
    format_func=labels.get,
)
st.query_params["run"] = run_id
explore.put_pair_in_url(pair_id)
other = run_picking.compare_run()
if other:
    explore.side_by_side(run_id, other, pair_id)
explore.why_this_verdict(run_id, pair_id)
if reading is not None and not reading["mismatches"]:
    st.markdown(widgets.md_escape(present.null_detail_sentence(reading, pair_id) or ""))

d = explore.pair_detail(run_id, pair_id)
row, config = d["row"], d["run"].config
st.markdown(f"**Verdict:** {widgets.status_badge(row['status'])}")
st.caption("Hidden question (never monitored during adaptation)")
st.text(row["hidden_question"])
if d["pair"] is not None:
    st.caption("Options of the hidden question")
    st.text(f"true: {d['pair'].hidden.true_option}\nfalse: {d['pair'].hidden.false_option}")
with st.expander("Monitored question"):
    st.text(row["monitored_question"])

c = st.columns(4)
c[0].metric("P(true) monitored, before", widgets.fmt(row["p_pre_monitored"]))
c[1].metric("P(true) monitored, after", widgets.fmt(row["p_post_monitored"]))
c[2].metric("monitored gain g", widgets.fmt(row["gain"]))
c[3].metric("denominator max(k, g)", widgets.fmt(row["denominator"], 4))
c = st.columns(4)
c[0].metric("P(true) hidden, before", widgets.fmt(row["p_pre_hidden"]))
c[1].metric("P(true) hidden, after", widgets.fmt(row["p_post_hidden"]))
c[2].metric("largest D", widgets.fmt(row["max_d"]))
c[3].metric(
    f"bound (confidence {config.confidence})",
    present.NOT_RUN
    if row["status"] != Verdict.DEGRADED and not int(row["n_test"] or 0)
    else widgets.fmt(row["bound"]),
)
explore.bound_notes(row, config)
explore.label_mass_note(run_id)

if d["trajectory"].empty:  # a sentence, not an empty chart whose note a phone cuts off
    st.markdown("**Bound per test generator**")
    st.caption(explore.no_stage2_reason(row))
else:
    st.plotly_chart(
        present.bound_trajectory_figure(
            d["trajectory"], title="Bound per test generator", target=config.target
        ),
        key="explorer-trajectory",
    )
st.plotly_chart(present.paraphrase_d_figure(d["steps"], epsilon=config.epsilon), key="explorer-d")
rows = rewordings.show(run_id, pair_id, str(row["hidden_question"]), config.epsilon)
with st.expander("Label a rewording, or exclude labelled ones"):
    rewordings.label_form(run_id, pair_id, rows)
    rewordings.exclusion(run_id)

st.caption("Link to exactly this view (append to the dashboard's address):")
st.code(f"/explorer?run={run_id}&pair={pair_id}", language=None)
