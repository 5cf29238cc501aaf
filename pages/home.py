"""Home: what this is, the embedded demo, the one-click live audit, recent runs."""

from __future__ import annotations

import streamlit as st

from ui import entry, state, widgets

entry.ensure_navigation()
st.title("ER-Audit Studio")
st.markdown(
    "Did adapting (fine-tuning) a verifier model quietly make it worse on questions nobody "
    "monitored? ER-Audit searches paraphrases of each hidden question for a **counterexample**; "
    "when none is found, a sequential test gives a **lower confidence bound**, at a stated "
    "confidence, on the share of paraphrases on which the adapted model is not worse; a "
    "question is **certified** when that bound reaches the target you set."
)

demo = state.demo_info()
runs = state.runs_frame()

st.subheader("The embedded demo")
if demo is None:
    st.caption("The demo is turned off for this store (ERAUDIT_NO_DEMO).")
elif demo.get("error"):
    st.warning("The embedded demo could not be prepared:")
    st.text(demo["error"])
else:
    st.write(
        f"QuALITY-H: {demo['n_pairs']} monitored/hidden question pairs with "
        f"{demo['paraphrases_stored']} stored paraphrases. SmolLM2-135M-Instruct before and "
        "after a small LoRA adaptation: an honest arm (trained on monitored answers only) and an "
        "adversarial arm (also pushed hidden answers wrong)."
    )
    for note in demo.get("notes", []):
        st.caption(note)
    cols = st.columns(max(1, len(demo["run_ids"])))
    for col, (arm, run_id) in zip(cols, demo["run_ids"].items(), strict=False):
        with col:
            widgets.run_card(run_id)
            if st.button(f"Explore the {arm} arm", key=f"open-{arm}"):
                state.select_run(run_id)
                st.switch_page("pages/results.py", query_params={"run": run_id})
    live = demo.get("live_pair_ids") or []
    missing = widgets.demo_models_missing()
    if live and missing:
        st.caption(f"The one-click live audit is unavailable: {missing}.")
    elif live:
        st.markdown("**One-click live audit** of the adversarial arm on a few demo questions:")
        st.caption(
            f"{len(live)} pair(s); loads the real model on this machine (about 20 s) and scores "
            "every paraphrase before and after adaptation. Takes a few minutes on a laptop CPU."
        )
        if st.button("Run a live demo audit", type="primary", key="live-demo"):
            run_id = widgets.launch_demo_audit(demo)
            if run_id:
                st.switch_page("pages/run.py", query_params={"watch": run_id})

st.subheader("Recent runs")
if runs.empty:
    st.info("No runs in this store yet.")
else:
    st.dataframe(
        widgets.runs_table(runs.head(20)),
        hide_index=True,
        width="stretch",
    )
