"""Organism mode (the reference code's practice): percentiles of D over every rewording of a
model organism known to be degraded.

Its own module because it reads a run differently from null mode: every D the run stored (a
score table's search and test rows, a model run's steps), not per-question maxima at the
audit's budgets. Low percentiles of an honest run give a negative or tiny epsilon, so this mode
is only for organisms (`_calibration.py`, docs/null-reading.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.null._calibration_records import (
    DEFAULT_PERCENTILES,
    Calibration,
    _check_source,
    _check_unique,
    check_name,
    percentile_key,
    source_provenance,
)
from eraudit_core.store import Store


def run_d_values(store: Store, run_id: str) -> tuple[np.ndarray, int]:
    """Every D of a run and how many pool rewordings were never scored (0 for a table run).

    Table run: D of every search and test row of its table, with each pair's stored
    denominator. Model run: D of every stored step."""
    pairs = store.pair_results(run_id)
    rows = store.table_rows(run_id)
    if not rows.empty:
        den = dict(zip(pairs["pair_id"], pairs["denominator"].astype(float), strict=True))
        rows = rows[rows["role"].isin(["search", "test"]) & rows["pair_id"].isin(den)]
        d = (rows["p_pre"] - rows["p_post"]).to_numpy(float) / rows["pair_id"].map(den).to_numpy(
            float
        )
        return d, 0
    steps = store.steps(run_id)
    d = steps["d"].to_numpy(float) if not steps.empty else np.array([], dtype=float)
    unscored = 0
    for gens in pairs.get("generators", pd.Series(dtype=object)):
        unscored += sum(max(0, int(g["available"]) - int(g["n"])) for g in gens or [])
    return d, unscored


def calibrate_epsilon(
    store: Store,
    run_id: str,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    *,
    name: str | None = None,
    save: bool = True,
    force: bool = False,
    allow_unverified: bool = False,
) -> Calibration:
    """Organism mode: percentiles of D over every rewording of `run_id` (numpy's default
    linear interpolation), stored as calibration `name` (default: the run id)."""
    qs = [float(q) for q in percentiles]
    if not qs or any(not (math.isfinite(q) and 0.0 <= q <= 100.0) for q in qs):
        raise InputError(f"--percentiles must be numbers in [0, 100], got {list(percentiles)}")
    if len(set(qs)) != len(qs):
        raise InputError(f"--percentiles must not repeat a value, got {list(percentiles)}")
    store.run(run_id)  # names an unknown run
    name = check_name(name or run_id)
    if save:
        _check_unique(store, name, force)
    source = source_provenance(store, run_id)
    warnings = _check_source(source, allow_unverified)
    d, unscored = run_d_values(store, run_id)
    if d.size == 0:
        raise InputError(f"run {run_id}: no scored rewording to calibrate epsilon on")
    values = np.percentile(d, qs)
    cal = Calibration(
        name=name,
        run_id=run_id,
        n=int(d.size),
        percentiles={percentile_key(q): float(v) for q, v in zip(qs, values, strict=True)},
        n_unscored=unscored,
        warnings=warnings,
        source=source,
    )
    if unscored:
        cal.warnings.append(
            f"run {run_id}: {unscored} pool rewordings were never scored (the audit stopped "
            "before them), so these percentiles cover only what it scored; "
            "--continue-after-counterexample without --target scores them all"
        )
    negative = [k for k, v in cal.percentiles.items() if v < 0]
    if negative:
        cal.warnings.append(
            f"{', '.join(negative)} of D is negative: epsilon < 0 is refused, so these cannot "
            "be used (low percentiles only make sense on a model organism known to be "
            "degraded; for an honest arm or a control use --null)"
        )
    if save:
        store.add_calibration(
            cal.name,
            run_id,
            cal.n,
            cal.percentiles,
            {
                "mode": "organism",
                "n_unscored": unscored,
                "source": "eraudit calibrate-epsilon",
                "source_run": source,
            },
        )
    return cal
