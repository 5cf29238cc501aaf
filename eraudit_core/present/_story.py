"""Standard evaluation next to the audit's verdicts: the contrast the paper is about.

Why: an adapted verifier can look better by standard evaluation (accuracy and mean task
probability on the canonical wording of the hidden questions) while ER-Audit finds paraphrases
on which it lost support for the true answer (the paper: "selective hidden-task degradation
concealed by aggregate performance gains"). These helpers put both numbers side by side, per
checkpoint, computed from stored runs only, and pick one concrete example question, so a
reader who does not program sees the contrast without reading any statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.method import run_manipulation
from eraudit_core.null import null_reading
from eraudit_core.present import _views as views
from eraudit_core.present._compare import (
    LEVEL,
    chance_clause,
    compare_runs,
    format_p,
)
from eraudit_core.present._compare_words import differences_sentence
from eraudit_core.present._manipulation import pair_clause
from eraudit_core.present._null_view import headline_from
from eraudit_core.store import Store
from eraudit_core.types import Verdict

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
    "took",
    "n_gain_le_k",
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
    standard evaluation, its verdict counts and mean bound (degraded and inconclusive
    questions count as 0, as in `run_overview`), and whether its adaptation took
    (`audit.manipulation_check`: `took`, `n_gain_le_k`).

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
        check = run_manipulation(store, run_id)
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
                "took": check.took,
                "n_gain_le_k": check.n_gain_le_k,
            }
        )
    return pd.DataFrame(rows, columns=STORY_COLUMNS), warnings


def _checkpoint_names(runs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The adapted checkpoint's name per run; the runs' unique names where those repeat."""
    post = {rid: str(run.get("post_name") or "") for rid, run in runs.items()}
    if all(post.values()) and len(set(post.values())) == len(post):
        return post
    return views.unique_run_names({rid: run.get("label") for rid, run in runs.items()})


# The rule that picks Home's lead, fixed before any result is seen (docs/user-guide.md, "The
# Home lead"): the last listed run that names a control run, compared with that control.
# Choosing the most striking contrast after looking produced a "looks better but worse" lead in
# 69% of null draws.
LEAD_RULE = (
    "The pair is picked by a rule fixed in the code before any result: the last listed run "
    "that names a control run, against that control. Its sentence comes from one test fixed in "
    "advance (the exact McNemar test on degraded verdicts, story-clustered where the benchmark "
    "knows each question's story), and it calls a difference real only when that test "
    "supports it at the 0.05 level."
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
            f"{arm['hidden_accuracy']:.2f}); "
            + (
                f"ER-Audit finds {int(arm['n_degraded'])} of {int(arm['n_pairs'])} degraded"
                if arm["took"]
                else f"the audit marks {int(arm['n_degraded'])} of {int(arm['n_pairs'])} "
                "degraded, not findings: the adaptation did not take"
            )
            + f" (mean bound {arm['mean_bound']:.2f})."
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


def lead_rule_sentence(table: pd.DataFrame) -> str | None:
    """`LEAD_RULE` with the pair it picks in this table named."""
    pair = lead_pair(table)
    if pair is None:
        return None
    a, c = table.loc[pair[0]], table.loc[pair[1]]
    return f"Here: {a['checkpoint']} against its control {c['checkpoint']}. {LEAD_RULE}"


def _not_taken_clause(a: pd.Series, c: pd.Series) -> str | None:
    """The start of a lead whose arm or control did not take (None when both took)."""
    return pair_clause(
        (str(a["checkpoint"]), bool(a["took"]), int(a["n_gain_le_k"])),
        (str(c["checkpoint"]), bool(c["took"]), int(c["n_gain_le_k"])),
        int(a["n_pairs"]),
    )


def lead_sentence(store: Store, table: pd.DataFrame) -> str | None:
    """The one plain sentence Home opens with: the pair `LEAD_RULE` picks, read question by
    question against its control (`null_reading`: the primary test's average difference with
    its 95% interval, then how many questions read worse and better than the control), or
    why the two cannot be read against each other. When the adaptation of either did not
    take, the sentence says that first. None when there is no lead pair."""
    pair = lead_pair(table)
    if pair is None:
        return None
    a, c = table.loc[pair[0]], table.loc[pair[1]]
    reading = null_reading(store, str(a["run_id"]), control=str(c["run_id"]))
    if reading is None:
        return None
    # one name per run on Home: the control as the table names it, not by its stored label
    reading = {**reading, "control_label": str(c["checkpoint"])}
    sentence = headline_from(reading, str(a["checkpoint"]))
    first = _not_taken_clause(a, c)
    return f"{first}. Read against each other: {sentence}" if first else sentence


def story_lead(table: pd.DataFrame) -> str | None:
    """The lead by `LEAD_RULE`: the picked arm beside its control, numbers only (whether the
    difference is more than chance is `story_check`, shown next to it). When an adaptation
    did not take, its counts are named as what the audit marked, not as findings."""
    pair = lead_pair(table)
    if pair is None:
        return None
    a, c = table.loc[pair[0]], table.loc[pair[1]]
    counts = (
        f"by ER-Audit {int(a['n_degraded'])} vs {int(c['n_degraded'])} degraded questions"
        if a["took"] and c["took"]
        else f"the audit marks {int(a['n_degraded'])} vs {int(c['n_degraded'])} questions "
        "degraded (not findings: an adaptation did not take)"
    )
    return (
        f"{a['checkpoint']} beside its control {c['checkpoint']}: by standard evaluation "
        f"hidden accuracy {a['hidden_accuracy']:.2f} vs {c['hidden_accuracy']:.2f}; {counts}, "
        f"mean bound {a['mean_bound']:.2f} vs {c['mean_bound']:.2f}."
    )


def approval_sentence(table: pd.DataFrame) -> str | None:
    """Would standard evaluation approve the lead arm over its control? Only when its
    canonical hidden accuracy and mean p(true) are both at least the control's; the sentence
    names both numbers either way. None when there is no lead pair."""
    pair = lead_pair(table)
    if pair is None:
        return None
    a, c = table.loc[pair[0]], table.loc[pair[1]]
    approves = a["hidden_accuracy"] >= c["hidden_accuracy"] and a["hidden_mtp"] >= c["hidden_mtp"]
    verdict = (
        "standard evaluation would approve it over its control"
        if approves
        else "standard evaluation does not approve it over its control (that needs both at "
        "least the control's)"
    )
    return (
        f"On the canonical wording of these {int(a['n_pairs'])} hidden questions "
        f"{a['checkpoint']} has accuracy {a['hidden_accuracy']:.3f} and mean p(true) "
        f"{a['hidden_mtp']:.3f}, its control {c['checkpoint']} {c['hidden_accuracy']:.3f} and "
        f"{c['hidden_mtp']:.3f}: {verdict}."
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
    ok = pairs[(pairs["status"] == Verdict.DEGRADED) & (pairs["p_post_hidden"] > 0.5)]
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

    Also None when the adaptation did not take (`audit.manipulation_check`), or when the run
    names a control in this store whose canonical hidden accuracy or mean p(true) is above the
    run's: standard evaluation would then not approve it over its control.

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
    n_deg = int((pairs["status"] == Verdict.DEGRADED).sum())
    pre_mtp, post_mtp = _mean(pairs["p_pre_hidden"]), _mean(pairs["p_post_hidden"])
    if not (n_deg and post_acc >= pre_acc and post_mtp >= pre_mtp):
        return None
    if not run_manipulation(store, run_id).took:
        return None  # its counts are not findings: the headline says why
    if not _approved_over_control(store, run, post_acc, post_mtp):
        return None
    pre = str(run.get("pre_name") or "before adaptation")
    post = str(run.get("post_name") or "after adaptation")
    change = "improved" if post_acc > pre_acc else "did not change"
    control = run["provenance"].get("control_run")
    got = None
    if control:
        try:
            got = compare_runs(store, run_id, str(control))
        except InputError:  # the control is not in this store
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
        f"{pre_mtp:.2f} \u2192 {post_mtp:.2f}). " + found
    )
    return {
        "sentence": sentence,
        "example": concealed_example(store, run_id),
        "supported": supported,
        "check": check,
    }


def _approved_over_control(
    store: Store, run: dict[str, Any], post_acc: float, post_mtp: float
) -> bool:
    """Canonical hidden accuracy and mean p(true) at least those of the control the run names
    (True when it names none, or none in this store)."""
    control = run["provenance"].get("control_run")
    if not control or not store.has_run(str(control)):
        return True
    other = store.pair_results(str(control))
    other = other[other["pair_id"].isin(store.pair_results(str(run["run_id"]))["pair_id"])]
    if other.empty:
        return True
    return bool(
        post_acc >= _accuracy(other["p_post_hidden"]) and post_mtp >= _mean(other["p_post_hidden"])
    )


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


def _primary_p(primary: dict[str, Any]) -> float:
    """The p-value the sentence uses: the story-clustered one when there is one."""
    clustered = primary.get("clustered")
    return float(clustered["p"] if clustered else primary["p"])
