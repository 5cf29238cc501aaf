"""Share: a plain-language summary, a self-contained HTML report, CSV/Parquet exports."""

from __future__ import annotations

import streamlit as st

from eraudit_core import present
from eraudit_core.errors import InputError
from ui import entry, run_picking, store_access, story, widgets

entry.ensure_navigation()
st.title("Share the findings")
runs = store_access.runs_frame()
if runs.empty:
    st.info("No runs in this store yet.")
    st.stop()
store = store_access.get_store()
ids = list(runs["run_id"])
default = [r for r in (run_picking.selected_run(), run_picking.compare_run()) if r] or ids[:1]
chosen = st.multiselect(
    "Runs in the report", ids, default=default, format_func=lambda r: run_picking.run_label(runs, r)
)
if not chosen:
    st.info("Choose at least one run.")
    st.stop()

# a run that names a control leads with the reading against it (its primary test, and the
# questions worse and better than the control); else the story's lead
headlines = [h for h in (present.null_headline(store, rid) for rid in chosen) if h]
for headline in headlines:
    st.markdown(widgets.md_escape(headline))
led = bool(headlines) or story.lead(chosen)
story.first_screen(chosen, show_leads=not led)
story.marker_legend()

st.subheader("In plain words")
if len(chosen) > 1:
    story.standard_vs_audit(chosen)
for rid in chosen:
    verdict = present.run_verdict(store.run(rid), store.pair_results(rid))
    with st.container(border=True):
        story.contrast_lead(rid)
        story.verdict_line(rid, verdict)
        for sentence in verdict["sentences"]:
            st.markdown("- " + widgets.md_escape(sentence))
        story.evidence_notes(rid)

st.subheader("HTML report")
st.caption(
    "One file with every plot embedded; it opens in any browser without a network connection "
    "and can be attached to an email."
)
title = st.text_input("Report title", value="ER-Audit report")
if st.button("Build the report", type="primary"):
    try:
        st.session_state["report_html"] = (
            tuple(chosen),
            present.build_report(store, chosen, title=title),
        )
    except InputError as exc:
        widgets.show_error("The report could not be built:", exc)
built = st.session_state.get("report_html")
if built and built[0] == tuple(chosen):
    st.download_button(
        "Download the HTML report",
        data=built[1].encode("utf-8"),
        file_name="eraudit_report.html",
        mime="text/html",
        key="download-report",
    )
    st.caption(f"{len(built[1]) / 1e6:.1f} MB, including the plotting library.")

st.subheader("Tables")
fmt = st.radio("Format", list(present.EXPORT_FORMATS), horizontal=True)
mime = "text/csv" if fmt == "csv" else "application/vnd.apache.parquet"
for rid in chosen:
    st.markdown(widgets.md_escape(str(store.run(rid).get("label") or rid)))
    c1, c2 = st.columns(2)
    c1.download_button(
        "Per-question results",
        data=lambda rid=rid: present.table_bytes(present.pair_table(store, rid), fmt),
        file_name=f"{rid}_pairs.{fmt}",
        mime=mime,
        key=f"pairs-{rid}-{fmt}",
    )
    c2.download_button(
        "Per-paraphrase results",
        data=lambda rid=rid: present.table_bytes(present.paraphrase_table(store, rid), fmt),
        file_name=f"{rid}_paraphrases.{fmt}",
        mime=mime,
        key=f"paras-{rid}-{fmt}",
    )
st.caption(
    "From a terminal: `eraudit report RUN_ID --db PATH --out report.html` and "
    "`eraudit export RUN_ID --db PATH --out DIR --format csv|parquet`."
)
