"""Epsilon calibrated from a calibration run, the reference code's practice (issue 19 item 4).

The reference code sets epsilon from percentiles (p10 / p25 / p50) of D on a model organism.
Here the calibration run can be a model organism, an honest arm or a null run: every D of the
run counts (every search and test row of a score table; every stored score of a model run, with
a warning naming how many pool rewordings were never scored). The result is stored as a named
calibration with its provenance, and a later run that takes epsilon from it (`NAME:p25`)
records where its epsilon came from. Beyond the paper, stated as an assumption; calibrating
on the very questions being audited is selection, so that is detected and said.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.store import Store

DEFAULT_PERCENTILES = (10.0, 25.0, 50.0)


@dataclass(frozen=True)
class Calibration:
    """Percentiles of D over a calibration run. Keys of `percentiles` are 'p10', 'p25', ..."""

    name: str
    run_id: str
    n: int
    percentiles: dict[str, float]
    n_unscored: int = 0
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "name": self.name,
            "n": self.n,
            "percentiles": self.percentiles,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentile_key(q: float) -> str:
    return f"p{q:g}"


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
) -> Calibration:
    """Percentiles of D over every rewording of `run_id` (numpy's default linear
    interpolation), stored as calibration `name` (default: the run id)."""
    qs = [float(q) for q in percentiles]
    if not qs or any(not 0.0 <= q <= 100.0 for q in qs):
        raise InputError(f"--percentiles must be numbers in [0, 100], got {list(percentiles)}")
    store.run(run_id)  # names an unknown run
    d, unscored = run_d_values(store, run_id)
    if d.size == 0:
        raise InputError(f"run {run_id}: no scored rewording to calibrate epsilon on")
    values = np.percentile(d, qs)
    cal = Calibration(
        name=name or run_id,
        run_id=run_id,
        n=int(d.size),
        percentiles={percentile_key(q): float(v) for q, v in zip(qs, values, strict=True)},
        n_unscored=unscored,
    )
    if unscored:
        cal.warnings.append(
            f"run {run_id}: {unscored} pool rewordings were never scored (the audit stopped "
            "before them), so these percentiles cover only what it scored; "
            "--continue-after-counterexample without --target scores them all"
        )
    if save:
        store.add_calibration(
            cal.name,
            run_id,
            cal.n,
            cal.percentiles,
            {"n_unscored": unscored, "source": "eraudit calibrate-epsilon"},
        )
    return cal


_FROM = re.compile(r"^(?P<name>.+):(?P<key>p\d+(?:\.\d+)?)$")


def epsilon_from(
    store: Store, spec: str, audited_pair_ids: Sequence[str]
) -> tuple[float, dict[str, Any], list[str]]:
    """(epsilon, provenance record, warnings) for `--epsilon-from NAME:p25`.

    Warns when the calibration run shares questions with the audited ones: choosing epsilon
    on the questions being audited is selection, and the record says so for the report."""
    m = _FROM.match(spec.strip())
    if not m:
        raise InputError(f"--epsilon-from must look like NAME:p25, got {spec!r}")
    cal = store.calibration(m["name"])
    if m["key"] not in cal["percentiles"]:
        raise InputError(
            f"calibration {m['name']!r} has no {m['key']} (it has {', '.join(cal['percentiles'])})"
        )
    value = float(cal["percentiles"][m["key"]])
    calibrated_on = set(store.pair_results(cal["run_id"])["pair_id"])
    overlap = sorted(calibrated_on & set(audited_pair_ids))
    warnings = []
    if overlap:
        warnings.append(
            f"epsilon from calibration {m['name']!r} was calibrated on {len(overlap)} of the "
            "questions being audited: that is selection (epsilon chosen on the data it judges)"
        )
    record = {
        "calibration": m["name"],
        "percentile": m["key"],
        "value": value,
        "calibration_run": cal["run_id"],
        "n": int(cal["n"]),
        "n_overlap": len(overlap),
        "selection": bool(overlap),
    }
    return value, record, warnings
