"""Does the audit point at the questions an adaptation was built to damage?

Why: where the damaged questions are known (the demo's seeded targets), the audit's degraded
verdicts can be checked against them without telling the audit which they are: a 2 x 2 table
and Fisher's exact test, beside what per-question standard evaluation finds on the same split.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from eraudit_core.present._compare import format_p
from eraudit_core.store import Store
from eraudit_core.types import Verdict


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
    degraded = pairs["status"] == Verdict.DEGRADED
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
