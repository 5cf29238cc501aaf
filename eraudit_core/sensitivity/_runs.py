"""The sensitivity analysis over stored ER-Audit runs (docs/design.md §8, last paragraph).

Outcome per question (counterexample found, or binned max D) by paraphrase-generator condition
and verifier pair: does the audit's verdict depend on the generator's configuration?
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.sensitivity._tidy import DROPPED_COLUMNS
from eraudit_core.types import Verdict

# --------------------------------------------------------------------------------------------
# ER-Audit runs as a sensitivity table
# --------------------------------------------------------------------------------------------

RUN_PAIR_COLUMNS = (
    "run_id",
    "run_label",
    "generator_condition",
    "checkpoint_pair",
    "pair_id",
    "max_d",
    "n_counterexamples",
    "status",
)
DEFAULT_MAX_D_EDGES = (0.0, 0.5, 1.0, 2.0)
FINISHED_STATUSES = tuple(Verdict)


def outcomes_from_run_pairs(
    runs: pd.DataFrame,
    outcome: str = "counterexample",
    max_d_edges: Sequence[float] = DEFAULT_MAX_D_EDGES,
    source: str = "<runs>",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Turn per-question ER-Audit results into a tidy sensitivity table.

    One row per audited question per run becomes one rollout: condition = the run's
    paraphrase-generator condition, pair = the checkpoint pair, judge = "er-audit" (one judge,
    so no agreement statistic). The outcome is either
    - "counterexample": score 2 if a counterexample was found (n_counterexamples > 0 or status
      degraded), else 1; behaviour "counterexample_found";
    - "max_d": max D binned on `max_d_edges` (right-closed), score 1 for D <= edges[0] up to
      len(edges) + 1; behaviour "max_d_binned".
    The same question in several runs is treated as independent rollouts (no question effect).
    Rows of unfinished runs, or with no max D for the max_d outcome, are returned in `dropped`.
    Returns (tidy, dropped).
    """
    missing = [c for c in RUN_PAIR_COLUMNS if c not in runs.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {', '.join(missing)}")
    if outcome not in ("counterexample", "max_d"):
        raise InputError(f"outcome must be 'counterexample' or 'max_d', not {outcome!r}")
    edges = np.asarray(list(max_d_edges), dtype=float)
    if outcome == "max_d" and (len(edges) == 0 or np.any(np.diff(edges) <= 0)):
        raise InputError(f"max_d_edges must be increasing, got {list(max_d_edges)}")
    df = runs.reset_index(drop=True)
    rollout = df["run_id"].astype(str) + "/" + df["pair_id"].astype(str)
    dup = rollout.duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(
            f"{source}: data row {i + 1}: run {str(df.at[i, 'run_id'])} lists question "
            f"{str(df.at[i, 'pair_id'])} twice"
        )
    status = df["status"].astype(str).str.lower()
    unfinished = ~status.isin(FINISHED_STATUSES)
    reasons = pd.Series("", index=df.index)
    reasons[unfinished] = "run status " + status[unfinished] + " is not a finished verdict"
    max_d = pd.to_numeric(df["max_d"], errors="coerce")
    n_ce = pd.to_numeric(df["n_counterexamples"], errors="coerce")
    if outcome == "max_d":
        no_d = ~unfinished & ~pd.Series(np.isfinite(max_d.to_numpy(dtype=float)), index=df.index)
        reasons[no_d] = "no max D recorded"
        behaviour = "max_d_binned"
        score = pd.Series(
            np.searchsorted(edges, max_d.fillna(0).to_numpy(), side="left") + 1,
            index=df.index,
            dtype=float,
        )
    else:
        no_n = ~unfinished & n_ce.isna() & (status != Verdict.DEGRADED)
        reasons[no_n] = "no counterexample count recorded"
        behaviour = "counterexample_found"
        found = (n_ce.fillna(0) > 0) | (status == Verdict.DEGRADED)
        score = found.astype(float) + 1.0
    keep = reasons == ""
    pair = df["checkpoint_pair"].astype(str)
    tidy = pd.DataFrame(
        {
            "rollout": rollout[keep],
            "behaviour": behaviour,
            "condition": df.loc[keep, "generator_condition"].astype(str),
            "auditor": "er-audit",
            "target": pair[keep],
            "judge": "er-audit",
            "dimension": behaviour,
            "score": score[keep],
            "pair": pair[keep],
        }
    ).reset_index(drop=True)
    dropped = pd.DataFrame(
        {"rollout": rollout[~keep], "source": source, "reason": reasons[~keep]},
        columns=list(DROPPED_COLUMNS),
    ).reset_index(drop=True)
    return tidy, dropped
