"""What a stored epsilon calibration is and where it came from, shared by both modes.

The two records a calibration returns (`Calibration` for organism mode, `NullCalibration` for
null mode), the rules for a calibration's name and its percentiles, and the checks both modes
make before calibrating: the source run's provenance (local or imported, derived or not, its
checkpoints' fingerprints), the refusal of an unverified source unless allowed, and of a name
already taken unless forced. The modes themselves live in `_calibration_organism.py` and
`_calibration_null.py`; `_calibration.py` describes them (docs/null-reading.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.method import null_threshold_fields
from eraudit_core.store import Store

DEFAULT_PERCENTILES = (10.0, 25.0, 50.0)
DEFAULT_NULL_LEVEL = 0.95
NAME_RULE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
NULL_KEY = "null"
# Settings a null threshold depends on: an audit using it must have the same values.
NULL_SETTINGS = null_threshold_fields()


@dataclass(frozen=True)
class Calibration:
    """Organism mode: percentiles of D over a run. Keys of `percentiles` are 'p10', 'p25', ..."""

    name: str
    run_id: str
    n: int
    percentiles: dict[str, float]
    n_unscored: int = 0
    warnings: list[str] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "name": self.name,
            "mode": "organism",
            "n": self.n,
            "percentiles": self.percentiles,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class NullCalibration:
    """Null mode: the `level` quantile of the control's per-question maxima of D."""

    name: str
    run_id: str
    level: float
    epsilon: float
    n_questions: int
    search_budget: int
    test_budget: int
    k: float
    firm: bool = False
    n_unscored: int = 0
    warnings: list[str] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "name": self.name,
            "mode": "null",
            "level": self.level,
            "epsilon": self.epsilon,
            "n_questions": self.n_questions,
            "search_budget": self.search_budget,
            "test_budget": self.test_budget,
            "k": self.k,
        }


def percentile_key(q: float) -> str:
    return f"p{q:g}"


def check_name(name: str) -> str:
    """A calibration name matches [A-Za-z0-9_.-]{1,64}: one meaning in `NAME` and `NAME:p25`."""
    if not isinstance(name, str) or not NAME_RULE.match(name):
        shown = name if not isinstance(name, str) or len(name) <= 80 else name[:80] + "..."
        raise InputError(
            f"calibration name must be 1-64 characters from A-Z a-z 0-9 _ . - , got {shown!r}"
        )
    return name


def parse_percentiles(text: str) -> list[float]:
    """'10,25,50' -> [10.0, 25.0, 50.0]; an empty item, a non-number, a value outside
    [0, 100] or a repeat is refused by position."""
    items = str(text).split(",")
    out: list[float] = []
    for i, raw in enumerate(items, start=1):
        item = raw.strip()
        if not item:
            raise InputError(f"--percentiles: item {i} of {text!r} is empty")
        try:
            q = float(item)
        except ValueError:
            raise InputError(f"--percentiles: item {i} ({item!r}) is not a number") from None
        if not (math.isfinite(q) and 0.0 <= q <= 100.0):
            raise InputError(f"--percentiles: item {i} ({item!r}) must lie in [0, 100]")
        if q in out:
            raise InputError(f"--percentiles: item {i} ({item!r}) repeats an earlier one")
        out.append(q)
    return out


def source_provenance(store: Store, run_id: str) -> dict[str, Any]:
    """Where a calibration's run came from: local or imported, verified or not, derived or
    not, and its checkpoints' fingerprints (stored with the calibration)."""
    run = store.run(run_id)
    imported = run.get("imported_from")
    derived = (run.get("provenance") or {}).get("derived_from")
    return {
        "run_id": run_id,
        "origin": "imported" if imported else "local",
        "verified": not imported and not derived,
        "imported_from": imported.get("file") if isinstance(imported, Mapping) else None,
        "derived": bool(derived),
        "derived_from": derived.get("run_id") if isinstance(derived, Mapping) else None,
        "pre_fingerprint": run.get("pre_fingerprint"),
        "post_fingerprint": run.get("post_fingerprint"),
        "status": run.get("status"),
    }


def _check_source(source: Mapping[str, Any], allow_unverified: bool) -> list[str]:
    """Refuse an imported or derived source unless allowed; the warning when allowed."""
    if source.get("verified"):
        return []
    what = (
        f"imported from {source.get('imported_from')!r} (not verified by this store)"
        if source.get("origin") == "imported"
        else f"derived from run {source.get('derived_from')} after rewordings were excluded"
    )
    if not allow_unverified:
        raise InputError(
            f"run {source['run_id']} is {what}: calibrating epsilon on it would carry its "
            "numbers into new audits; pass --allow-unverified to do it anyway (recorded)"
        )
    return [f"calibration source run {source['run_id']} is {what}; recorded as unverified"]


def _check_unique(store: Store, name: str, force: bool) -> None:
    cals = store.calibrations()
    if not force and not cals.empty and name in set(cals["name"]):
        raise InputError(
            f"a calibration named {name!r} already exists; choose another --name or pass "
            "--force to replace it"
        )
