"""Reading one question of one run for the Question explorer (store reads, no math)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from eraudit_core import present
from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig, RunRecord
from eraudit_core.types import Verdict
from ui import run_picking, store_access

PAIR_KEY = "explorer_pair"


def control_reading(run_id: str) -> dict[str, Any] | None:
    """The run read against the control it names (`present.control_reading`), or None when it
    names none in this store: what the Explorer's 'Against the control' filter selects by.
    Read again only when either run's progress changed (a reading costs about 0.5 s on the
    demo's 222 questions, and the Explorer reruns on every filter change)."""
    store = store_access.get_store()
    control = present.control_run_of(store.run(run_id).get("provenance"))
    if not control or not store.has_run(control):
        return None
    return _reading(store_access.db_path(), run_id, _progress(run_id), control, _progress(control))


def _progress(run_id: str) -> tuple[str, int, str]:
    rec = store_access.get_store().run_progress(run_id)
    return (str(rec["status"]), int(rec["pairs_done"]), str(rec["finished_at"]))


@st.cache_data(show_spinner=False, max_entries=16)
def _reading(
    path: str, run_id: str, run_key: tuple, control: str, control_key: tuple
) -> dict[str, Any] | None:
    return present.control_reading(store_access.get_store(), run_id)


def question_label(row: Mapping[str, Any]) -> str:
    """'#12 [degraded; beyond control] D 14.2, drop 0.08 - Which ...': what the picker lists
    per question; the reading against the control follows the verdict where the run has one,
    and an amplified question (g <= k) says so after them."""
    q = " ".join(str(row["hidden_question"]).split())
    d, drop = row.get("max_d"), row.get("worst_drop")
    numbers = ", ".join(
        f"{name} {value:.3g}"
        for name, value in (("D", d), ("drop", drop))
        if value is not None and value == value
    )
    amplified = " amplified (g <= k)," if row.get("amplified") in (True,) else ""
    null = row.get("null_verdict")
    verdict = f"{row['status']}; {null}" if isinstance(null, str) else row["status"]
    return f"#{row['pair_index']} [{verdict}]{amplified} {numbers} - {q[:90]}"


def diff_markdown(diff: list[tuple[str, str]]) -> str:
    """A `word_diff` as Streamlit markdown: removed words struck out in red, added in green."""
    from ui.widgets import md_escape

    return " ".join(
        md_escape(t)
        if op == "="
        else (f":red[~~{md_escape(t)}~~]" if op == "-" else f":green[**{md_escape(t)}**]")
        for op, t in diff
    )


def apply_pair_link(pair_ids: list[str]) -> str | None:
    """A deep link (?pair=...) selects that question once, before the picker is drawn; returns
    its pair id on that draw (None on later draws or when the run has no such question)."""
    pid = st.query_params.get("pair")
    if pid and st.session_state.get("_applied_pair_param") != pid:
        st.session_state["_applied_pair_param"] = pid
        if pid in pair_ids:
            st.session_state[PAIR_KEY] = pid
            return str(pid)
    return None


def put_pair_in_url(pair_id: str) -> None:
    """The shown question in the URL (?pair=...), marked as applied: the page's own address is
    not a link to apply on the next draw."""
    st.query_params["pair"] = pair_id
    st.session_state["_applied_pair_param"] = pair_id


def pair_detail(run_id: str, pair_id: str) -> dict[str, Any]:
    """The stored verdict, options and every scored paraphrase of one question in one run."""
    store = store_access.get_store()
    run = store.run(run_id)
    pairs = store.pair_results(run_id)
    row = pairs.loc[pairs["pair_id"] == pair_id].iloc[0].to_dict()
    options = None
    if run.get("benchmark_id"):
        try:
            options = next(
                (p for p in store.pairs(run["benchmark_id"]) if p.pair_id == pair_id), None
            )
        except InputError:  # benchmark removed: the run's own record still has the questions
            options = None
    steps = store.steps(run_id, pair_id)
    return {
        "run": RunRecord.from_stored(run),
        "row": row,
        "pair": options,
        "steps": steps,
        "trajectory": present.bound_trajectory_frame(steps),
    }


def why_this_verdict(run_id: str, pair_id: str) -> None:
    """The Explorer's first section: the verdict in one sentence, the worst rewording beside
    the original wording, and the exact prompt the adapted model read."""
    from ui.widgets import md_escape

    why = present.why_this_verdict(store_access.get_store(), run_id, pair_id)
    ev = why["evidence"]
    st.subheader("Why this verdict")
    st.markdown(md_escape(why["sentence"]))
    flags = []
    if ev["amplified"]:
        flags.append(f":orange[amplified: g <= k, every drop counts {1 / ev['k']:.0f}x]")
    if ev["within_noise"]:
        flags.append(f":orange[within numerical precision ({ev['noise_floor']:.3g})]")
    if flags:
        st.markdown(" \u00b7 ".join(flags))
    if why["diff"]:
        st.caption("Original wording vs the worst rewording (removed struck out, added in bold)")
        st.markdown(diff_markdown(why["diff"]))
    if why["prompt"]:
        with st.expander("The exact prompt the adapted model read"):
            st.caption("true answer as option A")
            st.text(why["prompt"][0])
            st.caption("true answer as option B")
            st.text(why["prompt"][1])
    elif why["prompt_note"]:
        st.caption(why["prompt_note"])
    if why["rerun"]:
        st.warning(why["rerun"])


def label_mass_note(run_id: str) -> None:
    """The run's label mass per checkpoint (median, min over its scored prompts), one line:
    little mass means the labels were read where the model does not answer (docs/design.md §3)."""
    from eraudit_core.runs import run_label_mass

    parts = []
    for side, mass in run_label_mass(store_access.get_store(), run_id).items():
        if mass["n"]:
            parts.append(
                f"{side} {mass['median']:.3f} (min {mass['min']:.3f}, {mass['n']} prompts)"
            )
    if parts:
        st.caption(
            "Label mass of this run, the model's probability on the two labels where they are "
            "read (median): " + "; ".join(parts)
        )


def bound_notes(row: Mapping[str, Any], config: AuditConfig) -> None:
    """What the bound is about, per generator, and the failure-tolerant bound where it holds."""
    gens = row.get("generators") or []
    how = (
        f"drawn uniformly at random without replacement from its pool (seed {config.draw_seed})"
        if config.draw_seed is not None
        else "taken in the score table's order"
    )
    if gens:
        about = (
            "The bound is about a paraphrase drawn at random from each test generator's pool"
            if config.draw_seed is not None
            else "The bound is about the next paraphrase in the table's order from each test "
            "generator's pool (it speaks for the pool only as far as that order is as good as "
            "random)"
        )
        st.caption(f"{about}; the tested paraphrases were {how}.")
        st.dataframe(present.generator_rows(gens), hide_index=True)
    tolerant = row.get("bound_tolerant")
    if tolerant is not None and tolerant == tolerant:
        st.caption(
            "Failure-tolerant bound over every test generator (beyond the paper, after the "
            f"total-variation relaxation): {tolerant:.3f}"
        )
    elif gens:
        st.caption(
            "No failure-tolerant bound for the question as a whole: some test generator was not "
            "tested (it would cover only the others). Per-generator values are in the table."
        )


def no_stage2_reason(row: Mapping[str, Any]) -> str:
    """Why a finished question has no bound trajectory, in words."""
    if row.get("status") == Verdict.DEGRADED and str(row.get("stage")) in ("1", "1.0"):
        return (
            "The sequential test did not run: the counterexample search (stage 1) already found "
            "a counterexample, so the bound is 0."
        )
    return "No paraphrase was tested in the sequential test (stage 2) for this question."


def most_severe_pair(run_id: str) -> str | None:
    """The question the Explorer lists first under its default sort ("most severe first"):
    what an "Explore" button opens. None when no question of the run has finished."""
    questions = present.explorer_questions(store_access.get_store(), run_id)
    if questions.empty:
        return None
    return str(present.sort_questions(questions, present.SORTS[0])["pair_id"].iloc[0])


def open_question(run_id: str, pair_id: str, compare: str | None = None) -> None:
    """Go to the Explorer on one question of `run_id`, beside `compare` when given."""
    run_picking.select_run(run_id)
    if compare:
        run_picking.set_compare_run(compare)
    st.session_state.pop("_applied_pair_param", None)  # the link's pair is applied once
    params = {"run": run_id, "pair": pair_id, **({"compare": compare} if compare else {})}
    st.switch_page("pages/explorer.py", query_params=params)


def open_most_severe(run_id: str) -> None:
    """An arm's "Explore" button: the Explorer on its most severe question (Results when no
    question has finished, where the run's state is explained)."""
    pair_id = most_severe_pair(run_id)
    if pair_id is None:
        run_picking.select_run(run_id)
        st.switch_page("pages/results.py", query_params={"run": run_id})
    else:
        open_question(run_id, pair_id)


def explorer_link(run_id: str, pair_id: str, compare: str | None = None) -> str:
    """The Explorer's address for one question (relative to any page of the app), for links
    drawn in HTML such as the rows of a comparison."""
    from urllib.parse import urlencode

    params = {"run": run_id, "pair": pair_id, **({"compare": compare} if compare else {})}
    return "explorer?" + urlencode(params)


def side_by_side(run_id: str, other: str, pair_id: str) -> None:
    """The same question in the compared run, beside the selected run: verdict, largest D,
    bound and worst rewording of each, so a difference row of a comparison reads here."""
    from ui.widgets import fmt, md_escape, status_badge

    store = store_access.get_store()
    names = present.run_names(store, [run_id, other])
    st.subheader("This question in both runs")
    cols = st.columns(2)
    for col, rid in zip(cols, (run_id, other), strict=True):
        pairs = store.pair_results(rid)
        row = pairs.loc[pairs["pair_id"] == pair_id]
        with col:
            st.markdown(f"**{md_escape(names[rid])}**")
            st.caption(rid)
            if row.empty:
                st.info("This run has no verdict for this question.")
                continue
            r = row.iloc[0]
            st.markdown(f"Verdict: {status_badge(str(r['status']))}")
            st.text(
                f"largest D {fmt(r['max_d'])}   bound {fmt(r['bound'])}\n"
                f"P(true) hidden {fmt(r['p_pre_hidden'])} -> {fmt(r['p_post_hidden'])}"
            )
            if r.get("worst_text"):
                st.caption("Worst rewording")
                st.text(str(r["worst_text"]))
    if pair_id in set(store.pair_results(other)["pair_id"]) and st.button(
        "Swap: explore the compared run on this question", key="explorer-swap"
    ):
        open_question(other, pair_id, compare=run_id)
