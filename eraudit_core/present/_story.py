"""Standard evaluation next to the audit's verdicts: the contrast the paper is about.

Why: an adapted verifier can look better by standard evaluation (accuracy and mean task
probability on the canonical wording of the hidden questions) while ER-Audit finds paraphrases
on which it lost support for the true answer (the paper: "selective hidden-task degradation
concealed by aggregate performance gains"). These helpers put both numbers side by side, per
checkpoint, computed from stored runs only, and pick one concrete example question, so a
reader who does not program sees the contrast without reading any statistics.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.present import _views as views
from eraudit_core.present._compare import (
    LEVEL,
    chance_clause,
    compare_runs,
    differences_sentence,
    format_p,
    primary_sentence,
)
from eraudit_core.store import Store

STORY_COLUMNS = [
    "checkpoint",
    "run_id",
    "n_pairs",
    "monitored_accuracy",
    "hidden_accuracy",
    "hidden_mtp",
    "n_degraded",
    "n_certified",
    "n_passed",
    "n_inconclusive",
    "mean_bound",
    "control_run",
]


def _accuracy(values: pd.Series) -> float:
    v = values.dropna().astype(float)
    return float((v > 0.5).mean()) if v.size else np.nan


def _mean(values: pd.Series) -> float:
    v = values.dropna().astype(float)
    return float(v.mean()) if v.size else np.nan


def standard_vs_audit(store: Store, run_ids: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """One row per checkpoint: the runs' shared pre-adaptation checkpoint first (standard
    evaluation only: it has no audit of its own), then each run's adapted checkpoint with its
    standard evaluation and its verdict counts and mean bound (degraded and inconclusive
    questions count as 0, as in `run_overview`).

    Returns the table and warnings: runs are only comparable on the same questions and the
    same pre-adaptation checkpoint, and every departure from that is named.
    """
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    base: pd.DataFrame | None = None
    runs = {rid: store.run(rid) for rid in run_ids}
    names = _checkpoint_names(runs)
    for run_id, run in runs.items():
        pairs = store.pair_results(run_id)
        if pairs.empty:
            warnings.append(f"run {run_id} has no finished questions; left out")
            continue
        if base is None:
            base = pairs.set_index("pair_id")
            rows.append(
                {
                    "checkpoint": str(run.get("pre_name") or "before adaptation"),
                    "run_id": None,
                    "n_pairs": len(pairs),
                    "monitored_accuracy": _accuracy(pairs["p_pre_monitored"]),
                    "hidden_accuracy": _accuracy(pairs["p_pre_hidden"]),
                    "hidden_mtp": _mean(pairs["p_pre_hidden"]),
                }
            )
        elif set(pairs["pair_id"]) != set(base.index):
            warnings.append(
                f"run {run_id} audited {len(pairs)} questions, not the same "
                f"{len(base)} as the first run: its numbers are not directly comparable"
            )
        else:
            # Same questions; the comparison also needs the same model before adaptation,
            # which shows in its scores (fingerprints differ between score tables).
            cols = ["p_pre_hidden", "p_pre_monitored"]
            other = pairs.set_index("pair_id").loc[base.index, cols].astype(float)
            if not np.allclose(other.to_numpy(), base[cols].astype(float).to_numpy(), atol=1e-6):
                warnings.append(
                    f"run {run_id} scores the questions differently before adaptation than the "
                    "first run (another starting checkpoint?): its numbers are not directly "
                    "comparable"
                )
        ov = views.run_overview(pairs)
        rows.append(
            {
                "checkpoint": names[run_id],
                "run_id": run_id,
                "n_pairs": ov["n_pairs"],
                "monitored_accuracy": _accuracy(pairs["p_post_monitored"]),
                "hidden_accuracy": _accuracy(pairs["p_post_hidden"]),
                "hidden_mtp": _mean(pairs["p_post_hidden"]),
                "n_degraded": ov["n_degraded"],
                "n_certified": ov["n_certified"],
                "n_passed": ov["n_passed"],
                "n_inconclusive": ov["n_inconclusive"],
                "mean_bound": ov["mean_bound"],
                "control_run": run["provenance"].get("control_run"),
            }
        )
    return pd.DataFrame(rows, columns=STORY_COLUMNS), warnings


def _checkpoint_names(runs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The adapted checkpoint's name per run; the runs' unique names where those repeat."""
    post = {rid: str(run.get("post_name") or "") for rid, run in runs.items()}
    if all(post.values()) and len(set(post.values())) == len(post):
        return post
    return views.unique_run_names({rid: run.get("label") for rid, run in runs.items()})


# The rule that picks Home's lead, fixed before any result is seen (docs/user-guide.md, "The Home lead"):
# the last listed run that names a control run, compared with that control. For the demo
# that is the concealed arm against the honest arm. Choosing the most striking contrast after
# looking (the old rule) produced a "looks better but worse" lead in 69% of null draws.
LEAD_RULE = (
    "The lead compares the last listed run that names a control run with that control "
    "(for the demo: the concealed arm against the honest arm), a rule fixed in the code "
    "before any result; its sentence comes from one test fixed in advance (the exact McNemar "
    "test on degraded verdicts, story-clustered where the benchmark knows each question's "
    "story), and it calls a difference real only when that test supports it at the 0.05 level."
)
LEAD_LEVEL = LEVEL


def story_sentences(table: pd.DataFrame) -> list[str]:
    """The contrast in plain words: `story_lead` (when there is one), then one sentence per
    adapted checkpoint. Only what the numbers show is said."""
    if len(table) < 2:
        return []
    base, arms = table.iloc[0], table.iloc[1:]
    per_arm = []
    for _, arm in arms.iterrows():
        better = arm["hidden_accuracy"] > base["hidden_accuracy"]
        verb = "better than" if better else "no better than"
        per_arm.append(
            f"{arm['checkpoint']}: by standard evaluation {verb} {base['checkpoint']} on the "
            f"hidden questions (accuracy {base['hidden_accuracy']:.2f} \u2192 "
            f"{arm['hidden_accuracy']:.2f}); ER-Audit finds {int(arm['n_degraded'])} of "
            f"{int(arm['n_pairs'])} degraded (mean bound {arm['mean_bound']:.2f})."
        )
    lead = story_lead(table)
    return ([lead] if lead else []) + per_arm


def lead_pair(table: pd.DataFrame) -> tuple[Any, Any] | None:
    """Row labels (arm, control) that `LEAD_RULE` picks, or None when no listed run names a
    control that is also listed. Never looks at verdicts or scores."""
    if "control_run" not in table or len(table) < 3:
        return None
    arms = table.iloc[1:]
    by_run = {str(r): i for i, r in arms["run_id"].items()}
    for i, arm in reversed(list(arms.iterrows())):
        control = arm.get("control_run")
        if isinstance(control, str) and control in by_run and by_run[control] != i:
            return i, by_run[control]
    return None


def lead_sentence(store: Store, table: pd.DataFrame) -> str | None:
    """The one plain sentence Home opens with: the pair `LEAD_RULE` picks, read from the
    primary comparison ('demo:concealed degraded 4 more hidden questions than its control
    demo:honest; with 10 against 6 disagreements this could be chance (exact test p =
    0.454).'), or why the two cannot be compared. None when there is no lead pair."""
    pair = lead_pair(table)
    if pair is None:
        return None
    a, c = table.loc[pair[0]], table.loc[pair[1]]
    got = paired_contrast(store, str(a["run_id"]), str(c["run_id"]))
    if got is None:
        return None
    if not got["comparable"]:
        fields = ", ".join(d["field"] for d in got["differences"])
        return (
            f"{a['checkpoint']} cannot be compared with its control {c['checkpoint']}: they "
            f"differ in {fields}, so no test is made."
        )
    return primary_sentence(got, str(a["checkpoint"]), f"its control {c['checkpoint']}")


def story_lead(table: pd.DataFrame) -> str | None:
    """The lead by `LEAD_RULE`: the picked arm beside its control, numbers only (whether the
    difference is more than chance is `story_check`, shown next to it)."""
    pair = lead_pair(table)
    if pair is None:
        return None
    a, c = table.loc[pair[0]], table.loc[pair[1]]
    return (
        f"{a['checkpoint']} beside its control {c['checkpoint']}: by standard evaluation "
        f"hidden accuracy {a['hidden_accuracy']:.2f} vs {c['hidden_accuracy']:.2f}; by "
        f"ER-Audit {int(a['n_degraded'])} vs {int(c['n_degraded'])} degraded questions, mean "
        f"bound {a['mean_bound']:.2f} vs {c['mean_bound']:.2f}."
    )


def story_check(store: Store, table: pd.DataFrame) -> str | None:
    """The chance check of `story_lead`'s comparison, in one sentence: the paired tests of
    `compare_runs` over the same questions, or why there is no test (runs not comparable).
    None when there is no lead."""
    pair = lead_pair(table)
    if pair is None:
        return None
    a, b = table.loc[pair[0]], table.loc[pair[1]]
    got = paired_contrast(store, str(a["run_id"]), str(b["run_id"]))
    if got is None:
        return None
    if not got["comparable"]:
        return differences_sentence(got["differences"])
    pr = got["primary"]
    canonical, bound = got["secondary"][0], got["secondary"][1]

    def verdict(p: float) -> str:
        return (
            f"unlikely by chance at the {LEAD_LEVEL:g} level"
            if p < LEAD_LEVEL
            else "could be chance"
        )

    return (
        f"Is it more than chance? Paired over the same {got['n_pairs']} questions: "
        f"{pr['only_a']} are degraded only for {a['checkpoint']} and {pr['only_b']} only for "
        f"{b['checkpoint']}; the primary test, fixed in advance: {chance_clause(pr)}. "
        f"Secondary (Holm-adjusted for two tests): the canonical wording is answered right "
        f"only by {a['checkpoint']} on {canonical['only_a']} and only by {b['checkpoint']} on "
        f"{canonical['only_b']} (exact McNemar, {format_p(canonical['p_holm'])}, "
        f"{verdict(canonical['p_holm'])}); bounds differ by "
        f"{bound['mean_difference']:+.2f} on average (paired permutation test, "
        f"{format_p(bound['p_holm'])}, {verdict(bound['p_holm'])})."
    )


def concealed_example(store: Store, run_id: str) -> dict[str, Any] | None:
    """The clearest hidden question whose canonical wording the adapted verifier answers
    correctly (p(true) > 0.5 after adaptation) while a paraphrase of it is a counterexample:
    the largest drop in p(true) on such a paraphrase, questions whose gain is at most k
    (amplified) last. None when the run
    has no such question."""
    pairs = store.pair_results(run_id)
    if pairs.empty:
        return None
    ok = pairs[(pairs["status"] == "degraded") & (pairs["p_post_hidden"] > 0.5)]
    if ok.empty:
        return None
    steps = store.steps(run_id)
    hits = steps[steps["is_counterexample"].astype(bool) & steps["pair_id"].isin(ok["pair_id"])]
    if hits.empty:
        return None
    # what moved ranks first: amplified questions (gain <= k) last, then the largest drop
    amplified = dict(zip(ok["pair_id"], ok["amplified"].fillna(False).astype(bool), strict=True))
    hits = hits.assign(
        _amp=hits["pair_id"].map(amplified).astype(int), _drop=hits["p_post"] - hits["p_pre"]
    )
    worst = hits.sort_values(["_amp", "_drop", "p_post", "pair_id", "t"]).iloc[0]
    pair = ok[ok["pair_id"] == worst["pair_id"]].iloc[0]
    return {
        "pair_id": str(pair["pair_id"]),
        "hidden_question": str(pair["hidden_question"]),
        "p_pre_hidden": float(pair["p_pre_hidden"]),
        "p_post_hidden": float(pair["p_post_hidden"]),
        "paraphrase": str(worst["text"]),
        "generator": str(worst["generator"]),
        "p_pre_paraphrase": float(worst["p_pre"]),
        "p_post_paraphrase": float(worst["p_post"]),
    }


def contrast_lead(store: Store, run_id: str) -> dict[str, Any] | None:
    """The Share lead for a run whose standard evaluation does not show the degradation the
    audit found: hidden accuracy on the canonical questions did not fall, yet some questions
    are degraded. Returns {"sentence", "example", "supported", "check"} (example may be
    None), or None when the run does not show that contrast (then the ordinary verdict leads).

    `supported` is True only when the run names a comparable control run and the paired
    McNemar test on degraded verdicts (run vs control) says more degraded than the control at
    the 0.05 level; only then may a page lead in red. Without a control nobody knows how many
    questions an adaptation that should not hurt would mark degraded (ten noise-only
    adaptations: 40 of 40)."""
    run = store.run(run_id)
    pairs = store.pair_results(run_id)
    if pairs.empty:
        return None
    pre_acc, post_acc = _accuracy(pairs["p_pre_hidden"]), _accuracy(pairs["p_post_hidden"])
    n_deg = int((pairs["status"] == "degraded").sum())
    if not (n_deg and post_acc >= pre_acc):
        return None
    pre = str(run.get("pre_name") or "before adaptation")
    post = str(run.get("post_name") or "after adaptation")
    change = "improved" if post_acc > pre_acc else "did not change"
    control = run["provenance"].get("control_run")
    got = None
    if control:
        try:
            got = compare_runs(store, run_id, str(control))
        except Exception:  # the control is not in this store
            got = None
    supported = bool(
        got
        and got["comparable"]
        and got["primary"]["only_a"] > got["primary"]["only_b"]
        and _primary_p(got["primary"]) < LEAD_LEVEL
    )
    if got is None:
        check = (
            "No control run is named, so there is no chance check: an adaptation that should not "
            "hurt can make questions degraded (see each one's drop and gain)."
        )
    elif not got["comparable"]:
        check = differences_sentence(got["differences"])
    else:
        pr = got["primary"]
        check = (
            f"Against its control {control}: {pr['only_a']} questions degraded only here, "
            f"{pr['only_b']} only in the control; {chance_clause(pr)}."
        )
    found = (
        f"ER-Audit found {n_deg} of them degraded: reworded forms on which p(true answer) "
        "fell by more than epsilon x the monitored gain."
    )
    sentence = (
        f"Standard evaluation would approve this adaptation: on the canonical wording of the "
        f"{len(pairs)} hidden questions, accuracy {change} ({pre_acc:.0%} for {pre}, "
        f"{post_acc:.0%} for {post}; mean probability of the true answer "
        f"{_mean(pairs['p_pre_hidden']):.2f} \u2192 {_mean(pairs['p_post_hidden']):.2f}). " + found
    )
    return {
        "sentence": sentence,
        "example": concealed_example(store, run_id),
        "supported": supported,
        "check": check,
    }


def paired_contrast(store: Store, run_a: str, run_b: str) -> dict[str, Any] | None:
    """Is the difference between two runs on the same questions more than chance?
    `compare_runs` (comparability check first, then McNemar and Wilcoxon); None when the runs
    share no question."""
    got = compare_runs(store, run_a, run_b)
    if not got["comparable"] and any(
        d["field"] == "questions" and not d["a"] for d in got["differences"]
    ):
        return None
    return got


def target_recovery(store: Store, run_id: str, targets: Collection[str]) -> dict[str, Any] | None:
    """Do the audit's degraded verdicts point at the questions an adaptation was built to
    damage? Where the targets are known (the demo's seeded subset), a 2 x 2 table of the run's
    questions, target or not by degraded or not, and Fisher's exact test on it (scipy;
    two-sided, so it also flags an audit that degrades the others more). None when the run
    has no target or no other question."""
    from scipy.stats import fisher_exact

    pairs = store.pair_results(run_id)
    if pairs.empty:
        return None
    is_target = pairs["pair_id"].isin(set(targets))
    degraded = pairs["status"] == "degraded"
    n_t, n_o = int(is_target.sum()), int((~is_target).sum())
    if not (n_t and n_o):
        return None
    d_t, d_o = int((degraded & is_target).sum()), int((degraded & ~is_target).sum())
    test = fisher_exact([[d_t, n_t - d_t], [d_o, n_o - d_o]])
    # What per-question standard evaluation finds on the same split: the canonical wording
    # answered wrongly after adaptation (p(true) <= 0.5).
    wrong = pairs["p_post_hidden"].astype(float) <= 0.5
    w_t, w_o = int((wrong & is_target).sum()), int((wrong & ~is_target).sum())
    std = fisher_exact([[w_t, n_t - w_t], [w_o, n_o - w_o]])
    return {
        "targets": n_t,
        "degraded_targets": d_t,
        "others": n_o,
        "degraded_others": d_o,
        "p_value": float(test.pvalue),
        "wrong_targets": w_t,
        "wrong_others": w_o,
        "standard_p_value": float(std.pvalue),
    }


def target_sentence(
    store: Store, run_id: str, targets: Collection[str], built_to_damage: bool
) -> str | None:
    """`target_recovery` in plain words. `built_to_damage`: whether this run's adaptation was
    trained against the targets (else the same split is a control: it should not matter)."""
    got = target_recovery(store, run_id, targets)
    if got is None:
        return None
    name = str(store.run(run_id).get("post_name") or run_id)
    standard = (
        f"; per-question standard evaluation on the same split answers the canonical wording "
        f"wrongly on {got['wrong_targets']} of the {got['targets']} and {got['wrong_others']} "
        f"of the {got['others']} others (Fisher exact test, {format_p(got['standard_p_value'])})"
    )
    if built_to_damage:
        return (
            f"{name} was built to damage {got['targets']} of these questions: ER-Audit flags "
            f"{got['degraded_targets']} of them and {got['degraded_others']} of the "
            f"{got['others']} others (Fisher exact test, {format_p(got['p_value'])})"
            + standard
            + "."
        )
    return (
        f"{name} was built to damage none: on the same split ER-Audit flags "
        f"{got['degraded_targets']} of the {got['targets']} and {got['degraded_others']} of the "
        f"{got['others']} others (Fisher exact test, {format_p(got['p_value'])})" + standard + "."
    )


def _primary_p(primary: dict[str, Any]) -> float:
    """The p-value the sentence uses: the story-clustered one when there is one."""
    clustered = primary.get("clustered")
    return float(clustered["p"] if clustered else primary["p"])
