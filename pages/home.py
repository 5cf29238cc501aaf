"""Home: what this is, the embedded demo, the one-click live audit, recent runs."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui import entry, store_access, story, widgets

LIVE_DEMO_KEY = "live-demo"

entry.ensure_navigation()
st.title("ER-Audit Studio")
demo = store_access.demo_info()
# A click on "Run a live demo audit" is handled here, before the page's tables are computed
# again (3-4 s a rerun once the debate runs are in the demo): the audit starts and the Run page
# opens at once. If it cannot start, the reason shows here, at the top.
if st.session_state.get(LIVE_DEMO_KEY) and demo is not None and not demo.get("error"):
    started = widgets.launch_demo_audit(demo)
    if started:
        st.switch_page("pages/run.py", query_params={"watch": started})
ready = demo is not None and not demo.get("error") and not demo.get("preparing")
groups = story.demo_groups(demo) if ready else {}
# The lead goes first on the page but is computed after the one-click audit is drawn: it reads
# every arm's verdicts beside its control (seconds on a loaded machine), the button nothing.
lead_slot = st.container()
st.markdown(
    "Did adapting (fine-tuning) a verifier model quietly make it worse on questions nobody "
    "monitored? ER-Audit compares the model before and after on reworded forms of each hidden "
    "question: a **counterexample** marks it *degraded*; otherwise a sequential test bounds, at "
    "a stated confidence, the share of rewordings on which it is not worse, and the question is "
    "*certified* when that bound reaches your target."
)


def one_click_audit(demo: dict[str, Any]) -> None:
    """The one-click live audit's button, drawn before the demo's tables (which take
    seconds to compute) so it is on screen first; its two checkpoints have been loading in the
    background since the first page of this process (app.py) and load while Home is read."""
    live = demo.get("live_pair_ids") or []
    missing = widgets.demo_models_missing()
    if live and missing:
        st.caption(f"The one-click live audit is unavailable: {missing}.")
    elif live:
        st.markdown("**One-click live audit** of the concealed arm on a few demo questions:")
        st.caption(
            f"{len(live)} pair(s); loads the real model on this machine and scores paraphrases "
            "before and after adaptation, under half a minute on an idle two-core CPU. The Run "
            "page names each step as it goes (loading, scoring each question) with the "
            "seconds since the click."
        )
        st.button("Run a live demo audit", type="primary", key=LIVE_DEMO_KEY)  # handled above


if demo is not None and not demo.get("error"):
    one_click_audit(demo)
if demo is not None and demo.get("preparing"):
    widgets.demo_preparing_notice(demo)
if groups:
    # one plain sentence from the primary comparison against the control: the
    # debate-distilled pair when it is there, else the model organisms
    with lead_slot:
        story.lead(list((groups["debate"] or groups["organisms"]).values()))
runs = store_access.runs_frame()


if demo is None:
    st.subheader("The embedded demo")
    st.caption("The demo is turned off for this store (ERAUDIT_NO_DEMO).")
elif demo.get("error"):
    st.subheader("The embedded demo")
    st.warning("The embedded demo could not be prepared:")
    st.text(demo["error"])
elif ready:
    if groups["debate"]:
        st.subheader(
            "Debate distillation in miniature: what standard evaluation sees, and what ER-Audit finds"
        )
        st.markdown(widgets.md_escape(story.debate_fit_headline(list(groups["debate"]))))
        st.caption(
            "SmolLM2-135M-Instruct adapted on the paper's own QuALITY-H debate transcripts: "
            "honest transcripts for one arm, transcripts with an adversarial debater for the "
            "other, audited on every one of the 222 pairs. "
            + story.debate_recipe(list(groups["debate"]))
        )
        story.standard_vs_audit(list(groups["debate"].values()))
        story.paper_comparison(groups["debate"])
        story.explore_buttons(groups["debate"])
    st.subheader(
        "Model organisms: known damage in known places"
        if groups["debate"]
        else "The demo: what standard evaluation sees, and what ER-Audit finds"
    )
    st.caption(
        "Engineered arms, not the paper's process: LoRA trained directly on answers, some "
        "toward seeded wrong answers, so the damage and where it sits are known. Useful to "
        "check the audit finds it and to calibrate epsilon; 40 pairs, half of them targets."
    )
    story.standard_vs_audit(list(groups["organisms"].values()))
    story.demo_targets(groups["organisms"])
    story.explore_buttons(groups["organisms"])
    with st.expander("About the demo"):
        st.write(
            f"QuALITY-H: {demo['n_pairs']} monitored/hidden question pairs with "
            f"{demo['paraphrases_stored']} stored paraphrases. SmolLM2-135M-Instruct before and "
            "after adaptation. Debate-distilled arms: its top 2 layers fine-tuned on the judge "
            "prompt of the reference repository's debate transcripts (honest, or with an "
            "adversarial debater) with the paper's objective, one recipe and one seed fixed "
            "before any audit. Model organisms, small LoRA adaptations of its top 4 layers: "
            "honest arm, trained on the monitored answers only; adversarial "
            "arm, also pushed a seeded share of the hidden answers wrong, which standard "
            "evaluation sees; concealed arm, trained toward the true answer of every hidden "
            "question's canonical wording and toward the false answer on reworded forms of its "
            "targets (rewordings the audit never uses). The small model did not learn to tell a "
            "wording from a rewording: it answers its targets' canonical wording wrongly too, so "
            "standard evaluation sees that damage as well; the model organisms' section says, from "
            "the numbers in its table, whether it approves the concealed arm over the honest one "
            "(docs/user-guide.md says what this demo reproduces and what not)."
        )
        note = story.arm_evaluation_note("concealed")
        if note:
            st.caption(note)
        for note in demo.get("notes", []):
            st.caption(note)
        for run_id in demo["run_ids"].values():
            widgets.run_card(run_id)

st.subheader("Recent runs")
if runs.empty:
    st.info("No runs in this store yet.")
else:
    st.dataframe(
        widgets.runs_table(runs.head(20)),
        hide_index=True,
        width="stretch",
    )
