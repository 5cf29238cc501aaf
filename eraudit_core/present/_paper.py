"""The debate-distilled demo arms beside the paper's QuALITY-H figures.

Why: the paper's claim (docs/design.md §1: the adversarially distilled verifier is better by
standard evaluation, yet has more counterexamples and lower non-degradation bounds than the
honest one) is what the debate demo tries to reproduce at 135M parameters. This module reads
both arms' stored runs once and lays the same quantities side by side, with the primary
comparison fixed in advance (the exact McNemar test on degraded verdicts, `compare_runs`), so
Home, the README (`scripts/debate_results.py`) and tests all state one set of numbers.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from eraudit_core.audit import AuditConfig
from eraudit_core.present._compare import compare_runs, format_p
from eraudit_core.present._views import confidence_sweep, run_epsilon_sweep, standard_evaluation
from eraudit_core.store import Store

# QuALITY-H, 222 questions; the paper's section numbers. Counts are the GPT-20B-based
# verifiers'; the directions hold for all three verifier architectures (8B to 20B parameters).
PAPER_QUALITY_H: dict[str, Any] = {
    "n_pairs": 222,
    "counterexamples": {"adversarial": 103, "honest": 90, "verifier": "GPT-20B", "where": "§4.3"},
    "hidden_accuracy": "adversarial above honest on all three verifiers (§4.2)",
    "hidden_mtp": "adversarial above honest on all three verifiers (§4.2)",
    "mean_bound": "adversarial below honest at every confidence from 0.8 to 0.999 (§4.3)",
    "epsilon": "the gap in mean bound persists across epsilon (GPT-20B, §4.3)",
}
CONFIDENCES = (0.8, 0.9, 0.95, 0.99, 0.999)
EPSILONS = (0.25, 0.5, 1.0, 2.0)


def _arm(store: Store, run_id: str) -> dict[str, Any]:
    run = store.run(run_id)
    pairs = store.pair_results(run_id)
    config = AuditConfig.from_dict(run["config"])
    std = {
        (str(r["checkpoint"]), str(r["task"])): (
            float(r["accuracy"]),
            float(r["mean_task_probability"]),
        )
        for r in standard_evaluation(pairs).to_dict("records")
    }
    conf = confidence_sweep(pairs, config, CONFIDENCES).set_index("confidence")
    eps = run_epsilon_sweep(store, run_id, EPSILONS).set_index("epsilon")
    status = pairs["status"].value_counts()
    return {
        "run_id": run_id,
        "checkpoint": str(run.get("post_name") or run_id),
        "n_pairs": len(pairs),
        "epsilon": config.epsilon,
        "confidence": config.confidence,
        "monitored_accuracy": std["post", "monitored"][0],
        "monitored_mtp": std["post", "monitored"][1],
        "hidden_accuracy": std["post", "hidden"][0],
        "hidden_mtp": std["post", "hidden"][1],
        "base_monitored_accuracy": std["pre", "monitored"][0],
        "base_hidden_accuracy": std["pre", "hidden"][0],
        "base_hidden_mtp": std["pre", "hidden"][1],
        "n_degraded": int(status.get("degraded", 0)),
        "n_certified": int(status.get("certified", 0)),
        "n_passed": int(status.get("passed", 0)),
        "n_inconclusive": int(status.get("inconclusive", 0)),
        "mean_bound_by_confidence": {
            float(c): float(conf.loc[c, "mean_bound"]) for c in conf.index
        },
        "counterexamples_by_epsilon": {
            float(e): int(eps.loc[e, "n_with_counterexample"]) for e in eps.index
        },
        "mean_bound_by_epsilon": {float(e): float(eps.loc[e, "mean_bound"]) for e in eps.index},
    }


def debate_findings(store: Store, adversarial_run: str, honest_run: str) -> dict[str, Any]:
    """Both arms' standard evaluation, verdict counts, mean bounds across confidence and
    epsilon, and the primary paired comparison (adversarial against its honest control)."""
    adversarial, honest = _arm(store, adversarial_run), _arm(store, honest_run)
    compared = compare_runs(store, adversarial_run, honest_run)
    return {"adversarial": adversarial, "honest": honest, "comparison": compared}


def _pattern(holds: bool) -> str:
    return "yes" if holds else "no"


def paper_comparison_frame(findings: dict[str, Any]) -> pd.DataFrame:
    """One row per quantity the paper reports on QuALITY-H: the paper's finding, this demo's
    two arms, and whether the paper's direction appears here."""
    adv, hon = findings["adversarial"], findings["honest"]
    paper = PAPER_QUALITY_H
    ce = paper["counterexamples"]
    rows = [
        (
            "hidden accuracy, canonical wording (standard evaluation)",
            paper["hidden_accuracy"],
            f"{adv['hidden_accuracy']:.3f} vs {hon['hidden_accuracy']:.3f}",
            adv["hidden_accuracy"] > hon["hidden_accuracy"],
        ),
        (
            "hidden mean p(true), canonical wording",
            paper["hidden_mtp"],
            f"{adv['hidden_mtp']:.3f} vs {hon['hidden_mtp']:.3f}",
            adv["hidden_mtp"] > hon["hidden_mtp"],
        ),
        (
            "questions with a counterexample (degraded)",
            f"{ce['adversarial']} vs {ce['honest']} of {paper['n_pairs']} ({ce['verifier']}, "
            f"{ce['where']})",
            f"{adv['n_degraded']} vs {hon['n_degraded']} of {adv['n_pairs']}",
            adv["n_degraded"] > hon["n_degraded"],
        ),
    ]
    sweeps = (
        ("confidence", CONFIDENCES, paper["mean_bound"]),
        ("epsilon", EPSILONS, paper["epsilon"]),
    )
    for axis, values, finding in sweeps:
        for i, value in enumerate(values):
            a = adv[f"mean_bound_by_{axis}"][value]
            h = hon[f"mean_bound_by_{axis}"][value]
            rows.append(
                (
                    f"mean lower bound at {axis} {value:g}",
                    finding if i == 0 else "(same)",
                    f"{a:.3f} vs {h:.3f}",
                    a < h,
                )
            )
    return pd.DataFrame(
        [
            {
                "quantity": q,
                "paper (QuALITY-H, adversarial vs honest)": p,
                "this demo (debate-adversarial vs debate-honest)": d,
                "paper's direction here": _pattern(ok),
            }
            for q, p, d, ok in rows
        ]
    )


def primary_result(findings: dict[str, Any]) -> str:
    """The exact primary test in one line: discordant questions and p."""
    got = findings["comparison"]
    if not got.get("comparable"):
        fields = ", ".join(str(d["field"]) for d in got.get("differences") or [])
        return f"not comparable (they differ in {fields}): no test"
    pr = got["primary"]
    line = (
        f"degraded only under debate-adversarial: {pr['only_a']}, only under debate-honest: "
        f"{pr['only_b']} ({pr['test']}, {format_p(float(pr['p']))}"
    )
    clustered = pr.get("clustered")
    if clustered:
        line += f"; story-clustered permutation {format_p(float(clustered['p']))}"
    return line + ")"


def pattern_summary(findings: dict[str, Any]) -> str:
    """Whether the paper's pattern (more questions with a counterexample and a lower mean bound
    at every confidence for the adversarial arm) appears, and by how much, in one sentence."""
    adv, hon = findings["adversarial"], findings["honest"]
    ce = PAPER_QUALITY_H["counterexamples"]
    more = adv["n_degraded"] - hon["n_degraded"]
    gaps = [
        adv["mean_bound_by_confidence"][c] - hon["mean_bound_by_confidence"][c] for c in CONFIDENCES
    ]
    below = sum(gap < 0 for gap in gaps)
    holds = more > 0 and below == len(gaps)
    noun = "question" if abs(more) == 1 else "questions"
    count = (
        f"{abs(more)} {'more' if more > 0 else 'fewer'} {noun}" if more else "as many questions"
    ) + " with a counterexample than debate-honest"
    at95 = gaps[CONFIDENCES.index(0.95)]
    bound = (
        f"a mean lower bound {abs(at95):.3f} {'below' if at95 < 0 else 'above'} it at "
        f"confidence 0.95 (below at {below} of {len(gaps)} confidence levels)"
    )
    paper = (
        f"the paper: {ce['adversarial'] - ce['honest']} more of {PAPER_QUALITY_H['n_pairs']} "
        f"({ce['verifier']}) and below at every level"
    )
    verdict = "appears" if holds else "does not appear"
    return (
        f"The paper's pattern {verdict} here: debate-adversarial has {count} ({adv['n_degraded']} "
        f"vs {hon['n_degraded']} of {adv['n_pairs']}) and {bound}; {paper}."
    )
