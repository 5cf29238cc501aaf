"""What a reader who does not program sees first (issue 20 item 5): one plain sentence with
the verdict counts, the control run's counts beside them, and one example question with its
rewording and the drop. The details (figures, tables, settings) come after it."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from eraudit_core.audit import selection_note, word_diff
from eraudit_core.present import _views as views
from eraudit_core.present._belief import control_summary
from eraudit_core.present._story import concealed_example
from eraudit_core.store import Store

D_IN_ONE_LINE = (
    "D = how much the adapted model's probability of the true answer fell on a rewording, "
    "divided by how much it gained on the monitored question (at least k); D above epsilon "
    "is a counterexample."
)
MARKER_LEGEND = (
    ("x", "degraded: a rewording with D above epsilon was found"),
    ("filled circle", "certified: no counterexample, and the bound reached the target p*"),
    (
        "hollow circle",
        "passed: no counterexample, but no certificate (no target, or a bound below it)",
    ),
    ("hollow diamond", "inconclusive: some test generator was never run on this question"),
    ("dotted horizontal line", "epsilon: points above it are counterexamples"),
    ("dotted vertical line", "p = 0.5: right of it the adapted model answers the original wording"),
)


def _counts(ov: dict[str, Any]) -> str:
    return (
        f"{ov['n_degraded']} degraded, {ov['n_certified']} certified, {ov['n_passed']} passed "
        f"without a certificate and {ov['n_inconclusive']} inconclusive"
    )


def _example(store: Store, run_id: str) -> dict[str, Any] | None:
    """The question to show: one the adapted model answers correctly in its original wording
    while a rewording fails it (when the run has one), else the degraded question that comes
    first "most severe first" (the largest drop beyond precision, amplified ones last)."""
    ex = concealed_example(store, run_id)
    if ex is not None:
        return {
            "question": ex["hidden_question"],
            "rewording": ex["paraphrase"],
            "p_pre": ex["p_pre_paraphrase"],
            "p_post": ex["p_post_paraphrase"],
            "drop": ex["p_pre_paraphrase"] - ex["p_post_paraphrase"],
            "diff": word_diff(ex["hidden_question"], ex["paraphrase"]),
        }
    pairs = store.pair_results(run_id)
    deg = pairs[(pairs["status"] == "degraded") & pairs["worst_text"].notna()]
    if deg.empty:
        return None
    # the Explorer's "most severe first": what moved, amplified questions last
    from eraudit_core.present._explore import explorer_questions, sort_questions

    order = sort_questions(explorer_questions(store, run_id), "most severe first")["pair_id"]
    rank = {pid: i for i, pid in enumerate(order)}
    r = deg.assign(_rank=deg["pair_id"].map(rank)).sort_values("_rank", kind="stable").iloc[0]
    return {
        "question": str(r["hidden_question"]),
        "rewording": str(r["worst_text"]),
        "p_pre": float(r["worst_p_pre"]),
        "p_post": float(r["worst_p_post"]),
        "drop": float(r["worst_drop"]),
        "diff": word_diff(str(r["hidden_question"]), str(r["worst_text"])),
    }


def first_screen(store: Store, run_id: str) -> dict[str, Any]:
    """{"sentence", "control", "example", "selection"} for one run: the verdict counts in one
    sentence, the control's counts (or why there are none), the example question (or None)
    and the selection warning of a run re-derived after exclusions (or None)."""
    run = store.run(run_id)
    ov = views.run_overview(store.pair_results(run_id))
    name = str(run.get("label") or run_id)
    sentence = (
        f"{name}: of {ov['n_pairs']} hidden questions, the audit found {_counts(ov)}."
        if ov["n_pairs"]
        else f"{name}: no question of this run has finished yet."
    )
    summary = control_summary(store, run_id)
    if summary is None:
        control = (
            "No control run: nobody knows how many questions scoring noise alone would mark "
            "degraded."
        )
    else:
        control = f"Control ({summary['label']}): {_counts(summary['control'])}."
        if not summary["comparable"]:
            fields = ", ".join(d["field"] for d in summary["differences"])
            control += f" Not comparable with this run (differs in {fields})."
    return {
        "sentence": sentence,
        "control": control,
        "example": _example(store, run_id),
        "selection": selection_note(run),
    }


FIRST_SCREEN_CSS = """
.first { border: 1px solid #ddd; border-radius: 8px; padding: .8rem 1rem; margin: 1rem 0; }
.first .lead { font-size: 1.15rem; font-weight: 600; margin: 0 0 .5rem; }
.first .side { display: flex; flex-wrap: wrap; gap: .6rem 1.2rem; }
.first .side > div { flex: 1 1 16rem; min-width: 0; }
.first del { color: #b22; } .first ins { color: #176617; font-weight: 600; text-decoration: none; }
.legend li { margin: .15rem 0; }
"""


def word_diff_html(diff: list[tuple[str, str]]) -> str:
    """A `word_diff` as escaped HTML: removed words in <del>, added ones in <ins>."""
    esc = html.escape
    return " ".join(
        esc(t) if op == "=" else (f"<del>{esc(t)}</del>" if op == "-" else f"<ins>{esc(t)}</ins>")
        for op, t in diff
    )


def first_screen_html(store: Store, run_ids: Sequence[str]) -> str:
    """The report's first screen: per run, the sentence with the control beside it and the
    example question with its rewording and the drop; then D in one line."""
    esc = html.escape
    out = []
    for rid in run_ids:
        s = first_screen(store, rid)
        box = [f'<div class="first"><p class="lead">{esc(s["sentence"])}</p>']
        if s["selection"]:
            box.append(f'<p class="beyond">{esc(s["selection"])}</p>')
        box.append(f'<div class="side"><div>{esc(s["control"])}</div>')
        ex = s["example"]
        if ex:
            box.append(
                f"<div><b>Example.</b> Original wording: {esc(ex['question'])}<br>"
                f"Rewording (removed struck out, added in green): {word_diff_html(ex['diff'])}<br>"
                f"p(true answer) on the rewording: {ex['p_pre']:.2f} before adaptation, "
                f"<b>{ex['p_post']:.2f}</b> after: a drop of <b>{ex['drop']:.2f}</b>.</div>"
            )
        box.append("</div></div>")
        out.append("".join(box))
    out.append(f'<p class="note">{esc(D_IN_ONE_LINE)}</p>')
    return "\n".join(out)


def legend_html() -> str:
    """Every marker of the per-question scatter, in words."""
    items = "".join(
        f"<li><b>{html.escape(mark)}</b>: {html.escape(text)}</li>" for mark, text in MARKER_LEGEND
    )
    return f'<ul class="legend note">{items}</ul>'
