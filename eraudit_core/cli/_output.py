"""What the audit subcommands print, shared by `_audit.py` and `_runs.py`: the audit-table
JSON, tables, progress and warning lines. Scripts depend on the JSON printed here: keep its keys
stable, and bump `JSON_SCHEMA_VERSION` when a key's meaning changes (2: the four verdicts
degraded / certified / passed / inconclusive). Keys added without changing others (status,
n_pairs, complete) keep the version."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from eraudit_core.text import terminal_safe
from eraudit_core.types import RunStatus

JSON_SCHEMA_VERSION = 2


def _num(x: Any) -> Any:
    """JSON-safe number: NaN/None become null."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return x
    return None if math.isnan(f) else f


def pair_summary_json(
    store: Any, run_id: str, control_seeds: list[str] | None = None
) -> dict[str, Any]:
    """The stable audit-table JSON: run id, the assumptions the verdicts rest on (min-drop,
    noise floor, where epsilon came from, re-runs), each checkpoint's label mass, whether the
    adaptation took (`manipulation_json`, the control's too), the reading against the named
    control (`null`: counts, primary and secondary tests; None without a control), plus one
    object a pair with its evidence (worst_drop, den, amplified, within_noise) and its null
    verdict and detail (None without a control). `control_seeds`: other runs of the control
    recipe to read against too (default: the run's own)."""
    from eraudit_core.method import RunRecord, manipulation_json, pair_evidence
    from eraudit_core.null import null_json, null_reading
    from eraudit_core.runs import rerun_note, run_label_mass

    df = store.pair_results(run_id)
    run = store.run(run_id)
    record = RunRecord.from_stored(run)
    reading = null_reading(store, run_id, seeds=control_seeds or None)
    null_pairs = reading["pairs"] if reading else {}
    evidence = [pair_evidence(r, record) for r in df.to_dict("records")]
    pairs = [
        {
            "pair_id": r["pair_id"],
            "status": r["status"],
            "stage": None if r["stage"] is None or _num(r["stage"]) is None else int(r["stage"]),
            "max_d": _num(r["max_d"]),
            "n_counterexamples": int(r["n_counterexamples"]),
            "bound": _num(r["bound"]),
            "bound_tolerant": _num(r["bound_tolerant"]),
            "n_test": int(r["n_test"]),
            "gain": _num(r["gain"]),
            "den": _num(ev.den),
            "amplified": ev.amplified,
            "worst_drop": _num(ev.worst_drop),
            "worst_text": ev.worst_text,
            "within_noise": ev.within_noise,
            "null_verdict": (null_pairs.get(str(r["pair_id"])) or {}).get("null_verdict"),
            "null_detail": (null_pairs.get(str(r["pair_id"])) or {}).get("null_detail"),
        }
        for r, ev in zip(df.to_dict("records"), evidence, strict=True)
    ]
    n_pairs = int(run["n_pairs"] or 0)
    prov = run["provenance"]
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "run_id": run_id,
        "status": run["status"],
        "imported_from": run.get("imported_from"),
        "n_pairs": n_pairs,
        "complete": run["status"] == RunStatus.DONE and len(pairs) >= n_pairs,
        "min_drop": record.config.min_drop,
        "noise_floor": (prov.get("noise_floor") or {}).get("value"),
        "epsilon_from": prov.get("epsilon_from"),
        "control_run": prov.get("control_run"),
        "null": null_json(reading),
        "rerun": rerun_note(prov),
        "label_mass": run_label_mass(store, run_id),
        "manipulation": manipulation_json(store, run_id),
        "pairs": pairs,
    }


def _print(obj: Any, as_json: bool) -> None:
    if as_json:
        json.dump(obj, sys.stdout, default=str)
        sys.stdout.write("\n")
    else:
        import pandas as pd

        if isinstance(obj, pd.DataFrame):
            print(obj.map(terminal_safe).to_string(index=False) if not obj.empty else obj)
        else:
            print(json.dumps(obj, indent=2, default=str))


def _print_warning(message: str) -> None:
    print(terminal_safe(f"eraudit: warning: {message}"), file=sys.stderr)


def _print_progress(p: Any) -> None:
    bound = "" if p.bound is None else f" L={p.bound:.3f}"
    line = (
        f"[{p.pairs_done}/{p.n_pairs}] {p.pair_id} stage {p.stage} {p.generator} t={p.t}{bound} "
        f"({p.queries_scored} scored, {p.queries_cached} cached, {p.elapsed_s:.0f}s)"
    )
    print(terminal_safe(line), file=sys.stderr)
