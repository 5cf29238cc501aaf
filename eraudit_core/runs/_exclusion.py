"""A run re-derived without the rewordings an auditor labelled not meaning-preserving.

Excluding a rewording after its score was seen is a selection: dropping the counterexamples
one dislikes would turn any degraded question into a pass. So exclusion never changes the
run it reads. It writes a NEW run, linked to the old one (`provenance.derived_from`), whose
verdicts come from the old run's stored scores through `verdict_from_steps` (the engine's own
stopping rules and bounds) with the excluded steps removed from the sequences and from the
pools (M shrinks by the excluded test rewordings). Its provenance records what was excluded,
by whom and when, and it withholds every certificate: a question whose re-derived bound
reaches p* reads "passed" with that bound, and every view says "N rewordings excluded after
their scores were seen". Its steps are those the re-derivation consumed, numbered 1.. again.

When removing a rewording means a fresh audit would need a draw the old run never scored (a
generator that stopped at the excluded counterexample), the question's verdict is unknown:
it is stored as inconclusive with the stop "needs rewordings that were not scored".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.method import (
    AuditConfig,
    GeneratorTest,
    is_counterexample,
    table_steps,
    verdict_from_steps,
)
from eraudit_core.runs._record import new_run_id
from eraudit_core.store import Store, write_run_rows
from eraudit_core.types import ACTIVE_RUN_STATUSES, RunStatus, Verdict

NOT_SCORED_STOP = "needs rewordings that were not scored"
STEP_KEY = ("pair_id", "stage", "generator", "t")


def excluded_after_seen(provenance: Mapping[str, Any]) -> int:
    """How many rewordings a derived run (its provenance) excluded after their scores were
    seen (0 if none)."""
    derived = provenance.get("derived_from")
    return int(derived.get("n_excluded", 0)) if isinstance(derived, Mapping) else 0


def selection_note(provenance: Mapping[str, Any]) -> str | None:
    """The sentence every view of a derived run (its provenance) shows, or None for an
    ordinary run."""
    n = excluded_after_seen(provenance)
    if not n:
        return None
    parent = provenance["derived_from"]["run_id"]
    return (
        f"{n} rewording{'s' if n != 1 else ''} excluded after their scores were seen "
        f"(derived from run {parent}). Choosing what to exclude after seeing the scores is a "
        "selection, so this run certifies nothing: its bounds are shown, never as a certificate."
    )


def _key(r: Mapping[Any, Any]) -> tuple[str, int, str, int]:
    return (str(r["pair_id"]), int(r["stage"]), str(r["generator"]), int(r["t"]))


def _renumbered(steps: pd.DataFrame) -> pd.DataFrame:
    """Steps in each (stage, generator) sequence numbered 1.. again, order kept; the old
    run's per-step bounds belong to the old numbering, so they are cleared."""
    steps = steps.sort_values(["stage", "generator", "t"], kind="stable").copy()
    steps["t"] = steps.groupby(["stage", "generator"]).cumcount() + 1
    steps["bound"] = float("nan")
    steps["bound_tolerant"] = float("nan")
    return steps


def _pair_row(
    old: Mapping[Any, Any], kept: pd.DataFrame, removed: pd.DataFrame, config: AuditConfig
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The derived run's record of one question and the steps its re-derivation consumed."""
    generators = []
    for g in old.get("generators") or []:
        n_removed = int(((removed["stage"] == 2) & (removed["generator"] == g["generator"])).sum())
        generators.append({**g, "available": max(0, int(g["available"]) - n_removed)})
    tests: list[GeneratorTest] = []
    verdict = verdict_from_steps(
        {"generators": generators, "stage": old.get("stage")}, kept, config, tests_out=tests
    )
    consumed = {t.generator: t.n for t in tests}
    stage2 = kept["stage"] == 2
    position = kept["t"]
    keep = ~stage2 | (position <= kept["generator"].map(consumed).fillna(0))
    kept = kept[keep]
    records = []
    for t in tests:
        rec = t.to_dict()
        if not t.stop:
            rec["stop"] = NOT_SCORED_STOP
        records.append(rec)
    status = Verdict.INCONCLUSIVE if verdict is None else verdict.status
    if status == Verdict.CERTIFIED:
        status = Verdict.PASSED  # a certificate is withheld: the exclusion was chosen after seeing
    worst = kept.iloc[int(np.argmax(kept["d"].to_numpy(dtype=float)))] if not kept.empty else None
    row = dict(old)
    row.update(
        status=status,
        bound_common=0.0 if verdict is None else verdict.bound_common,
        bound=0.0 if verdict is None else verdict.bound,
        bound_tolerant=None if verdict is None else verdict.bound_tolerant,
        target_reached=False if verdict is None else verdict.target_reached,
        generators=records,
        n_counterexamples=int(kept["is_counterexample"].sum()),
        n_search=int((kept["stage"] == 1).sum()),
        n_test=int((kept["stage"] == 2).sum()),
        max_d=None if worst is None else float(worst["d"]),
    )
    for field in ("stage", "generator", "t", "text", "p_pre", "p_post", "prompt"):
        value = None if worst is None else worst.get(field)
        row[f"worst_{field}"] = None if value is None or value != value else value
    row["worst_drop"] = None if worst is None else float(worst["prob_drop"])
    return row, kept


def derive_without(
    store: Store,
    run_id: str,
    excluded: Sequence[Mapping[str, Any]],
    *,
    author: str,
    label: str | None = None,
) -> str:
    """Write a new run: `run_id` re-derived without the `excluded` steps (records with
    pair_id, stage, generator, t, and optionally text/author/created_at of their label).
    Returns the new run's id; the old run is not touched."""
    run = store.run(run_id)
    if run["status"] in ACTIVE_RUN_STATUSES:
        raise InputError(f"run {run_id} is still {run['status']}: exclude after it ends")
    if not excluded:
        raise InputError(f"run {run_id}: nothing to exclude (label a rewording first)")
    config = AuditConfig.from_dict(run["config"])
    pairs = store.pair_results(run_id)
    stored = store.steps(run_id)
    keys = {_key(e) for e in excluded}
    unknown = keys - {_key(r) for r in stored[list(STEP_KEY)].to_dict("records")}
    if unknown:
        pid, stage, gen, t = sorted(unknown)[0]
        raise InputError(
            f"run {run_id}: no scored rewording at pair {pid}, stage {stage}, generator {gen}, "
            f"t {t}"
        )
    table = store.table_rows(run_id)
    if not table.empty and config.draw_seed is None:
        # a table run keeps every row of its table: a fresh audit can draw past the run's stops
        full = table_steps(table, pairs, config)
        extra = full.merge(stored[list(STEP_KEY)], on=list(STEP_KEY), how="left", indicator=True)
        extra = extra[extra["_merge"] == "left_only"].drop(columns="_merge")
        stored = pd.concat([stored, extra], ignore_index=True)
    is_out = pd.Series([_key(r) in keys for r in stored.to_dict("records")], index=stored.index)
    new_id = new_run_id()
    now = datetime.now(UTC).replace(tzinfo=None)
    rows, steps = [], []
    for old in pairs.to_dict("records"):
        mine = stored["pair_id"] == old["pair_id"]
        kept = _scored(_renumbered(stored[mine & ~is_out]), config)
        row, consumed = _pair_row(old, kept, stored[mine & is_out], config)
        rows.append(row)
        steps.append(consumed.assign(recorded_at=now))
    provenance = dict(run.get("provenance") or {})
    # a run derived from a derived run counts every exclusion along the chain: the scores of
    # all of them were seen before they were left out
    prior = provenance.get("derived_from")
    prior = prior if isinstance(prior, Mapping) else {}
    before = list(prior.get("excluded") or [])
    n = int(prior.get("n_excluded", 0)) + len(keys)
    provenance["derived_from"] = {
        "run_id": run_id,
        "n_excluded": n,
        "n_excluded_here": len(keys),
        "original_run_id": prior.get("original_run_id", prior.get("run_id", run_id)),
        "excluded": before
        + [{k: (str(v) if k == "created_at" else v) for k, v in dict(e).items()} for e in excluded],
        "by": author,
        "at": now.isoformat(timespec="seconds"),
        "certificate": "withheld: rewordings were excluded after their scores were seen",
    }
    new_run = dict(run)
    new_run.update(
        run_id=new_id,
        config=json.dumps(run["config"]),
        label=label or f"{run.get('label') or run_id} minus {n} excluded after seen",
        status=RunStatus.DONE,
        provenance=json.dumps(provenance, ensure_ascii=False, default=str),
        created_at=now,
        started_at=now,
        finished_at=now,
        error=None,
        queries_scored=0,
        queries_cached=0,
    )
    for col in ("owner_pid", "owner_host", "owner_token", "heartbeat_at", "traffic"):
        new_run[col] = None
    pair_frame = pd.DataFrame(rows)
    pair_frame["run_id"] = new_id
    pair_frame["generators"] = pair_frame["generators"].map(json.dumps)
    step_frame = pd.concat(steps, ignore_index=True)
    step_frame["run_id"] = new_id
    write_run_rows(
        store,
        {
            "runs": pd.DataFrame([new_run]),
            "run_pairs": pair_frame,
            "run_steps": step_frame,
            "benchmarks": pd.DataFrame(),
            "paraphrases": pd.DataFrame(columns=["provenance"]),
            "checkpoints": pd.DataFrame(columns=["fingerprint"]),
            "score_cache": pd.DataFrame(),
        },
    )
    return new_id


def _scored(kept: pd.DataFrame, config: AuditConfig) -> pd.DataFrame:
    """Each kept step with its drop and whether it is a counterexample under `config`."""
    drop = kept["p_pre"].astype(float) - kept["p_post"].astype(float)
    return kept.assign(
        prob_drop=drop,
        is_counterexample=[
            is_counterexample(d, config.epsilon, dr, config.min_drop)
            for d, dr in zip(kept["d"].astype(float), drop, strict=True)
        ],
    )
