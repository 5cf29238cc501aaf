"""Reading one cell of an imported run bundle, shared by its row checks and its verdict replay.

A bundle's cells come from Parquet files anyone can write: a number may arrive as an int, a
float, a numpy scalar, NULL or NaN, a pair's generators as JSON text or as a list. These
helpers turn a cell into the value the checks compare (`_whole`, `_num`, `_finite`,
`_generators`), apply the engine's counterexample rule (`_counts`) and compare stored floats
within `TOLERANCE`, so that `_bundle_rows.py` and `_bundle_check.py` read cells one way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.method import AuditConfig, is_counterexample

# Stored floats are compared with this absolute tolerance (Parquet keeps doubles exactly; the
# slack only absorbs a different summation order).
TOLERANCE = 1e-9


def _counts(d: float, drop: float, config: AuditConfig) -> bool:
    """The engine's counterexample rule: D > epsilon, and drop > min-drop when one is set."""
    return is_counterexample(d, config.epsilon, drop, config.min_drop)


def _generators(pair: Mapping[Any, Any]) -> list[dict[str, Any]]:
    raw = pair.get("generators")
    try:
        gens = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        raise InputError(f"pair {pair['pair_id']}: field generators is not JSON") from None
    if gens is None or (isinstance(gens, float) and math.isnan(gens)):
        return []
    if not isinstance(gens, list) or not all(isinstance(g, dict) for g in gens):
        raise InputError(f"pair {pair['pair_id']}: field generators must be a list of objects")
    return gens


def _finite(row: Mapping[Any, Any], key: str) -> float:
    value = _num(row.get(key))
    if value is None or not math.isfinite(value):
        raise InputError(f"pair {row.get('pair_id')}: field {key} must be a finite number")
    return value


def _whole(value: Any) -> int | None:
    """An int from an int-like cell (1, 1.0, numpy ints); None for anything else."""
    if isinstance(value, (bool, np.bool_)) or _is_null(value):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return int(f) if math.isfinite(f) and f.is_integer() else None


def _is_null(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def _num(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=TOLERANCE)


def _show(x: float | None) -> str:
    return "with no bound" if x is None else f"{x:.3g}"
