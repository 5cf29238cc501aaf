"""What a reader who does not program sees first: one plain sentence from the reading against
the control (when the run names one: the primary test and the questions worse and better
than the control), the verdict counts (with the paper's count beside a min-drop count), the
control's own counts labelled as the control's with the question-by-question reading, and one
example question with its rewording and the drop. The details (figures, tables, settings)
come after it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from eraudit_core.method import AuditConfig, RunRecord, manipulation_check, word_diff
from eraudit_core.present import _views as views
from eraudit_core.present._belief import control_summary
from eraudit_core.present._manipulation import lead_with_took, not_taken_headline
from eraudit_core.present._null_view import headline_from, null_counts_sentence, null_headline
from eraudit_core.present._story import concealed_example
from eraudit_core.present.report._html import Markup, render
from eraudit_core.runs import selection_note
from eraudit_core.store import Store
from eraudit_core.types import Verdict

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
    deg = pairs[(pairs["status"] == Verdict.DEGRADED) & pairs["worst_text"].notna()]
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


def paper_count(pairs: pd.DataFrame, epsilon: float) -> int:
    """Questions the paper's rule (no minimum drop) calls degraded, from a min-drop run's
    stored pairs: a min-drop audit scores every paraphrase the paper's audit would (it only
    skips counterexamples whose drop is small), so the paper degrades exactly the questions
    whose largest scored D exceeds epsilon."""
    if pairs.empty or "max_d" not in pairs:
        return 0
    return int((pairs["max_d"].astype(float) > float(epsilon)).sum())


def min_drop_note(pairs: pd.DataFrame, config: AuditConfig) -> str | None:
    """With --min-drop, the paper's count beside the min-drop count (never only the
    latter); None for the paper's rule."""
    min_drop = config.min_drop
    if min_drop <= 0:
        return None
    n = len(pairs)
    n_deg = int((pairs["status"] == Verdict.DEGRADED).sum()) if n else 0
    paper = paper_count(pairs, config.epsilon)
    return (
        f"Paper's rule: {paper} of {n} degraded; with the assumed minimum drop {min_drop:g}: "
        f"{n_deg} of {n}."
    )


def with_paper_count(headline: str, pairs: pd.DataFrame, config: AuditConfig) -> str:
    """A run's headline with `min_drop_note` appended when the run assumed a minimum drop."""
    note = min_drop_note(pairs, config)
    return f"{headline} {note}" if note else headline


def control_run_of(provenance: Any) -> str | None:
    """The control a run names in its provenance (a `runs()` cell: JSON text or a dict), or
    None when it names none or the cell cannot be read."""
    try:
        prov = json.loads(provenance) if isinstance(provenance, str) else provenance
    except ValueError:
        return None
    control = prov.get("control_run") if isinstance(prov, dict) else None
    return str(control) if control else None


def controlled_by(store: Store, run_id: str) -> list[str]:
    """The labels of stored runs that name `run_id` as their control."""
    runs = store.runs()
    return [
        str(rec.get("label") or rec["run_id"])
        for rec in (runs.to_dict("records") if not runs.empty else [])
        if control_run_of(rec.get("provenance")) == run_id
    ]


def lead_against_control(store: Store, run_id: str) -> str | None:
    """The one plain sentence a run leads with when it names a control: the reading against
    it (`null_headline`: the primary test and the worse/better counts), or why there is none,
    prefixed by what did not take when either run's adaptation did not (`lead_with_took`);
    None when it names no control in this store."""
    sentence = null_headline(store, run_id)
    if sentence is None:
        return None
    summary = control_summary(store, run_id)
    if summary is None:
        return sentence
    return lead_with_took(store, run_id, summary["control_run"], sentence)


def first_screen(store: Store, run_id: str) -> dict[str, Any]:
    """{"lead", "sentence", "control", "example", "selection", "is_control", "took"} for one
    run: the reading against its control in one plain sentence (`null_headline`; None without a
    control), the verdict counts in one sentence (the paper's count beside a min-drop
    count), the control's own counts with the question-by-question reading, the example question (or None) and the selection warning of a run re-derived
    after exclusions (or None). A run that is another run's control says so: its counts
    are the control's own, not an alarm; a run whose adaptation did not take
    (`audit.manipulation_check`) says that before its counts, which are then no finding."""
    run = RunRecord.read(store, run_id)
    pairs = store.pair_results(run_id)
    ov = views.run_overview(pairs)
    name = run.name
    of_whom = controlled_by(store, run_id)
    own = f"{name} (the control of {', '.join(of_whom)}; these are the control's own counts)"
    check = manipulation_check(pairs, run.config.k)
    not_taken = f"{not_taken_headline(check)}: " if ov["n_pairs"] and not check.took else ""
    sentence = (
        f"{own if of_whom else name}: {not_taken}of {ov['n_pairs']} hidden questions, the audit "
        f"found {_counts(ov)}."
        if ov["n_pairs"]
        else f"{name}: no question of this run has finished yet."
    )
    note = min_drop_note(pairs, run.config) if ov["n_pairs"] else None
    if note:
        sentence += " " + note
    summary = control_summary(store, run_id)
    if summary is None:
        control = (
            ""
            if of_whom
            else "No control run: nobody knows how many questions an adaptation that should "
            "not hurt would mark degraded."
        )
    else:
        control = f"The control's own counts ({summary['label']}): {_counts(summary['control'])}."
        if not summary["comparable"]:
            fields = ", ".join(d["field"] for d in summary["differences"])
            control += f" Its verdicts differ from this run's in settings ({fields})."
        reading = summary.get("null")
        if reading and not reading["mismatches"]:
            control += " " + null_counts_sentence(reading)
    return {
        "lead": headline_from(summary["null"], name) if summary and summary["null"] else None,
        "sentence": sentence,
        "control": control,
        "example": _example(store, run_id),
        "selection": selection_note(run.provenance),
        "is_control": bool(of_whom),
        "took": check.took,
    }


def word_diff_html(diff: list[tuple[str, str]]) -> Markup:
    """A `word_diff` as escaped HTML: removed words in <del>, added ones in <ins>."""
    return render("word_diff.html", diff=diff).rstrip("\n")


def first_screen_html(store: Store, run_ids: Sequence[str]) -> Markup:
    """The report's first screen: per run, the sentence with the control beside it and the
    example question with its rewording and the drop; then D in one line."""
    screens = [first_screen(store, rid) for rid in run_ids]
    return render("first_screen.html", screens=screens, d_in_one_line=D_IN_ONE_LINE)


def legend_html() -> Markup:
    """Every marker of the per-question scatter, in words."""
    return render("legend.html", legend=MARKER_LEGEND)
