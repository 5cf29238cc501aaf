"""Epsilon from a stored run: a null threshold from a control arm, or the organism practice.

Two modes, named as such everywhere (docs/null-reading.md):

* **null** (for honest arms and controls): epsilon is the `level` quantile, over the control's
  questions, of each question's largest D among the paraphrases an audit at the control's
  budgets would score (every search paraphrase up to the search budget and, per test
  generator, the first `test_budget` of the run's drawn order). On an arm exchangeable with
  the control, about 1 - level of questions then read degraded; the quantile depends on k and
  the budgets, so an audit that uses it must match them.
* **organism** (the reference code's practice): percentiles (p10 / p25 / p50) of D over every
  rewording of a model organism known to be degraded. Low percentiles of an honest run give a
  negative or tiny epsilon, so this mode is only for organisms.

Every calibration records where it came from (local or imported, derived or not, the source's
checkpoint fingerprints); an imported or derived source is refused unless the caller allows
unverified sources, and a run that uses such a calibration says so. Epsilon < 0 is refused.
Calibrating on the audited run itself is selection and refused unless allowed, judged by
content (the post-adaptation checkpoint's fingerprint; a score table's texts and
probabilities), never by pair ids.

This module turns a stored calibration into an audit's epsilon (`epsilon_from`,
`epsilon_from_sentence`). The records and source checks live in `_calibration_records.py`,
the two modes in `_calibration_organism.py` and `_calibration_null.py`, the selection check
in `_calibration_overlap.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.null._calibration_overlap import (
    AuditedContent,
    mismatch_sentence,
    null_mismatches,
    selection_overlap,
)
from eraudit_core.null._calibration_records import (
    NULL_KEY,
    NULL_SETTINGS,
)
from eraudit_core.store import Store

_FROM = re.compile(r"^(?P<name>.+):(?P<key>p\d+(?:\.\d+)?)$")


def epsilon_from(
    store: Store,
    spec: str,
    audited: AuditedContent | None = None,
    *,
    settings: Mapping[str, Any] | None = None,
    allow_selection: bool = False,
    allow_unverified: bool = False,
) -> tuple[float, dict[str, Any], list[str]]:
    """(epsilon, provenance record, warnings) for `--epsilon-from NAME` (a null calibration)
    or `NAME:p25` (an organism calibration's percentile).

    Refused (InputError): epsilon < 0; a null calibration whose k or budgets differ from the
    audit's `settings`, or whose run stands on another base, other generators or other
    paraphrases than the `audited` content (`null_mismatches`); a source that was imported or derived unless `allow_unverified`; a
    calibration made on the audited content itself unless `allow_selection`."""
    text = spec.strip()
    m = _FROM.match(text)
    name, key = (m["name"], m["key"]) if m else (text, None)
    cal = store.calibration(name)
    prov = cal.get("provenance") or {}
    mode = prov.get("mode") or ("null" if NULL_KEY in cal["percentiles"] else "organism")
    if key is None:
        if mode != "null":
            keys = ", ".join(f"{name}:{k}" for k in cal["percentiles"])
            raise InputError(
                f"calibration {name!r} is an organism calibration (percentiles of D): name a "
                f"percentile ({keys})"
            )
        key = NULL_KEY
    elif mode == "null":
        raise InputError(
            f"calibration {name!r} is a null calibration: use --epsilon-from {name} (no percentile)"
        )
    if key not in cal["percentiles"]:
        raise InputError(
            f"calibration {name!r} has no {key} (it has {', '.join(cal['percentiles'])})"
        )
    value = float(cal["percentiles"][key])
    if not (math.isfinite(value) and value >= 0):
        raise InputError(
            f"epsilon from {text} would be {value:.6g}: epsilon must be >= 0 (a negative "
            "epsilon makes every question degraded); low percentiles of D only make sense on "
            "a model organism known to be degraded; for an honest arm or a control use "
            "calibrate-epsilon --null"
        )
    if mode == "null" and settings is not None:
        diffs = [
            f"{s} {settings[s]!r} (calibration: {prov.get(s)!r})"
            for s in NULL_SETTINGS
            if s in settings and prov.get(s) is not None and float(settings[s]) != float(prov[s])
        ]
        if diffs:
            raise InputError(
                f"calibration {name!r} was made at other settings than this audit: "
                + "; ".join(diffs)
                + ". The null threshold depends on k and the budgets; calibrate again at "
                "this audit's settings or audit at the calibration's"
            )
    warnings: list[str] = []
    source = prov.get("source_run") or {}
    if source and not source.get("verified", True):
        if not allow_unverified:
            raise InputError(
                f"calibration {name!r} was made on run {source.get('run_id')}, which is "
                f"{source.get('origin')}{', derived' if source.get('derived') else ''} and not "
                "verified by this store; pass --allow-unverified to use it anyway (recorded)"
            )
        warnings.append(
            f"epsilon from calibration {name!r} rests on an unverified run "
            f"{source.get('run_id')} ({source.get('origin')}"
            f"{', derived' if source.get('derived') else ''})"
        )
    overlap = selection_overlap(store, str(cal["run_id"]), audited) if audited else 0
    if overlap:
        what = (
            f"holds {overlap} of the questions being audited with the same texts and probabilities"
            if audited is not None and audited.table is not None
            else "audited the same post-adaptation checkpoint"
        )
        if not allow_selection:
            raise InputError(
                f"calibration {name!r} was made on run {cal['run_id']}, which {what}: epsilon "
                "chosen on the data it judges is selection; pass --allow-selection to do it "
                "anyway (recorded and shown in every report)"
            )
        warnings.append(
            f"epsilon from calibration {name!r}: its run {cal['run_id']} {what}; that is "
            "selection (allowed by --allow-selection, recorded)"
        )
    if mode == "null" and audited is not None:
        mismatches = null_mismatches(store, str(cal["run_id"]), audited)
        if mismatches:
            raise InputError(
                f"calibration {name!r}: "
                + mismatch_sentence(str(cal["run_id"]), mismatches)
                + "; calibrate on a control that matches"
            )
    record = {
        "calibration": name,
        "mode": mode,
        "percentile": key if mode == "organism" else None,
        "level": prov.get("level") if mode == "null" else None,
        "value": value,
        "calibration_run": cal["run_id"],
        "n": int(cal["n"]),
        "n_overlap": overlap,
        "selection": bool(overlap),
        "source_run": source or None,
        "unverified": bool(source) and not source.get("verified", True),
    }
    return value, record, warnings


def epsilon_from_sentence(record: Mapping[str, Any], epsilon: float) -> str:
    """Where a run's epsilon came from, in one sentence (report, headline notes, CLI)."""
    if record.get("mode") == "null":
        head = (
            f"Epsilon {epsilon:g} is the null threshold of control run "
            f"{record.get('calibration_run')} (calibration {record.get('calibration')!r}: the "
            f"{record.get('level')} quantile of its questions' largest D)"
        )
    else:
        head = (
            f"Epsilon {epsilon:g} is the {record.get('percentile')} of D on calibration run "
            f"{record.get('calibration_run')} (calibration {record.get('calibration')!r}, "
            "organism mode, an assumption beyond the paper)"
        )
    if record.get("unverified"):
        src = record.get("source_run") or {}
        head += (
            f"; its source run is {src.get('origin')}"
            f"{' and derived' if src.get('derived') else ''}, not verified by this store"
        )
    if record.get("selection"):
        head += (
            "; it was calibrated on the data it judges (selection, allowed by --allow-selection)"
        )
    return head + "."
