"""Auditor sensitivity (seed 003): does the verdict depend on how the auditor was configured?"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from eraudit_core import sensitivity
from eraudit_core.errors import InputError
from ui import entry, state, widgets
from ui import sensitivity_view as sv

entry.ensure_navigation()
st.title("Auditor sensitivity")
st.caption(
    "Judge-scored audit rollouts by resource condition and auditor-target pair: a cumulative-logit "
    "model per behaviour, likelihood-ratio tests for the condition and its interaction with the "
    "pair, odds ratios vs the reference condition (Holm-corrected), cell means with bootstrap "
    "intervals and judge agreement."
)
source = st.radio(
    "Data",
    ["Bundled sample (synthetic)", "Upload a tidy table", "Stored ER-Audit runs"],
    horizontal=True,
)
table: pd.DataFrame | None = None
try:
    if source.startswith("Bundled"):
        st.caption("Synthetic rollouts with planted effects; see data/sensitivity/README.md.")
        table = sv.read_sample()
    elif source.startswith("Upload"):
        up = st.file_uploader(
            "CSV or Parquet: rollout, behaviour, condition, auditor, target, judge, dimension, score",
            type=["csv", "parquet"],
            key="sens-upload",
        )
        if up is not None:
            table = sv.read_upload(up.name, up.getvalue())
    else:
        runs = state.runs_frame()
        ids = list(runs["run_id"]) if not runs.empty else []
        chosen = st.multiselect(
            "Runs (condition = their test generators, pair = their checkpoints)",
            ids,
            default=ids[:2],
            format_func=lambda r: state.run_label(runs, r),
        )
        outcome = st.radio("Outcome per question", ["counterexample", "max_d"], horizontal=True)
        if chosen:
            table, dropped = sv.runs_table(chosen, outcome)
            if len(dropped):
                st.caption(f"{len(dropped)} question(s) left out (unfinished or no score).")
except InputError as exc:
    widgets.show_error("This table cannot be analysed:", exc)
    table = None
if table is None or table.empty:
    st.info("Choose data to analyse.")
    st.stop()

conditions = sorted(table["condition"].astype(str).unique())
c1, c2 = st.columns(2)
reference = c1.selectbox(
    "Reference condition", conditions, index=conditions.index("none") if "none" in conditions else 0
)
n_boot = c2.number_input(
    "Bootstrap resamples", min_value=100, max_value=10000, value=1000, step=100
)
st.caption(f"{table['rollout'].nunique()} rollouts, {len(table)} judge scores.")
try:
    result = sv.analyse_cached(table, reference, int(n_boot))
except InputError as exc:
    widgets.show_error("The analysis failed on this table:", exc)
    st.stop()
for note in result.warnings:
    st.warning(widgets.md_escape(note))
if not result.behaviours:
    st.info("No behaviour could be analysed.")
    st.stop()
tabs = st.tabs([widgets.md_escape(b) for b in result.behaviours])
for tab, (name, b) in zip(tabs, result.behaviours.items(), strict=True):
    with tab:
        m = st.columns(3)
        if b.lr_resource is not None:
            m[0].metric(
                "condition effect: LR test p",
                f"{b.lr_resource.p:.3g}",
                help=f"chi2 = {b.lr_resource.stat:.2f}, df = {b.lr_resource.df}",
            )
        if b.lr_interaction is not None:
            m[1].metric(
                "condition x pair interaction: p",
                f"{b.lr_interaction.p:.3g}",
                help=f"chi2 = {b.lr_interaction.stat:.2f}, df = {b.lr_interaction.df}",
            )
        alpha = b.agreement.krippendorff_alpha_ordinal
        m[2].metric(
            "judge agreement (Krippendorff alpha)", "n/a" if alpha is None else f"{alpha:.2f}"
        )
        st.plotly_chart(sensitivity.odds_ratio_forest(b), key=f"forest-{name}")
        st.dataframe(b.contrasts_frame(), hide_index=True, width="stretch")
        st.plotly_chart(sensitivity.cell_means_figure(b), key=f"cells-{name}")
        with st.expander("Per-pair contrasts and cell means"):
            st.dataframe(b.contrasts_frame(per_pair=True), hide_index=True, width="stretch")
            st.dataframe(b.cell_means_frame(), hide_index=True, width="stretch")
        for w in b.warnings:
            st.caption(widgets.md_escape(w))
