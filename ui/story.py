"""The contrast between standard evaluation and the audit, as Home and Share show it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from eraudit_core import present
from eraudit_core.types import Verdict
from ui import cached_views, explore, store_access, widgets
from ui.explore import diff_markdown
from ui.widgets import fit_table, fmt, md_escape


def story_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The `standard_vs_audit` table with reader-facing column names; the base row's audit
    cells are empty (it is what the others are compared with). A run that is another listed
    run's control is named as the control, and a run whose adaptation did not take has its
    counts marked as such: neither is a finding of its own."""
    controls = set(table["control_run"].dropna()) if "control_run" in table else set()
    out = pd.DataFrame(
        {
            "checkpoint": [
                f"{c} (control)" if r in controls else str(c)
                for c, r in zip(table["checkpoint"], table["run_id"], strict=True)
            ],
            "questions": table["n_pairs"],
            "adaptation took?": [
                _took(t, n) for t, n in zip(table["took"], table["n_gain_le_k"], strict=True)
            ],
            "hidden accuracy (standard evaluation)": table["hidden_accuracy"].map(fmt2),
            "hidden mean p(true)": table["hidden_mtp"].map(fmt2),
            "degraded": table["n_degraded"].map(count),
            "certified": table["n_certified"].map(count),
            "passed": table["n_passed"].map(count),
            "mean lower bound": table["mean_bound"].map(fmt2),
            "control": (
                table["control_run"].map(lambda r: _control_name(table, r))
                if "control_run" in table
                else ""
            ),
        }
    )
    return out


def _took(took: Any, n_le: Any) -> str:
    """'yes' / 'no (117 gains <= k)' / '' for the base row."""
    if took is None or pd.isna(took):
        return ""
    return "yes" if bool(took) else f"no ({int(n_le)} gains <= k)"


def _control_name(table: pd.DataFrame, control: Any) -> str:
    """The checkpoint name of a row's control run (the run id when it is not listed)."""
    if not isinstance(control, str) or not control:
        return ""
    hit = table.loc[table["run_id"] == control, "checkpoint"]
    return str(hit.iloc[0]) if len(hit) else control


def fmt2(x: Any) -> str:
    return "" if x is None or pd.isna(x) else fmt(x, 2)


def count(x: Any) -> str:
    return "" if x is None or pd.isna(x) else str(int(x))


def lead(run_ids: Sequence[str]) -> bool:
    """The one plain sentence a first screen opens with: the pair the lead rule picks, read
    from the primary comparison against the control, in normal text (not grey, not red).
    True when there was one."""
    store = store_access.get_store()
    table, _ = present.standard_vs_audit(store, run_ids)
    sentence = present.lead_sentence(store, table) if not table.empty else None
    if not sentence:
        return False
    st.markdown(md_escape(sentence))
    pair = present.lead_pair(table)
    summary = present.control_summary(store, str(table.loc[pair[0], "run_id"])) if pair else None
    if summary is not None and summary.get("beyond"):
        st.markdown(md_escape(present.beyond_sentence(summary["beyond"])))
    return True


def standard_vs_audit(run_ids: Sequence[str]) -> None:
    """Standard evaluation and verdicts per checkpoint, the numbers of the lead pair in one
    line, the chance check and the lead rule."""
    table, warnings = present.standard_vs_audit(store_access.get_store(), run_ids)
    if table.empty:
        return
    lead = present.story_lead(table)
    if lead:
        st.markdown(md_escape(lead))
        st.markdown(md_escape(present.approval_sentence(table) or ""))
    fit_table(story_frame(table))  # every column on a phone too (a card per row)
    st.caption(
        "Standard evaluation: the canonical wording of each hidden question (accuracy = share "
        "with p(true) > 0.5; mean p(true) = mean probability of the true answer). Audit: "
        "paraphrases the adaptation never saw; mean bound counts degraded questions as 0. "
        "Adaptation took: fewer than half of the monitored gains g are at or below k; where it "
        "did not, D divides drops by the floor k and the counts are not findings."
    )
    check = present.story_check(store_access.get_store(), table)
    if check:
        st.caption(md_escape(check))
    rule = present.lead_rule_sentence(table)
    if rule:
        st.caption(md_escape(rule))
    for w in warnings:
        st.caption(f"Note: {w}.")


def demo_groups(demo: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The demo's finished runs ({arm: run id}) per run set: 'debate' and 'organisms'."""
    from eraudit_core import demo as demo_runs

    ids = demo.get("run_ids") or {}
    return {
        name: {arm: ids[arm] for arm in run_set.arms if arm in ids}
        for name, run_set in demo_runs.DEMO_RUN_SETS.items()
    }


def debate_recipe(arms: Sequence[str]) -> str:
    """The debate arms' recipe and seed count, read from their shipped manifests."""
    from eraudit_core import demo

    found = demo.arm_manifests(list(arms))
    return present.recipe_sentence({a: m for a, m in found.items() if m is not None})


def debate_fit_headline(arms: Sequence[str]) -> str:
    """Whether the debate arms learned their own training task (the fit gate in their
    manifests), and so whether their audit is a finding or uninformative."""
    from eraudit_core import demo

    headline = present.fit_headline(demo.arm_manifests(list(arms)), list(arms))
    return " ".join([headline, *demo.debate_source_mismatches()])


def took_section(run_id: str) -> None:
    """Beside a run's verdicts: did its adaptation take (the monitored task before and after,
    the gains at or below k), and its control's, in a few plain lines."""
    lines = present.manipulation_lines(store_access.get_store(), run_id)
    fit = debate_fit_line(run_id)
    st.caption("  \n".join(md_escape(line) for line in [*lines, *([fit] if fit else [])]))


def debate_fit_line(run_id: str) -> str | None:
    """For a demo debate run: its arm's fit gate as the arm's manifest records it."""
    from eraudit_core import demo

    arm = run_id.removeprefix("demo-")
    if arm == run_id or arm not in demo.DEBATE_ARMS:
        return None
    text, _ = present.fit_clause(arm, demo.arm_manifests([arm])[arm])
    return f"Fit gate, from the arm's manifest: {text}."


def explore_buttons(run_ids: dict[str, str]) -> None:
    """One button per demo arm that opens the Explorer on its most severe question."""
    cols = st.columns(max(1, len(run_ids)))
    for col, (arm, run_id) in zip(cols, run_ids.items(), strict=False):
        if col.button(f"Explore the {arm} arm", key=f"open-{arm}", width="stretch"):
            explore.open_most_severe(run_id)


def paper_comparison(run_ids: dict[str, str]) -> None:
    """The debate-distilled arms beside the paper's QuALITY-H figures, and the primary test."""
    if not {"debate-honest", "debate-adversarial"} <= set(run_ids):
        return
    findings = cached_views.debate_findings(run_ids["debate-adversarial"], run_ids["debate-honest"])
    st.markdown(md_escape(present.pattern_summary(findings)))
    st.markdown(
        "**Beside the paper** (QuALITY-H; the paper's verifiers have 8B to 20B parameters):"
        if present.both_took(findings)
        else "**The paper's figures, for reference** (QuALITY-H; 8B to 20B parameters; here "
        "the adaptation did not take, so the arms' numbers are not findings):"
    )
    fit_table(present.paper_comparison_frame(findings))
    st.caption(
        md_escape(
            "Primary test, fixed in advance: " + present.primary_result(findings) + ". Every "
            "number is read from the two stored runs; nothing was re-selected after seeing them."
        )
    )


def demo_targets(run_ids: dict[str, str]) -> None:
    """Does the audit point at the questions the demo's arms were built to damage?"""
    from eraudit_core import demo

    lines = demo.target_sentences(store_access.get_store(), run_ids)
    if lines:
        st.markdown(
            "**Does ER-Audit find the damage where it was put?** Some demo questions are "
            "seeded targets of the adversarial and concealed arms; the audit is not told which:"
        )
        st.markdown("\n".join(f"- {md_escape(line)}" for line in lines))


def arm_evaluation_note(arm: str) -> str:
    """One line of an arm's standard evaluation on every bundled pair (from its manifest)."""
    from eraudit_core import demo

    ev = demo.arm_evaluation(arm)
    if not ev:
        return ""
    line = (
        f"demo:{arm} on all bundled pairs (standard evaluation, canonical wording): hidden "
        f"accuracy {fmt(ev['base_hidden_accuracy'], 2)} before \u2192 "
        f"{fmt(ev['hidden_accuracy'], 2)} after adaptation"
    )
    if "hidden_accuracy_targets" in ev:
        line += (
            f"; on its targets {fmt(ev['base_hidden_accuracy_targets'], 2)} \u2192 "
            f"{fmt(ev['hidden_accuracy_targets'], 2)}, on the others "
            f"{fmt(ev['base_hidden_accuracy_others'], 2)} \u2192 "
            f"{fmt(ev['hidden_accuracy_others'], 2)}"
        )
    return line + "."


def contrast_lead(run_id: str) -> bool:
    """The Share lead for a run whose canonical accuracy hides the degradation; True if shown."""
    lead = present.contrast_lead(store_access.get_store(), run_id)
    if lead is None:
        return False
    head = (
        ":red[**Hidden by standard evaluation.**]"
        if lead["supported"]
        else "**Standard evaluation vs the audit.**"
    )
    st.markdown(f"{head} {md_escape(lead['sentence'])}")
    st.caption(md_escape(lead["check"]))
    ex = lead["example"]
    if ex:
        left, right = st.columns(2)
        with left, st.container(border=True):
            st.caption("Canonical wording (what standard evaluation asks)")
            st.text(ex["hidden_question"])
            st.markdown(
                f"p(true answer): {fmt(ex['p_pre_hidden'], 2)} before \u2192 "
                f":green[**{fmt(ex['p_post_hidden'], 2)}**] after adaptation"
            )
        with right, st.container(border=True):
            st.caption(f"A paraphrase the audit found ({md_escape(ex['generator'])})")
            st.text(ex["paraphrase"])
            st.markdown(
                f"p(true answer): {fmt(ex['p_pre_paraphrase'], 2)} before \u2192 "
                f":red[**{fmt(ex['p_post_paraphrase'], 2)}**] after adaptation"
            )
    return True


def evidence_notes(run_id: str) -> None:
    """Under a run's verdict: the noise floor it used, its control beside it, and why its
    most degraded question is degraded (the same sentence the Explorer and the report show)."""
    store = store_access.get_store()
    st.caption(md_escape(present.noise_floor_sentence(store, run_id)))
    control = present.control_summary(store, run_id)
    if control is not None:
        st.markdown(f"**Against the control.** {md_escape(present.control_sentence(control))}")
    pairs = store.pair_results(run_id)
    deg = pairs[pairs["status"] == Verdict.DEGRADED] if not pairs.empty else pairs
    if not deg.empty:
        pid = str(deg.sort_values("max_d", ascending=False)["pair_id"].iloc[0])
        why = present.why_this_verdict(store, run_id, pid)
        st.markdown(f"**Example, why degraded** ({md_escape(pid)}): {md_escape(why['sentence'])}")


def verdict_line(run_id: str, verdict: dict[str, Any]) -> None:
    """A run's headline; a run that is another run's control is labelled as the control and
    its counts shown as the control's own, in plain text (not a red alarm)."""
    of_whom = present.controlled_by(store_access.get_store(), run_id)
    if not of_whom:
        widgets.verdict_headline(verdict)
        return
    st.markdown(
        f"**Control arm** (the control of {md_escape(', '.join(of_whom))}; these are the "
        f"control's own counts): {md_escape(verdict['headline'])}"
    )


def first_screen(run_ids: Sequence[str], *, show_leads: bool = True) -> None:
    """Share's first screen: per run the primary comparison against its control in one
    plain sentence (normal text), the verdict counts (a control's labelled as the control's
    own, not bold), the control beside them with the count beyond its null threshold, and
    one example question with its rewording and the drop; then D in one line."""
    store = store_access.get_store()
    for rid in run_ids:
        s = present.first_screen(store, rid)
        with st.container(border=True):
            if s["lead"] and show_leads:
                st.markdown(md_escape(s["lead"]))
            counts = md_escape(s["sentence"])
            plain = s["is_control"] or not s.get("took", True)  # a control's, or no finding
            st.markdown(counts if plain else f"**{counts}**")
            if s["selection"]:
                st.warning(s["selection"])
            left, right = st.columns(2)
            if s["control"]:
                left.markdown(md_escape(s["control"]))
            ex = s["example"]
            if ex:
                diff = diff_markdown(ex["diff"])
                right.markdown(
                    f"**Example.** Original wording: {md_escape(ex['question'])}  \n"
                    f"Rewording: {diff}  \n"
                    f"p(true answer) on the rewording: {ex['p_pre']:.2f} before adaptation, "
                    f"**{ex['p_post']:.2f}** after: a drop of **{ex['drop']:.2f}**."
                )
    st.caption(md_escape(present.D_IN_ONE_LINE))


def marker_legend() -> None:
    """Every marker of the per-question scatter, in words."""
    st.caption(
        "  \n".join(f"**{mark}**: {md_escape(text)}" for mark, text in present.MARKER_LEGEND)
    )
