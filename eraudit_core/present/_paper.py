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

from eraudit_core.method import RunRecord, manipulation_check
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
    run = RunRecord.read(store, run_id)
    pairs = store.pair_results(run_id)
    config = run.config
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
    check = manipulation_check(pairs, config.k)
    return {
        "run_id": run_id,
        "checkpoint": run.post_name or run_id,
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
        "search_counterexamples": search_counterexamples(store, run_id),
        "took": check.took,
        "n_gain_le_k": check.n_gain_le_k,
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


def search_counterexamples(store: Store, run_id: str) -> int:
    """Questions with a counterexample in the search stage (stage 1) at the run's epsilon: the
    statistic the paper counts per question, unlike the degraded verdicts, which also count
    counterexamples found by the stage-2 tests."""
    steps = store.steps(run_id, with_prompts=False)
    if steps.empty:
        return 0
    hit = (steps["stage"] == 1) & steps["is_counterexample"].astype(bool)
    return int(steps.loc[hit, "pair_id"].nunique())


def both_took(findings: dict[str, Any]) -> bool:
    """Whether both arms' adaptations took (`audit.manipulation_check`): only then are their
    counts findings to set beside the paper's."""
    return bool(findings["adversarial"]["took"] and findings["honest"]["took"])


def debate_findings(store: Store, adversarial_run: str, honest_run: str) -> dict[str, Any]:
    """Both arms' standard evaluation, verdict counts, mean bounds across confidence and
    epsilon, and the primary paired comparison (adversarial against its honest control)."""
    adversarial, honest = _arm(store, adversarial_run), _arm(store, honest_run)
    compared = compare_runs(store, adversarial_run, honest_run)
    return {"adversarial": adversarial, "honest": honest, "comparison": compared}


def _pattern(holds: bool | None) -> str:
    return "yes" if holds else "no"


def paper_comparison_frame(findings: dict[str, Any]) -> pd.DataFrame:
    """One row per quantity the paper reports on QuALITY-H: the paper's finding, this demo's
    two arms, and whether the paper's direction appears here. The count row sets the paper's
    per-question search-stage counterexample counts beside the same statistic here; the
    degraded verdicts, which the paper does not count per arm, are their own row. When an
    arm's adaptation did not take, the direction column says that it is not a finding."""
    adv, hon = findings["adversarial"], findings["honest"]
    paper = PAPER_QUALITY_H
    ce = paper["counterexamples"]
    rows: list[tuple[str, str, str, bool | None]] = [
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
            f"questions with a counterexample in the search stage (per question; here at "
            f"epsilon {adv['epsilon']:g})",
            f"{ce['adversarial']} vs {ce['honest']} of {paper['n_pairs']} ({ce['verifier']}, "
            f"{ce['where']}, at the paper's epsilon)",
            f"{adv['search_counterexamples']} vs {hon['search_counterexamples']} of "
            f"{adv['n_pairs']}",
            adv["search_counterexamples"] > hon["search_counterexamples"],
        ),
        (
            "questions marked degraded (search or test stage)",
            "not reported per arm",
            f"{adv['n_degraded']} vs {hon['n_degraded']} of {adv['n_pairs']}",
            None,
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
    direction = (
        "paper's direction here"
        if both_took(findings)
        else "paper's direction here (not a finding: the adaptation did not take)"
    )
    return pd.DataFrame(
        [
            {
                "quantity": q,
                "paper (QuALITY-H, adversarial vs honest)": p,
                "this demo (debate-adversarial vs debate-honest)": d,
                direction: "" if ok is None else _pattern(ok),
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
    """Whether the paper's pattern (more questions with a search-stage counterexample and a
    lower mean bound at every confidence for the adversarial arm) appears, and by how much, in
    one sentence. When an arm's adaptation did not take, the sentence says so first and sets
    the paper's figures beside the arms' for reference, not as a test of the pattern."""
    adv, hon = findings["adversarial"], findings["honest"]
    ce = PAPER_QUALITY_H["counterexamples"]
    more = adv["search_counterexamples"] - hon["search_counterexamples"]
    gaps = [
        adv["mean_bound_by_confidence"][c] - hon["mean_bound_by_confidence"][c] for c in CONFIDENCES
    ]
    below = sum(gap < 0 for gap in gaps)
    holds = more > 0 and below == len(gaps)
    noun = "question" if abs(more) == 1 else "questions"
    count = (
        f"{abs(more)} {'more' if more > 0 else 'fewer'} {noun}" if more else "as many questions"
    ) + " with a search-stage counterexample than debate-honest"
    at95 = gaps[CONFIDENCES.index(0.95)]
    bound = (
        f"a mean lower bound {abs(at95):.3f} {'below' if at95 < 0 else 'above'} it at "
        f"confidence 0.95 (below at {below} of {len(gaps)} confidence levels)"
    )
    paper = (
        f"the paper: {ce['adversarial'] - ce['honest']} more of {PAPER_QUALITY_H['n_pairs']} "
        f"({ce['verifier']}) and below at every level"
    )
    numbers = (
        f"debate-adversarial has {count} ({adv['search_counterexamples']} vs "
        f"{hon['search_counterexamples']} of {adv['n_pairs']}) and {bound}; {paper}."
    )
    if not both_took(findings):
        return (
            f"Uninformative: the adaptation did not take (debate-adversarial "
            f"{adv['n_gain_le_k']} and debate-honest {hon['n_gain_le_k']} of {adv['n_pairs']} "
            "monitored gains at or below k), so D is mostly a ratio of noise to the floor k "
            "and neither the paper's pattern nor its absence can be read here. The paper's "
            f"figures stand beside the arms' for reference only: {numbers}"
        )
    verdict = "appears" if holds else "does not appear"
    return f"The paper's pattern {verdict} here: {numbers}"


def _capacity_words(manifest: dict[str, Any]) -> str:
    """What was trained, from the fit gate's capacity (`full-topN`: a full fine-tune of the top
    N layers); empty when the manifest has no fit record."""
    name = str(((manifest.get("fit") or {}).get("capacity") or {}).get("name") or "")
    top = name.removeprefix("full-top")
    if name.startswith("full-top") and top.isdigit():
        return f"a full fine-tune of the top {top} layers"
    return f"capacity {name}" if name else ""


def recipe_sentence(manifests: dict[str, dict[str, Any]]) -> str:
    """The debate arms' recipe as their manifests record it ({arm: manifest}), with how many
    seeds each has: one seed cannot tell the arms' difference from the spread between two
    seeds of one arm, and the sentence says so."""
    if not manifests:
        return "The debate arms' manifests are not in this checkout."
    first = next(iter(manifests.values()))
    hp = first.get("hyperparameters") or {}
    seeds = {
        arm: len(m.get("seeds") or ([m["seed"]] if "seed" in m else []))
        for arm, m in manifests.items()
    }
    n_seeds = set(seeds.values())
    seed_text = (
        "one seed per arm (no second seed exists, so the difference between the arms cannot "
        "be set against the difference between two seeds of one arm)"
        if n_seeds == {1}
        else "seeds per arm: " + ", ".join(f"{a} {n}" for a, n in seeds.items())
    )
    parts = [_capacity_words(first)] + [
        f"{name} {hp[key]:g}" if isinstance(hp.get(key), float) else f"{name} {hp[key]}"
        for key, name in (("learning_rate", "learning rate"), ("epochs", "epochs"))
        if key in hp
    ]
    settings = ", ".join(part for part in parts if part)
    return (
        f"Recipe, from the arms' manifests: {first.get('recipe', 'not recorded')}"
        + (f"; {settings}" if settings else "")
        + f"; {seed_text}. The paper's verifiers are 8B to 20B models, fully fine-tuned with a "
        "forced-choice loss."
    )
