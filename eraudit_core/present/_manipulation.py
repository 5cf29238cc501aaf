""" "Did the adaptation take?" in the words a page shows beside a run's verdicts.

Why: when an adaptation did not move the monitored task, D = drop / max(k, g) divides each
drop by the floor k, and a run's degraded count is a count of noise over k. A reader must learn
that before any count, so the headline, the Results section beside the verdicts and Home's lead
all start from `audit.manipulation_check` through these sentences.
"""

from __future__ import annotations

from eraudit_core.method import ManipulationCheck, run_manipulation
from eraudit_core.store import Store

NOT_TAKEN = "the adaptation did not take"


def gains_clause(check: ManipulationCheck) -> str:
    """'117 of 222 monitored gains at or below k = 0.001'."""
    n = check.n_pairs
    return f"{check.n_gain_le_k} of {n} monitored gains at or below k = {check.k:g}"


def not_taken_headline(check: ManipulationCheck) -> str:
    """The start of a headline for a run whose adaptation did not take: what did not move and
    what that makes of D, before any count."""
    return (
        f"{NOT_TAKEN}: it did not move the monitored task ({gains_clause(check)}), so D there "
        "is a ratio of noise to the floor k and these counts are not findings"
    )


def _f(x: float | None, digits: int) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def took_line(check: ManipulationCheck) -> str:
    """One compact line: the monitored task before and after and the gains at or below k."""
    q = check.gain_quantiles
    quartiles = (
        f"; gain quartiles {q['q25']:+.4f} / {q['median']:+.4f} / {q['q75']:+.4f}" if q else ""
    )
    acc = (
        f"monitored accuracy {_f(check.monitored_acc_pre, 2)} \u2192 "
        f"{_f(check.monitored_acc_post, 2)}, mean p(true) {_f(check.monitored_mtp_pre, 3)} "
        f"\u2192 {_f(check.monitored_mtp_post, 3)}; "
        if check.n_pairs
        else ""
    )
    share = check.share_gain_le_k
    pct = f" ({100 * share:.0f}%)" if share is not None else ""
    return f"{acc}{gains_clause(check)}{pct}{quartiles}"


def manipulation_lines(store: Store, run_id: str) -> list[str]:
    """What Results shows beside a run's verdicts: whether its adaptation took (with what
    that means for D when it did not) and, when it names a control in this store, whether
    the control's did, labelled as the control's."""
    check = run_manipulation(store, run_id)
    answer = "Yes" if check.took else "No"
    lines = [f"Did the adaptation take? {answer}: {took_line(check)}."]
    if check.n_pairs and not check.took:
        lines.append(
            "It did not move the monitored task, so on those questions D divides a drop by the "
            "floor k: a ratio of noise to k. Read the verdict counts as that, not as findings."
        )
    control = (store.run(run_id)["provenance"] or {}).get("control_run")
    if control and store.has_run(str(control)):
        label = str(store.run(str(control)).get("label") or control)
        own = run_manipulation(store, str(control))
        lines.append(
            f"The control's own check ({label}): its adaptation "
            f"{'took' if own.took else 'did not take'}: {took_line(own)}."
        )
    return lines


def pair_clause(arm: tuple[str, bool, int], control: tuple[str, bool, int], n: int) -> str | None:
    """The start of a lead about an arm and its control, each (name, took, gains <= k), when
    either adaptation did not take: that first, and that the counts are not findings. None
    when both took."""
    (a, a_took, a_le), (c, c_took, c_le) = arm, control
    if a_took and c_took:
        return None
    if not (a_took or c_took):
        who = f"for {a} or for its control {c}"
    else:
        who = f"for {a}" if not a_took else f"for its control {c}"
    return (
        f"The adaptation did not take {who} ({a_le} and {c_le} of {n} monitored gains at or "
        "below k, respectively): it did not move the monitored task, so D is mostly a ratio of "
        "noise to the floor k and the verdict counts are not findings"
    )


def lead_with_took(store: Store, run_id: str, control: str, sentence: str) -> str:
    """A comparison's lead sentence, prefixed with `pair_clause` when either run's adaptation
    did not take."""
    arm, ctl = run_manipulation(store, run_id), run_manipulation(store, control)
    first = pair_clause(
        (_name(store, run_id), arm.took, arm.n_gain_le_k),
        (_name(store, control), ctl.took, ctl.n_gain_le_k),
        arm.n_pairs,
    )
    return f"{first}; compared with each other, {sentence}" if first else sentence


def _name(store: Store, run_id: str) -> str:
    return str(store.run(run_id).get("label") or run_id)
