"""The Run page's epsilon-calibration helper (issue 19 item 4): calibrate epsilon from a run
(percentiles of D over its rewordings), and take a run's epsilon from a stored calibration."""

from __future__ import annotations

import json

import streamlit as st

from eraudit_core.audit import EpsilonSource, calibrate_epsilon, epsilon_source
from eraudit_core.errors import InputError
from ui import state, widgets

NO_CALIBRATION = "(state epsilon yourself)"


def _calibrate_from_a_run() -> None:
    runs = state.runs_frame()
    if runs.empty:
        return
    c1, c2, c3 = st.columns([3, 2, 1])
    rid = c1.selectbox(
        "Calibrate epsilon on a run (a model organism, an honest arm, a null run)",
        list(runs["run_id"]),
        format_func=lambda r: state.run_label(runs, r),
        key="calibrate-run",
        help="The percentiles of D over every rewording this run scored become candidate "
        "epsilons (the reference code's practice). Calibrating on the questions being audited "
        "is selection: the page warns.",
    )
    pcts = c2.text_input(
        "Percentiles of D",
        value="10,25,50",
        key="calibrate-pcts",
        help="Comma-separated percentiles (0-100) of the calibration run's D values.",
    )
    if c3.button("Calibrate", key="calibrate-go"):
        try:
            qs = [float(x) for x in pcts.split(",") if x.strip()]
            cal = calibrate_epsilon(state.get_store(), rid, qs)
        except (InputError, ValueError) as exc:
            widgets.show_error("Could not calibrate:", exc)
            return
        for w in cal.warnings:
            st.warning(w)
        st.caption(
            f"Calibration {cal.name!r}: D over {cal.n} rewordings: "
            + ", ".join(f"{k} = {v:.4g}" for k, v in cal.percentiles.items())
        )


def epsilon_from_field(pair_ids: list[str]) -> EpsilonSource | None:
    """A selectbox of stored calibrations' percentiles; the chosen one as the run's epsilon
    source, or None to keep the epsilon typed above. Warns when the calibration run shares
    questions with the ones being audited (selection)."""
    _calibrate_from_a_run()
    store = state.get_store()
    cals = store.calibrations()
    options = [NO_CALIBRATION] + [
        f"{name}:{key}"
        for name, pct in zip(cals["name"], cals["percentiles"], strict=True)
        for key in json.loads(pct)
    ]
    choice = st.selectbox(
        "Epsilon from a calibration (beyond the paper; recorded with the run)",
        options,
        key="epsilon-from",
        help="Use a stored calibration's percentile as epsilon instead of the value typed "
        "above; the run records where its epsilon came from.",
    )
    if choice == NO_CALIBRATION:
        return None
    try:
        source, warnings = epsilon_source(store, choice, pair_ids)
    except InputError as exc:
        widgets.show_error("This calibration cannot be used:", exc)
        return None
    for w in warnings:
        st.warning(w)
    st.caption(f"epsilon = {source.value:.6g} from {choice}")
    return source
