"""What a page or the report shows so a verdict can be believed.

* `why_this_verdict`: one question's evidence (`audit.pair_evidence`), its sentence, the worst
  rewording beside the original wording as a word diff, and the exact prompt the adapted model
  read (or why there is none: a score table has no prompt);
* `pair_evidence_frame`: the evidence of every question of a run, one row each (Results
  scatter colour and filters, exports);
* `control_summary`: the control run a run names, its verdict counts beside the run's,
  whether the two are comparable, and the run read against it question by question
  (`eraudit_core.null`, docs/null-reading.md). `beyond_control` (the count beyond a control's
  calibrated threshold of D) stays for callers but no headline uses it: that threshold holds
  only on average and only for an arm exchangeable with the control.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.method import (
    TABLE_PROMPT_NOTE,
    RunRecord,
    pair_evidence,
    run_noise_floor_value,
    why_sentence,
    word_diff,
)
from eraudit_core.null import DEFAULT_NULL_LEVEL, null_reading, null_threshold, question_maxima
from eraudit_core.present import _views as views
from eraudit_core.present._compare import run_differences
from eraudit_core.present._null_view import null_counts_sentence
from eraudit_core.runs import rerun_note
from eraudit_core.store import Store

EVIDENCE_COLUMNS = [
    "pair_id",
    "status",
    "gain",
    "den",
    "amplified",
    "worst_d",
    "worst_drop",
    "within_noise",
    "worst_text",
]


def why_this_verdict(store: Store, run_id: str, pair_id: str) -> dict[str, Any]:
    """{"sentence", "evidence", "diff", "original", "rewording", "prompt", "prompt_note",
    "rerun"} for one question of a run."""
    run = RunRecord.read(store, run_id)
    pairs = store.pair_results(run_id)
    row = pairs[pairs["pair_id"] == pair_id]
    if row.empty:
        raise KeyError(f"run {run_id} has no finished question {pair_id!r}")
    rec = row.iloc[0].to_dict()
    ev = pair_evidence(rec, run)
    original = str(rec.get("hidden_question") or "")
    prompt_note = None
    if ev.prompt is None:
        from_table = str(run.source or "").startswith("table:") or str(
            run.post_fingerprint or ""
        ).startswith("table:")
        prompt_note = (
            TABLE_PROMPT_NOTE
            if from_table
            else "prompt not stored (run made before prompts were stored)"
        )
    return {
        "sentence": why_sentence(ev),
        "evidence": ev.to_dict(),
        "original": original,
        "rewording": ev.worst_text,
        "diff": word_diff(original, ev.worst_text) if ev.worst_text else [],
        "prompt": ev.prompt,
        "prompt_note": prompt_note,
        "rerun": rerun_note(run.provenance),
    }


def pair_evidence_frame(store: Store, run_id: str) -> pd.DataFrame:
    """The evidence of every finished question of a run (columns EVIDENCE_COLUMNS)."""
    run = RunRecord.read(store, run_id)
    pairs = store.pair_results(run_id)
    rows = [pair_evidence(r, run).to_dict() for r in pairs.to_dict("records")]
    if not rows:
        return pd.DataFrame(columns=EVIDENCE_COLUMNS)
    return pd.DataFrame(rows)[EVIDENCE_COLUMNS]


def noise_floor_of(run: dict[str, Any]) -> float | None:
    """The scorer's numerical precision a stored run used (`store.run(...)`), or None. Named
    after the key the store and bundles hold it under, `noise_floor`: a precision, not noise."""
    return run_noise_floor_value(run.get("provenance") or {})


def noise_floor_sentence(store: Store, run_id: str) -> str:
    """Which numerical precision of the scorer a run used and where it came from. It is the
    fast-vs-naive scoring gap (floating-point error), not noise: the noise an auditor can
    use is a control run (the reading against it, docs/null-reading.md)."""
    prov = store.run(run_id)["provenance"]
    floor = run_noise_floor_value(prov)
    if floor is None:
        return (
            "No numerical precision of the scorer: none was measured or declared for this run "
            "(score tables can declare one with --noise-floor)."
        )
    source = (prov.get("noise_floor") or {}).get("source", "")
    return (
        f"Numerical precision of the scorer {floor:.3g} ({source}): a counterexample whose "
        "drop is within it is marked 'within numerical precision'; the verdict stays the "
        "paper's. This is floating-point error, not noise: what an adaptation that should "
        "not hurt does is measured by reading the run against a control run."
    )


def control_summary(store: Store, run_id: str) -> dict[str, Any] | None:
    """The run's control beside it: {"control_run", "label", "run", "control", "comparable",
    "differences", "null"}, the two `run_overview`s and the run's `null_reading` against the
    control; None when the run names no control (or the control is not in this store)."""
    control = store.run(run_id)["provenance"].get("control_run")
    if not control:
        return None
    try:
        c = store.run(str(control))
    except InputError:  # an imported run whose control stayed behind
        return None
    differences = run_differences(store, run_id, str(control))
    return {
        "control_run": str(control),
        "label": str(c.get("label") or control),
        "run": views.run_overview(store.pair_results(run_id)),
        "control": views.run_overview(store.pair_results(str(control))),
        "comparable": not differences,
        "differences": differences,
        "beyond": None,
        "null": null_reading(store, run_id, str(control)),
    }


def beyond_control(
    store: Store, run_id: str, control: str, level: float | None = None
) -> dict[str, Any] | None:
    """How many of the run's questions are degraded beyond the control's null threshold:
    their largest D (over the paraphrases an audit at the run's budgets scores) exceeds the
    `level` quantile of the control's per-question maxima (`calibrate_null`'s epsilon).
    `level` defaults to the run's null calibration's level when its epsilon came from this
    control, else 0.95. {"level", "threshold", "n_beyond", "n", "n_control_beyond",
    "n_control", "partial"}; None when either run has no scored rewording. `partial`: the run
    stopped before some paraphrases (a model run), so n_beyond is a lower count."""
    from eraudit_core.errors import InputError

    record = store.run(run_id)["provenance"].get("epsilon_from") or {}
    if level is None:
        own = record.get("mode") == "null" and record.get("calibration_run") == control
        level = float(record["level"]) if own and record.get("level") else DEFAULT_NULL_LEVEL
    try:
        cmax, _, _ = question_maxima(store, control)
        rmax, unscored, _ = question_maxima(store, run_id)
        threshold = null_threshold(cmax.to_numpy(), level)
    except InputError:
        return None
    return {
        "level": level,
        "threshold": threshold,
        "n_beyond": int((rmax > threshold).sum()),
        "n": len(store.pair_results(run_id)),
        "n_control_beyond": int((cmax > threshold).sum()),
        "n_control": len(store.pair_results(control)),
        "partial": unscored > 0,
    }


def beyond_sentence(beyond: dict[str, Any]) -> str:
    """'Beyond the control's null threshold (D > 0.302, its 0.95 quantile): 12 of 40
    questions of this run; the control's own: 2 of 40.'"""
    at_least = "at least " if beyond["partial"] else ""
    return (
        f"Beyond the control's null threshold (largest D above {beyond['threshold']:.3g}, the "
        f"{beyond['level']:g} quantile of the control's per-question largest D): "
        f"{at_least}{beyond['n_beyond']} of {beyond['n']} questions of this run; the "
        f"control's own: {beyond['n_control_beyond']} of {beyond['n_control']} (about "
        f"{1 - beyond['level']:.0%} by construction)."
    )


def control_sentence(summary: dict[str, Any]) -> str:
    """'Control (demo: honest arm): 15 degraded, 13 certified, ... of 40; this run: ...'."""

    def counts(ov: dict[str, Any]) -> str:
        return (
            f"{ov['n_degraded']} degraded, {ov['n_certified']} certified, {ov['n_passed']} "
            f"passed, {ov['n_inconclusive']} inconclusive of {ov['n_pairs']}"
        )

    text = (
        f"This run: {counts(summary['run'])}. The control's own counts ({summary['label']}): "
        + counts(summary["control"])
    )
    if not summary["comparable"]:
        fields = ", ".join(d["field"] for d in summary["differences"])
        text += f". Not comparable with this run (differs in {fields})"
    text += "."
    if summary.get("beyond"):
        text += " " + beyond_sentence(summary["beyond"])
    reading = summary.get("null")
    if reading and not reading["mismatches"]:
        text += " " + null_counts_sentence(reading)
    return text
