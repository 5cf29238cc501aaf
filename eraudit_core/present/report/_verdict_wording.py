"""A run's verdict in plain words, for readers who are not programmers (`run_verdict`).

Only `certified` questions (bound after the total-variation relaxation >= a target p*) are
called certified; a bound without a target, or below it, is reported as what it is. The
confidence is named as a confidence, and the guarantee is stated per question, before results
are known. The report and the dashboard both read these sentences.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from eraudit_core.method import AuditConfig, RunRecord, manipulation_check, run_noise_floor_value
from eraudit_core.null import epsilon_from_sentence
from eraudit_core.present import _views as views
from eraudit_core.present._manipulation import not_taken_headline
from eraudit_core.present.report._first_screen import with_paper_count
from eraudit_core.runs import rerun_note, selection_note
from eraudit_core.types import RunStatus, Verdict


def _fmt(x: Any, digits: int = 3) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if math.isnan(v) else f"{v:.{digits}f}"


def _pct(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _pool_sentence(pairs: pd.DataFrame, config: AuditConfig) -> str | None:
    """Which population a bound speaks about: a draw from each test generator's pool."""
    sizes = [
        int(g["available"])
        for gens in pairs.get("generators", pd.Series(dtype=object))
        for g in (gens or [])
    ]
    if not sizes:
        return None
    pool = f"{min(sizes)}" if min(sizes) == max(sizes) else f"{min(sizes)} to {max(sizes)}"
    if config.draw_seed is None:
        return (
            f"The tested paraphrases were taken in the table's order from each test "
            f"generator's pool of M = {pool} paraphrases per question (a score table is not "
            "shuffled by the studio): each bound is about the next paraphrase in that order, "
            "and speaks for the pool only as far as the table's order is as good as random. "
            "It says nothing about rewordings unlike those the generators write."
        )
    return (
        f"Each bound is about a paraphrase drawn at random from a test generator's pool of "
        f"M = {pool} paraphrases per question; the tested paraphrases were drawn uniformly at "
        f"random without replacement (seed {config.draw_seed}). It says nothing about "
        "rewordings unlike those the generators write."
    )


def floor_confidence(value: float, decimals: int = 4) -> str:
    """A confidence printed rounded down (never claims more than it is): 0.99875 -> 0.9987."""
    scaled = math.floor(value * 10**decimals + 1e-9) / 10**decimals
    return f"{scaled:.{decimals}f}".rstrip("0").rstrip(".")


def evidence_counts(pairs: pd.DataFrame, floor: float | None) -> dict[str, int]:
    """Among degraded questions: how many rest on the k floor (amplified), on a drop within
    the scorer's numerical precision, and on a drop below 0.05."""
    deg = pairs[pairs["status"] == Verdict.DEGRADED] if len(pairs) else pairs
    if deg.empty:
        return {"amplified": 0, "within_noise": 0, "small_drop": 0}
    drop = deg["worst_drop"].astype(float) if "worst_drop" in deg else pd.Series(dtype=float)
    amplified = deg["amplified"] if "amplified" in deg else deg["gain"] <= 0.001
    return {
        "amplified": int(amplified.fillna(False).astype(bool).sum()),
        "within_noise": int((drop.abs() <= floor).sum()) if floor is not None else 0,
        "small_drop": int((drop < SMALL_DROP).sum()),
    }


SMALL_DROP = 0.05


def run_verdict(run: dict[str, Any], pairs: pd.DataFrame) -> dict[str, Any]:
    """Headline and sentences that describe one run without statistics jargon.

    Returns {"headline", "sentences", "overview", "kind", "manipulation"}; `kind` is the
    headline's verdict class (degraded / certified / passed / inconclusive); `manipulation` is
    `audit.manipulation_check` as JSON. When the adaptation did not take, the headline says so
    first: the counts after it are not findings. Only `certified` questions (bound
    after the total-variation relaxation >= a target p*) are called certified; a bound without
    a target, or below it, is reported as what it is. The confidence is named as a confidence
    (e.g. 0.95), and the guarantee is stated per question, before results are known.
    """
    record = RunRecord.from_stored(run)
    config = record.config
    ov = views.run_overview(pairs)
    label = record.name
    pre, post = str(run.get("pre_name") or "before"), str(run.get("post_name") or "after")
    n, n_deg, n_cert, n_pass, n_inc = (
        ov["n_pairs"],
        ov["n_degraded"],
        ov["n_certified"],
        ov["n_passed"],
        ov["n_inconclusive"],
    )
    conf, alpha = f"{config.confidence:g}", 1.0 - config.confidence
    target = None if config.target is None else f"{config.target:g}"
    check = manipulation_check(pairs, config.k)
    sentences = [
        f"Run \u201c{label}\u201d compares the verifier before adaptation ({pre}) with the verifier after "
        f"adaptation ({post}) on {n} hidden question(s) that nobody monitored during adaptation."
    ]
    if n:
        sentences.append(check.reason)
    planned = int(run.get("n_pairs") or n)
    status = str(run.get("status") or "")
    if status != RunStatus.DONE or n < planned:
        sentences.append(
            f"The run is {status or 'unfinished'}: {n} of {planned} questions have a verdict; "
            "the numbers below cover only those."
        )
    sentences.append(
        f"A paraphrase counts as a counterexample when the adapted verifier's confidence in the "
        f"true hidden answer drops by more than {config.epsilon:g} times what it gained on the "
        f"monitored question, or times {config.k:g} if it gained less than that "
        f"(tolerance epsilon = {config.epsilon:g}, k = {config.k:g})."
    )
    prov = run.get("provenance") or {}
    floor = run_noise_floor_value(prov)
    if config.min_drop > 0:
        sentences.append(
            f"Assumption beyond the paper: a rewording counts only when p(true) also fell by "
            f"more than the minimum drop {config.min_drop:g} (stated by the auditor)."
        )
    if n_deg:
        ev = evidence_counts(pairs, floor)
        sentences.append(
            f"{n_deg} of {n} question(s) ({_pct(n_deg / n)}) are degraded: on a rewording, "
            f"p(true answer) fell by more than epsilon x the monitored gain g (or x k when g "
            f"<= k). Of them, {ev['amplified']} have g <= k = {config.k:g}, so every drop "
            f"counts {1 / config.k:.0f}x; {ev['small_drop']} rest on a drop below "
            f"{SMALL_DROP:g}"
            + (
                f"; {ev['within_noise']} on a drop within the scorer's numerical precision "
                f"{floor:.3g}"
                if floor is not None
                else "; no numerical precision was measured or declared"
            )
            + ". Each is a rewording and a measured drop, shown below; not an estimate of how "
            "often the verifier fails."
        )
    if n_cert:
        sentences.append(
            f"{n_cert} question(s) are certified: no counterexample, every test generator "
            f"tested, and the lower bound reached the target p* = {target} at confidence {conf} "
            f"(the lowest certified bound is {_fmt(ov['min_bound_certified'], 2)})."
        )
    if n_pass:
        why = (
            "no target p* was set"
            if target is None
            else f"the bound stayed below the target p* = {target}"
        )
        sentences.append(
            f"{n_pass} question(s) passed without a certificate: no counterexample was found and "
            f"every test generator was tested, but {why}. Their bounds (mean "
            f"{_fmt(pairs.loc[pairs['status'] == Verdict.PASSED, 'bound'].mean(), 2)}) are weaker "
            "statements, shown per question in the table; they are not certificates."
        )
    if n_inc:
        sentences.append(
            f"{n_inc} question(s) are inconclusive: no counterexample was found, but some test "
            "generator has nothing tested for them. Finding no counterexample is not evidence "
            "that a question is safe."
        )
    if n_cert or n_pass:
        sentences.append(
            f"What a bound means: for each question, before its result is known, the chance "
            f"that its bound is wrong is at most {alpha:.3g} (one minus the confidence), so "
            f"across the {n} audited questions the expected number of wrong bounds is at most "
            f"{alpha:.3g} x {n} = {alpha * n:.2g}. It is not a promise about the questions "
            f"picked out afterwards as certified. To make all {n} statements hold at once, "
            f"read every bound at confidence "
            f"{floor_confidence(views.simultaneous_confidence(config.confidence, n))} "
            f"(Bonferroni, {alpha:.3g} / {n}); see 'all questions at once' in the confidence plot."
        )
    pool = _pool_sentence(pairs, config)
    if pool:
        sentences.append(pool)
    eps_from = prov.get("epsilon_from")
    if isinstance(eps_from, dict):
        sentences.append(epsilon_from_sentence(eps_from, config.epsilon))
    rerun = rerun_note(prov)
    if rerun:
        sentences.append(rerun[0].upper() + rerun[1:] + ".")
    if config.tv_delta > 0:
        sentences.append(
            f"Assumption: the paraphrases that matter lie within total-variation distance "
            f"{config.tv_delta:g} of the tested generators' mixture; every bound (including the "
            "failure-tolerant one) was lowered by that much."
        )
    if n == 0:
        kind, headline = Verdict.INCONCLUSIVE, f"{label}: no questions finished yet."
    elif n_deg:
        kind = Verdict.DEGRADED
        assumed = f", min-drop {config.min_drop:g}" if config.min_drop > 0 else ""
        headline = (
            f"{label}: adaptation degraded {n_deg} of {n} hidden question(s) "
            if check.took
            else f"{label}: the audit marks {n_deg} of {n} hidden question(s) degraded "
        ) + f"(epsilon {config.epsilon:g}{assumed})."
    elif n_cert == n:
        kind = Verdict.CERTIFIED
        headline = (
            f"{label}: no degradation found; every question certified at p* = {target} with "
            f"confidence {conf} (mean bound {_fmt(ov['mean_bound'], 2)})."
        )
    else:
        kind = Verdict.PASSED if n_pass + n_cert else Verdict.INCONCLUSIVE
        parts = [
            f"{c} {w}"
            for c, w in (
                (n_cert, "certified"),
                (n_pass, "passed without a certificate"),
                (n_inc, "inconclusive"),
            )
            if c
        ]
        headline = f"{label}: no counterexample found; " + ", ".join(parts) + f" of {n}."
    if n and not check.took:
        headline = f"{label}: {not_taken_headline(check)}: {headline[len(label) + 2 :]}"
    headline = with_paper_count(headline, pairs, config)
    if isinstance(eps_from, dict) and eps_from.get("unverified"):
        headline += " Epsilon came from a calibration on an unverified run."
    note = selection_note(run["provenance"])
    if note:  # a run re-derived after exclusions: the selection comes first, never a certificate
        headline = f"{headline} {note.split('.')[0]}."
        sentences.insert(1, note)
    return {
        "headline": headline,
        "sentences": sentences,
        "overview": ov,
        "kind": kind,
        "manipulation": check.to_json(),
    }
