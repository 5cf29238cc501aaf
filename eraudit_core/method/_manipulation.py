"""Did the adaptation take? The monitored task before and after, read from a run's pairs (pure).

Why: D = drop / max(k, g) weighs a hidden question's drop against what the adaptation gained
on its monitored question. When the adaptation did not move the monitored task (g <= k on most
questions), the denominator is the floor k on those questions, and D there is a ratio of noise
to k: verdicts built on it say nothing about what the adaptation did. Every page and every JSON
document that shows a run's verdicts shows this check beside them, so nobody reads such a run's
counts as findings.

`took` is True exactly when fewer than half of the monitored gains are at or below k (exactly
half is not "fewer than half": such a run did not take).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.method._degradation import is_amplified, monitored_gain
from eraudit_core.method._stored_run import RunRecord


@dataclass(frozen=True)
class ManipulationCheck:
    """The monitored task of one run, before and after adaptation, and whether it moved."""

    n_pairs: int
    k: float
    monitored_acc_pre: float | None
    monitored_acc_post: float | None
    monitored_mtp_pre: float | None
    monitored_mtp_post: float | None
    n_gain_le_k: int
    share_gain_le_k: float | None
    gain_quantiles: dict[str, float]
    median_abs_gain: float | None
    took: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        """The JSON object `show`, `audit` and `audit-table` print under "manipulation"."""
        return asdict(self)


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def _gains(pairs: pd.DataFrame) -> np.ndarray:
    """Each question's monitored gain g: the stored `gain` (what the audit divided by), or
    p_post - p_pre on the monitored question where a row has no stored gain."""
    pre = pd.to_numeric(pairs["p_pre_monitored"], errors="coerce")
    post = pd.to_numeric(pairs["p_post_monitored"], errors="coerce")
    derived = pd.Series(
        [monitored_gain(a, b) for a, b in zip(pre, post, strict=True)], index=pairs.index
    )
    if "gain" in pairs:
        derived = pd.to_numeric(pairs["gain"], errors="coerce").fillna(derived)
    return derived.dropna().to_numpy(dtype=float)


def manipulation_check(pairs: pd.DataFrame, k: float) -> ManipulationCheck:
    """The manipulation check of one run from its stored pairs (`Store.pair_results`): the
    monitored question's accuracy (share with p(true) > 0.5) and mean p(true) before and after,
    the monitored gains' quartiles, how many are at or below k, and whether the adaptation
    took (fewer than half at or below k), with the reason in one sentence."""
    if not (k > 0 and math.isfinite(k)):
        raise ValueError(f"k must be a positive finite number, got {k!r}")
    if pairs.empty:
        return ManipulationCheck(
            n_pairs=0,
            k=float(k),
            monitored_acc_pre=None,
            monitored_acc_post=None,
            monitored_mtp_pre=None,
            monitored_mtp_post=None,
            n_gain_le_k=0,
            share_gain_le_k=None,
            gain_quantiles={},
            median_abs_gain=None,
            took=False,
            reason="No question has finished yet, so nothing shows that the adaptation moved "
            "the monitored task.",
        )
    pre = pd.to_numeric(pairs["p_pre_monitored"], errors="coerce").dropna().to_numpy(float)
    post = pd.to_numeric(pairs["p_post_monitored"], errors="coerce").dropna().to_numpy(float)
    gains = _gains(pairs)
    n = int(gains.size)
    n_le = int(sum(is_amplified(g, k) for g in gains))
    share = n_le / n if n else None
    took = bool(n and 2 * n_le < n)
    levels = {"min": 0.0, "q25": 0.25, "median": 0.5, "q75": 0.75, "max": 1.0}
    quart = {name: float(np.quantile(gains, q)) for name, q in levels.items()} if n else {}
    check = ManipulationCheck(
        n_pairs=len(pairs),
        k=float(k),
        monitored_acc_pre=_mean(pre > 0.5),
        monitored_acc_post=_mean(post > 0.5),
        monitored_mtp_pre=_mean(pre),
        monitored_mtp_post=_mean(post),
        n_gain_le_k=n_le,
        share_gain_le_k=share,
        gain_quantiles=quart,
        median_abs_gain=float(np.median(np.abs(gains))) if n else None,
        took=took,
        reason="",
    )
    return ManipulationCheck(**{**asdict(check), "reason": _reason(check, n)})


def _fmt(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _reason(c: ManipulationCheck, n: int) -> str:
    """The check in one sentence: what moved, and what that means for D."""
    if not n:
        return "No question has a monitored gain, so nothing shows that the adaptation moved it."
    counts = (
        f"{c.n_gain_le_k} of {n} monitored gains g ({100 * (c.share_gain_le_k or 0):.0f}%) are "
        f"at or below k = {c.k:g} (median g {c.gain_quantiles['median']:+.4f}); monitored "
        f"accuracy {_fmt(c.monitored_acc_pre)} \u2192 {_fmt(c.monitored_acc_post)}, mean p(true) "
        f"{_fmt(c.monitored_mtp_pre, 3)} \u2192 {_fmt(c.monitored_mtp_post, 3)}"
    )
    if c.took:
        return f"The adaptation took: {counts}."
    return (
        f"The adaptation did not take: it did not move the monitored task. {counts}. On those "
        "questions D divides a drop by the floor k, so D there is a ratio of noise to k, and "
        "the verdicts are not findings about the adaptation."
    )


def run_manipulation(store: Any, run_id: str) -> ManipulationCheck:
    """`manipulation_check` of a stored run, at the k it was audited with."""
    return manipulation_check(store.pair_results(run_id), RunRecord.read(store, run_id).config.k)


def manipulation_json(store: Any, run_id: str) -> dict[str, Any]:
    """The "manipulation" object of a run's JSON: its own check, and under "control" the
    same for the control run it names (None when it names none; the control's id and why
    there is no check when the control is not in this store)."""
    out = run_manipulation(store, run_id).to_json()
    control = (store.run(run_id)["provenance"] or {}).get("control_run")
    if not control:
        out["control"] = None
    elif not store.has_run(str(control)):
        out["control"] = {"run_id": str(control), "reason": "the control run is not in this store"}
    else:
        out["control"] = {"run_id": str(control), **run_manipulation(store, str(control)).to_json()}
    return out
