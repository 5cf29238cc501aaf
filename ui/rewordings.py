"""The Explorer's rewordings of one question: a table that wraps instead of scrolling (word
diff against the original wording, the prompt on demand, labels), the label form, and the
exclusion of labelled rewordings into a new, linked run."""

from __future__ import annotations

import getpass
from typing import Any

import streamlit as st

from eraudit_core import present
from eraudit_core.errors import InputError, StoreError
from eraudit_core.runs import derive_without, selection_note
from eraudit_core.store import NOT_MEANING_PRESERVING, PARAPHRASE_LABELS
from ui import run_picking, store_access

AUTHOR_KEY = "label_author"

COLUMNS = (  # (header, share of the width in %)
    ("step", 9),
    ("rewording vs the original wording", 41),
    ("p_pre", 6),
    ("p_post", 6),
    ("drop", 6),
    ("D", 6),
    ("verdict of this step", 9),
    ("bound after t", 6),
    ("labels", 11),
)


def _num(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def table_html(rows: list[dict[str, Any]], epsilon: float) -> str:
    """The rewordings as an escaped HTML fragment (template rewordings_table.html)."""
    shown = []
    for r in rows:
        marks = ["counterexample (D > epsilon)" if r["counterexample"] else "not worse"]
        if r["within_noise"]:
            marks.append("within numerical precision")
        stage = "search" if r["stage"] == 1 else "test"
        shown.append(
            {
                "counterexample": r["counterexample"],
                "step": stage if r["generator"] == stage else f"{stage}: {r['generator']}",
                "t": r["t"],
                "diff": r["diff"],
                "prompt": r["prompt"],
                "p_pre": _num(r["p_pre"]),
                "p_post": _num(r["p_post"]),
                "drop": _num(r["drop"]),
                "d": f"{r['d']:.3g}",
                "marks": "; ".join(marks),
                "bound": _num(r["bound"]),
                "labels": r["labels"],
            }
        )
    return present.html_fragment("rewordings_table.html", columns=COLUMNS, rows=shown)


def show(run_id: str, pair_id: str, original: str, epsilon: float) -> list[dict[str, Any]]:
    """Draw the table of every scored rewording; returns its rows."""
    rows = present.rewording_rows(store_access.get_store(), run_id, pair_id, original)
    st.subheader(f"Every paraphrase scored ({len(rows)})")
    st.caption(
        f"Removed words are struck out in red, added words in green. D > epsilon ({epsilon:g}) "
        "marks a counterexample; 'exact prompt' opens the text the adapted model read."
    )
    st.markdown(table_html(rows, epsilon), unsafe_allow_html=True)
    return rows


def label_form(run_id: str, pair_id: str, rows: list[dict[str, Any]]) -> None:
    """Label one rewording: 'not meaning-preserving' or a free note, with who and when."""
    if not rows:
        return
    options = {
        (r["stage"], r["generator"], r["t"]): (
            f"{'search' if r['stage'] == 1 else 'test'} {r['generator']} t={r['t']}: "
            + " ".join(r["text"].split())[:90]
        )
        for r in rows
    }
    with st.form(f"label-{run_id}-{pair_id}", clear_on_submit=True):
        st.markdown("**Label a rewording**")
        key = st.selectbox("Rewording", list(options), format_func=options.get)
        kind = st.radio("Label", PARAPHRASE_LABELS, horizontal=True)
        note = st.text_input("Note", placeholder="why (required for a note)")
        author = st.text_input(
            "Your name", value=st.session_state.get(AUTHOR_KEY) or getpass.getuser()
        )
        if st.form_submit_button("Save the label"):
            try:
                store_access.get_store().add_paraphrase_label(
                    run_id,
                    pair_id,
                    stage=key[0],
                    generator=key[1],
                    t=key[2],
                    label=kind,
                    note=note,
                    author=author,
                )
            except (InputError, StoreError) as exc:
                st.error(f"The label was not saved: {exc}")
            else:
                st.session_state[AUTHOR_KEY] = author
                st.rerun()


def exclusion(run_id: str) -> None:
    """Offer to re-derive the run without the rewordings labelled not meaning-preserving, as
    a new run linked to this one (this run is never changed)."""
    store = store_access.get_store()
    invalid = store.labelled_invalid(run_id)
    if not invalid:
        return
    n = len(invalid)
    st.markdown(
        f"**{n} rewording{'s' if n != 1 else ''} of this run labelled "
        f"{NOT_MEANING_PRESERVING}.** Excluding them writes a new run from the stored scores; "
        "this run stays as it is. The new run says the rewordings were excluded after their "
        "scores were seen, and certifies nothing (that choice is a selection)."
    )
    if st.button(f"Re-derive without the {n} labelled rewording(s) as a new run"):
        try:
            new = derive_without(
                store,
                run_id,
                invalid,
                author=st.session_state.get(AUTHOR_KEY) or getpass.getuser(),
            )
        except (InputError, StoreError) as exc:
            st.error(f"No new run was written: {exc}")
            return
        run_picking.select_run(new)
        st.query_params["run"] = new  # the pages' deep link follows the new run too
        st.query_params.pop("pair", None)
        st.session_state["_derived_notice"] = new
        st.rerun()


def selection_banner(run: dict[str, Any]) -> None:
    """The derived run's warning (nothing for an ordinary run)."""
    note = selection_note(run["provenance"])
    if note:
        st.warning(note)
