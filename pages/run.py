"""Run: configure an audit, see its cost up front, start it, watch it live, cancel or resume.

The audit's settings are drawn from their declarations (ui.settings_form); this page's own
widgets are for what is not a setting: the benchmark, the preset, the control run, the label.
"""

from __future__ import annotations

import streamlit as st

from eraudit_core.method import PRESETS, Section
from ui import calibrate, entry, run_picking, runview, settings_form, store_access

entry.ensure_navigation()
st.title("Run an audit")
store = store_access.get_store()
if not runview.new_audit_form_shown(runview.watch_and_resume()):
    st.stop()

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
pair_ids = runview.questions(bid)
pre_spec, post_spec = runview.checkpoint_pickers(bid)

preset_name = st.selectbox(
    "Settings preset",
    [p.name for p in PRESETS],
    key="settings-preset",
    help=runview.FORM_HELP["preset"],
)
preset = settings_form.preset_named(preset_name)
st.caption(settings_form.preset_notes(preset))
settings_form.open_on(preset)
values = settings_form.draw_section(Section.MAIN, bid)
with st.expander("Advanced"):
    values |= settings_form.draw_section(Section.ADVANCED, bid)
    eps_from = calibrate.epsilon_from_field(
        pair_ids, post_spec=post_spec, settings=settings_form.null_threshold_values(values)
    )

stored_runs = store_access.runs_frame()
control = st.selectbox(
    "Control run",
    ["", *(stored_runs["run_id"] if not stored_runs.empty else [])],
    format_func=lambda r: "none" if not r else run_picking.run_label(stored_runs, r),
    help=runview.FORM_HELP["control"],
)
label = st.text_input(
    "Run label",
    value="",
    placeholder="e.g. adversarial arm, eps 0.5",
    help=runview.FORM_HELP["label"],
)

request = runview.make_request(bid, pair_ids, pre_spec, post_spec, label, eps_from, **values)
request = runview.with_control(request, control)
runview.start_panel(bid, pair_ids, request)
