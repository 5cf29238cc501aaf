"""Auditor sensitivity (the Petri paper): does the verdict depend on how the auditor was configured?"""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from eraudit_core import sensitivity
from eraudit_core.errors import InputError
from ui import entry, run_picking, store_access, widgets
from ui import sensitivity_view as sv

entry.ensure_navigation()
st.title("Auditor sensitivity")
st.caption(
    "Judge-scored audit rollouts by resource condition and auditor-target pair: a cumulative-logit "
    "model per behaviour, likelihood-ratio tests for the condition and its interaction with the "
    "pair, odds ratios vs the reference condition (Holm-corrected), cell means with bootstrap "
    "intervals and judge agreement."
)
SOURCES = [
    "Bundled sample (synthetic)",
    "Bundled Petri 3 example (real format, tiny)",
    "Upload a tidy table",
    "Stored ER-Audit runs",
]


def _open_example() -> None:
    st.session_state["sens-source"] = SOURCES[1]


st.button(
    "Open the bundled example (judge scores and rollouts)",
    on_click=_open_example,
    key="sens-example",
    help="The bundled Petri 3 example: its scores and its rollouts file, so every citation "
    "opens its message in the transcript. No upload needed.",
)
source = st.radio("Data", SOURCES, horizontal=True, key="sens-source")
table: pd.DataFrame | None = None
rollouts: pd.DataFrame | None = None
try:
    if source.startswith("Bundled sample"):
        st.caption("Synthetic rollouts with planted effects; see data/sensitivity/README.md.")
        table = sv.read_sample()
    elif source.startswith("Bundled Petri"):
        st.caption(
            "Petri 3 logs written by Petri's own code with scripted models (tests/fixtures/petri), "
            "imported with `eraudit sensitivity-import`: too few rollouts for the statistics, "
            "there to show the importer and the drill-down to what the judge wrote."
        )
        table, rollouts = sv.read_petri_example()
    elif source.startswith("Upload"):
        up = st.file_uploader(
            "CSV or Parquet: rollout, behaviour, condition, auditor, target, judge, dimension, score",
            type=["csv", "parquet"],
            key="sens-upload",
        )
        up_r = st.file_uploader(
            "Optional: its rollouts file (<name>.rollouts.jsonl, written by "
            "`eraudit sensitivity-import`) to read what the judge wrote",
            type=["jsonl"],
            key="sens-rollouts",
        )
        if up is not None:
            table = sv.read_upload(up.name, up.getvalue())
        if up_r is not None:
            rollouts = sv.read_rollouts_upload(up_r.name, up_r.getvalue())
    else:
        runs = store_access.runs_frame()
        ids = list(runs["run_id"]) if not runs.empty else []
        chosen = st.multiselect(
            "Runs (condition = their test generators, pair = their checkpoints)",
            ids,
            default=ids[:2],
            format_func=lambda r: run_picking.run_label(runs, r),
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
c1, c2, c3 = st.columns(3)
reference = c1.selectbox(
    "Reference condition", conditions, index=conditions.index("none") if "none" in conditions else 0
)
DEFAULT_DIM = "named like each behaviour"
dimension = c2.selectbox(
    "Judge dimension",
    [DEFAULT_DIM, *sorted(table["dimension"].astype(str).unique())],
    help="The score analysed per behaviour. Petri judges score 38 dimensions.",
)
n_boot = c3.number_input(
    "Bootstrap resamples", min_value=100, max_value=10000, value=1000, step=100
)
st.caption(f"{table['rollout'].nunique()} rollouts, {len(table)} judge scores.")
# Everything computed from this data is drawn in one slot: while a new dataset is fitted the slot
# says so, and the previous data's findings are gone from the screen (never shown as current).
results = st.empty()
results.info("Fitting the models for this data; its findings appear here when the fit is done.")
with results.container():
    try:
        result = sv.analyse_cached(
            table, reference, int(n_boot), None if dimension == DEFAULT_DIM else dimension
        )
    except InputError as exc:
        widgets.show_error("The analysis failed on this table:", exc)
        st.stop()
    if len(result.warnings) <= 3:
        for note in result.warnings:
            st.warning(widgets.md_escape(note))
    else:
        st.warning(
            f"{len(result.warnings)} warnings about this data and its fits (read them below)."
        )
        with st.expander("Warnings"):
            for note in result.warnings:
                st.text(note)
    sv.dropped_rollouts(result.dropped)
    if not result.behaviours:
        st.info("No behaviour could be analysed.")
        st.stop()
    order = sensitivity.by_evidence(result)
    st.subheader("Findings")
    st.caption("One line per behaviour, the strongest evidence of a condition effect first.")
    for name in order:
        st.markdown(f"- {widgets.md_escape(sensitivity.finding(result.behaviours[name]))}")
    sv.glossary()
    tabs = st.tabs([widgets.md_escape(b) for b in order])
    for tab, name in zip(tabs, order, strict=True):
        b = result.behaviours[name]
        with tab:
            st.markdown(f"**{widgets.md_escape(sensitivity.finding(b))}**")
            m = st.columns(3)
            if b.lr_resource is not None:
                m[0].metric(
                    "condition effect: LR test p",
                    sensitivity.format_p(b.lr_resource.p),
                    help=f"chi2 = {b.lr_resource.stat:.2f}, df = {b.lr_resource.df}",
                )
            if b.lr_interaction is not None:
                m[1].metric(
                    "condition x pair interaction: p",
                    sensitivity.format_p(b.lr_interaction.p),
                    help=f"chi2 = {b.lr_interaction.stat:.2f}, df = {b.lr_interaction.df}",
                )
            alpha = b.agreement.krippendorff_alpha_ordinal
            m[2].metric(
                "judge agreement (Krippendorff alpha)", "n/a" if alpha is None else f"{alpha:.2f}"
            )
            forest = sensitivity.odds_ratio_forest(b)
            if forest.data:
                st.plotly_chart(forest, key=f"forest-{name}")
            else:
                st.caption("No odds ratio with finite bounds to plot (see the warnings).")
            targets = sv.drill_targets(b)
            labels = [t[0] for t in targets]
            drill_key = f"drill-{name}"

            def pick(table_key: str, offset: int, drill_key: str = drill_key) -> None:
                """A click on a row of an odds-ratio or cell table chooses what to drill into."""
                rows = st.session_state[table_key].selection.rows
                if rows:
                    st.session_state[drill_key] = offset + rows[0]

            st.caption("Click a row of a table below to list the rollouts behind that number.")
            st.dataframe(
                sv.contrasts_table(b),
                hide_index=True,
                width="stretch",
                on_select=partial(pick, f"or-{name}", 0),
                selection_mode="single-row",
                key=f"or-{name}",
            )
            st.plotly_chart(sensitivity.cell_means_figure(b), key=f"cells-{name}")
            st.dataframe(
                b.cell_means_frame(),
                hide_index=True,
                width="stretch",
                on_select=partial(pick, f"cm-{name}", len(b.contrasts) + len(b.per_pair)),
                selection_mode="single-row",
                key=f"cm-{name}",
            )
            with st.expander("Per-pair contrasts"):
                st.dataframe(
                    sv.contrasts_table(b, per_pair=True),
                    hide_index=True,
                    width="stretch",
                    on_select=partial(pick, f"pp-{name}", len(b.contrasts)),
                    selection_mode="single-row",
                    key=f"pp-{name}",
                )
            for w in b.warnings:
                st.caption(widgets.md_escape(w))

            st.subheader("Rollouts behind a number")
            if not targets:
                st.info("No cell or odds ratio to drill into.")
                continue
            choice = st.selectbox(
                "Rollouts behind",
                range(len(targets)),
                format_func=lambda i, labels=labels: labels[i],
                key=drill_key,
            )
            _, pair, conds = targets[choice]
            behind = sv.rollouts_for(table, b, pair, conds)
            st.dataframe(behind, hide_index=True, width="stretch", key=f"behind-{name}")
            if behind.empty:
                continue
            rid = st.selectbox(
                "Read what the judge wrote on rollout", list(behind["rollout"]), key=f"rid-{name}"
            )
            details = sv.rollout_details(rollouts, rid)
            if details.empty:
                st.info(
                    "No rollout details for this table: import Petri output with "
                    "`eraudit sensitivity-import` and load its .rollouts.jsonl file."
                )
                continue
            for _, row in details.iterrows():
                st.text(f"Judge {row['judge']}")
                st.caption("Summary")
                sv.text_with_refs(row["summary"], row.get("messages"), f"refs-s-{name}-{rid}-{_}")
                st.caption("Justification")
                sv.text_with_refs(
                    row["justification"], row.get("messages"), f"refs-j-{name}-{rid}-{_}"
                )
                st.caption("Highlights: open one to read the transcript message it cites")
                sv.citations(row["highlights"], row.get("messages"))
                with st.expander("Seed instruction, task arguments, source and identity"):
                    st.text(row["seed_instruction"] or "(no seed instruction recorded)")
                    st.dataframe(sv.facts_frame(row), hide_index=True, width="stretch")
