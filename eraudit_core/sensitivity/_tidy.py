"""The tidy judge-score table the sensitivity analysis reads (docs/design.md §8).

One row per rollout x judge x dimension, with columns `TIDY_COLUMNS`; validated where it enters
with errors that name the row and the column. `panel_scores` averages the judge panel per
rollout, the ordered outcome the models fit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from eraudit_core.errors import InputError

TIDY_COLUMNS = (
    "rollout",
    "behaviour",
    "condition",
    "auditor",
    "target",
    "judge",
    "dimension",
    "score",
)
DROPPED_COLUMNS = ("rollout", "source", "reason")


def pair_label(auditor: str, target: str) -> str:
    """The auditor-target pair as shown everywhere: `auditor -> target`."""
    return f"{auditor} -> {target}"


# --------------------------------------------------------------------------------------------
# Validation and panel averaging
# --------------------------------------------------------------------------------------------


def validate_tidy(table: pd.DataFrame, source: str = "<table>") -> pd.DataFrame:
    """Check the tidy table and return a clean copy (string keys, float scores).

    A missing score (NaN) is a judge refusal and is kept (it is skipped when averaging). A score
    that is not a number, or outside 1..10, is an error naming the row and field.
    """
    missing = [c for c in TIDY_COLUMNS if c not in table.columns]
    if missing:
        raise InputError(
            f"{source}: missing column(s) {', '.join(missing)}; the tidy table needs "
            f"{', '.join(TIDY_COLUMNS)}"
        )
    cols = list(TIDY_COLUMNS) + (["pair"] if "pair" in table.columns else [])
    out = table[cols].copy().reset_index(drop=True)
    for col in cols:
        if col == "score":
            continue
        blank = out[col].isna() | (out[col].astype(str).str.strip() == "")
        if blank.any():
            row = int(np.flatnonzero(blank.to_numpy())[0])
            raise InputError(f"{source}: data row {row + 1}, field '{col}': empty value")
        out[col] = out[col].astype(str)
    scores = pd.to_numeric(out["score"], errors="coerce")
    bad = scores.isna() & out["score"].notna() & (out["score"].astype(str).str.strip() != "")
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(
            f"{source}: data row {row + 1} (rollout {str(out.at[row, 'rollout'])}), field 'score': "
            f"{out.at[row, 'score']!r} is not a number"
        )
    out_of_range = scores.notna() & ((scores < 1) | (scores > 10))
    if out_of_range.any():
        row = int(np.flatnonzero(out_of_range.to_numpy())[0])
        raise InputError(
            f"{source}: data row {row + 1} (rollout {str(out.at[row, 'rollout'])}), field 'score': "
            f"{scores.iloc[row]} is outside the judge scale 1..10"
        )
    out["score"] = scores.astype(float)
    dup = out.duplicated(subset=["rollout", "judge", "dimension"], keep=False)
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(
            f"{source}: data row {row + 1}: rollout {str(out.at[row, 'rollout'])} has more than one "
            f"score from judge {str(out.at[row, 'judge'])} on dimension {str(out.at[row, 'dimension'])}"
        )
    for col in ("behaviour", "condition", "auditor", "target") + (
        ("pair",) if "pair" in out.columns else ()
    ):
        n_values = out.groupby("rollout")[col].nunique()
        if (n_values > 1).any():
            rollout = str(n_values[n_values > 1].index[0])
            values = sorted(out.loc[out["rollout"] == rollout, col].unique())
            raise InputError(
                f"{source}: rollout {rollout}, field '{col}': one rollout has several values "
                f"({', '.join(values)})"
            )
    if "pair" not in out.columns:
        out["pair"] = [pair_label(a, t) for a, t in zip(out["auditor"], out["target"], strict=True)]
    return out


def panel_scores(
    tidy: pd.DataFrame, dimension: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Average each rollout's behaviour score over the judges that scored it.

    The behaviour score is the rows whose dimension equals the rollout's behaviour, or
    `dimension` when given. Returns (panel, dropped): panel has columns rollout, behaviour,
    condition, pair, n_judges, score; dropped has rollout, source, reason.
    """
    keys = tidy.drop_duplicates("rollout")[["rollout", "behaviour", "condition", "pair"]]
    wanted = tidy["dimension"] == (dimension if dimension else tidy["behaviour"])
    rows = tidy[wanted & tidy["score"].notna()]
    agg = rows.groupby("rollout")["score"].agg(["mean", "count"]).reset_index()
    agg.columns = ["rollout", "score", "n_judges"]
    panel = keys.merge(agg, on="rollout", how="left")
    lost = panel["score"].isna()
    dim_text = f"dimension '{dimension}'" if dimension else "its behaviour dimension"
    dropped = pd.DataFrame(
        {
            "rollout": panel.loc[lost, "rollout"],
            "source": "analysis",
            "reason": f"no judge score on {dim_text} (all judges refused or dimension absent)",
        },
        columns=list(DROPPED_COLUMNS),
    )
    panel = panel[~lost].copy()
    panel["n_judges"] = panel["n_judges"].astype(int)
    return panel.reset_index(drop=True), dropped.reset_index(drop=True)
