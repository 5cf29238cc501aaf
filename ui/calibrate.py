"""The Run page's epsilon-calibration helper: a null threshold from a control arm (for honest
arms and controls), or organism percentiles (a model organism known to be degraded), and
taking a run's epsilon from a stored calibration (docs/null-reading.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import streamlit as st

from eraudit_core.errors import InputError
from eraudit_core.null import audited_model, calibrate_epsilon, calibrate_null, parse_percentiles
from eraudit_core.runs import EpsilonSource, epsilon_source
from ui import run_picking, store_access, widgets

NO_CALIBRATION = "(state epsilon yourself)"
NULL_MODE = "Null threshold of a control arm (honest arms, controls)"
ORGANISM_MODE = "Organism percentiles (a model organism known to be degraded)"


def _calibrate_from_a_run() -> None:
    runs = store_access.runs_frame()
    if runs.empty:
        return
    mode = st.radio("Calibration mode", (NULL_MODE, ORGANISM_MODE), key="calibrate-mode")
    c1, c2, c3 = st.columns([3, 2, 2])
    rid = c1.selectbox(
        "Calibrate epsilon on a run",
        list(runs["run_id"]),
        format_func=lambda r: run_picking.run_label(runs, r),
        key="calibrate-run",
        help="Null mode: epsilon is the chosen quantile of each control question's largest D "
        "over the paraphrases an audit at the control's budgets scores; on an arm "
        "exchangeable with the control about 1 - level of questions then read degraded. "
        "Organism mode: percentiles of D on a model organism known to be degraded (the "
        "reference code's practice; low percentiles of an honest run can be negative and "
        "are refused).",
    )
    if mode == NULL_MODE:
        level = c2.number_input(
            "Level",
            min_value=0.5,
            max_value=0.999,
            value=0.95,
            step=0.01,
            key="calibrate-level",
            help="The quantile of the control questions' largest D taken as epsilon: on an arm "
            "exchangeable with the control, about 1 - level of questions read degraded.",
        )
        pcts = ""
    else:
        level = 0.95
        pcts = c2.text_input(
            "Percentiles of D",
            value="10,25,50",
            key="calibrate-pcts",
            help="Comma-separated percentiles (0-100) of the organism run's D values.",
        )
    name = c3.text_input(
        "Name", value="", key="calibrate-name", help="Letters, digits, _ . - (at most 64)"
    )
    c1, c2, c3 = st.columns(3)
    force = c1.checkbox(
        "Replace a calibration of this name",
        key="calibrate-force",
        help="Names are unique; without this a name already stored is refused.",
    )
    unverified = c2.checkbox(
        "Allow an imported or derived run (recorded as unverified)",
        key="calibrate-unverified",
        help="A run imported from a bundle or re-derived after exclusions is not verified by "
        "this store; its numbers would feed new audits, so this is refused unless allowed.",
    )
    if c3.button("Calibrate", key="calibrate-go"):
        store = store_access.get_store()
        try:
            if mode == NULL_MODE:
                null = calibrate_null(
                    store,
                    rid,
                    float(level),
                    name=name or None,
                    force=force,
                    allow_unverified=unverified,
                )
                warnings, text = (
                    null.warnings,
                    f"Null calibration {null.name!r}: epsilon {null.epsilon:.4g} = the "
                    f"{null.level:g} quantile of the largest D of {null.n_questions} control "
                    f"questions (k {null.k:g}, budgets {null.search_budget} / "
                    f"{null.test_budget}; an audit using it must have the same).",
                )
            else:
                cal = calibrate_epsilon(
                    store,
                    rid,
                    parse_percentiles(pcts),
                    name=name or None,
                    force=force,
                    allow_unverified=unverified,
                )
                warnings, text = (
                    cal.warnings,
                    f"Organism calibration {cal.name!r}: D over {cal.n} rewordings: "
                    + ", ".join(f"{k} = {v:.4g}" for k, v in cal.percentiles.items()),
                )
        except InputError as exc:
            widgets.show_error("Could not calibrate:", exc)
            return
        for w in warnings:
            st.warning(w)
        st.caption(text)


def _options() -> list[str]:
    cals = store_access.get_store().calibrations()
    out = [NO_CALIBRATION]
    for name, pct, prov in zip(cals["name"], cals["percentiles"], cals["provenance"], strict=True):
        mode = (json.loads(prov) if isinstance(prov, str) and prov else {}).get("mode")
        keys = json.loads(pct)
        if mode == "null" or (mode is None and "null" in keys):
            out.append(str(name))
        else:
            out += [f"{name}:{key}" for key in keys]
    return out


def epsilon_from_field(
    pair_ids: list[str],
    *,
    post_spec: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> EpsilonSource | None:
    """A selectbox of stored calibrations (a null calibration by its name, an organism one by
    `NAME:p25`); the chosen one as the run's epsilon source, or None
    to keep the epsilon typed above. Refused inline: a negative epsilon, other k or budgets
    than a null calibration's (`settings`), an unverified source or the audited checkpoint
    itself (`post_spec`) unless allowed. `pair_ids` is kept for callers; selection is judged
    by content, not ids."""
    del pair_ids
    _calibrate_from_a_run()
    store = store_access.get_store()
    choice = st.selectbox(
        "Epsilon from a calibration (recorded with the run)",
        _options(),
        key="epsilon-from",
        help="Use a stored calibration's epsilon instead of the value typed above; the run "
        "records where its epsilon came from.",
    )
    if choice == NO_CALIBRATION:
        return None
    c1, c2 = st.columns(2)
    selection = c1.checkbox(
        "Allow a calibration made on the audited checkpoint (selection)",
        key="allow-selection",
        help="Epsilon chosen on the data it judges is selection: refused unless allowed, and "
        "then recorded and said in every report.",
    )
    unverified = c2.checkbox(
        "Allow a calibration from an unverified run",
        key="allow-unverified-use",
        help="A calibration made on an imported or derived run; the run will say so in its "
        "provenance, headline and report.",
    )
    try:
        source, warnings = epsilon_source(
            store,
            choice,
            audited_model(store, post_spec) if post_spec else None,
            settings=settings,
            allow_selection=selection,
            allow_unverified=unverified,
        )
    except InputError as exc:
        widgets.show_error("This calibration cannot be used:", exc)
        return None
    for w in warnings:
        st.warning(w)
    st.caption(f"epsilon = {source.value:.6g} from {choice}")
    return source
