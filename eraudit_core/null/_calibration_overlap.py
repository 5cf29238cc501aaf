"""What an audit shares with a stored calibration or control run, judged by content.

Two questions are asked when a calibration or a control is used, not when one is made:

* **Selection** (`selection_overlap`): does the calibration's run hold the content being
  audited? Calibrating epsilon on the audited data itself is selection. Judged by content,
  never by pair ids, and with a tolerance: a score table's question counts as the calibration's
  when most of its rows appear there with the same text and both probabilities within
  CONTENT_TOLERANCE (a 1e-12 change or a dropped row does not hide it); a model audit when the
  post-adaptation checkpoint has the same fingerprint.
* **Match** (`null_mismatches`): does a control (or a null calibration's run) stand on what the
  audit stands on? The null it gives depends on the base (checkpoint fingerprint; for score
  tables the pre scores of the shared texts within BASE_TOLERANCE), the generators and their
  budgets, k and the paraphrase texts; each difference is named.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from eraudit_core.method import RunRecord, null_threshold_fields
from eraudit_core.store import Store

# Two probabilities of the same text are the same content within this (float32 rescoring
# differs by about 2.5e-6 on the demo checkpoints, a real adaptation by far more).
CONTENT_TOLERANCE = 1e-5
# A question is the calibration's own when at least this share of its rows is found there.
CONTENT_SHARE = 0.5
# Two runs stand on one base when their pre scores of shared texts agree within this.
BASE_TOLERANCE = 1e-4
REWORDING_ROLES = ("search", "test")


def _digest(obj: Any) -> str:
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def content_overlap(audited: pd.DataFrame, stored: pd.DataFrame) -> int:
    """How many questions of `audited` are `stored`'s content: at least CONTENT_SHARE of their
    rows have a row in `stored` with the same text and both probabilities within
    CONTENT_TOLERANCE, whatever the pair ids."""
    if audited.empty or stored.empty:
        return 0
    a = audited[["pair_id", "text", "p_pre", "p_post"]].assign(text=lambda f: f["text"].astype(str))
    s = stored[["text", "p_pre", "p_post"]].assign(text=lambda f: f["text"].astype(str))
    m = a.reset_index().merge(s, on="text", how="left", suffixes=("", "_s"))
    same = ((m["p_pre"] - m["p_pre_s"]).abs() <= CONTENT_TOLERANCE) & (
        (m["p_post"] - m["p_post_s"]).abs() <= CONTENT_TOLERANCE
    )
    row_found = same.groupby(m["index"]).any()
    share = row_found.groupby(a.loc[row_found.index, "pair_id"].to_numpy()).mean()
    return int((share >= CONTENT_SHARE).sum())


@dataclass(frozen=True)
class AuditedContent:
    """What an audit about to run judges, for the selection and match checks: a score
    table's rows, or a model run's checkpoints (specs and any fingerprints known for them);
    `settings` are the audit's k, budgets and generators (AuditConfig keys)."""

    table: pd.DataFrame | None = None
    post_spec: str | None = None
    post_fingerprints: tuple[str, ...] = ()
    pre_spec: str | None = None
    pre_fingerprints: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)


def _fingerprints(store: Store, spec: str | None) -> tuple[str, ...]:
    known = store.checkpoints()
    if not spec or known.empty:
        return ()
    return tuple(str(f) for f in known.loc[known["name"] == spec, "fingerprint"])


def audited_model(
    store: Store,
    post_spec: str,
    pre_spec: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> AuditedContent:
    """A model audit's checkpoints: the fingerprints this store registered under their specs
    (the same weights registered under another spec share the fingerprint)."""
    return AuditedContent(
        post_spec=post_spec,
        post_fingerprints=_fingerprints(store, post_spec),
        pre_spec=pre_spec,
        pre_fingerprints=_fingerprints(store, pre_spec),
        settings=dict(settings or {}),
    )


def selection_overlap(store: Store, cal_run: str, audited: AuditedContent) -> int:
    """How many audited questions carry the calibration run's own content: the same texts
    and probabilities within a tolerance (score tables, `content_overlap`), or, for a model
    run, the number of its questions when the post-adaptation checkpoint is the same (by
    fingerprint)."""
    run = store.run(cal_run)
    if audited.table is not None:
        return content_overlap(audited.table, store.table_rows(cal_run))
    fp = str(run.get("post_fingerprint") or "")
    names = {str(run.get("post_name") or "")}
    known = store.checkpoints()
    if fp and not known.empty:
        names |= {str(n) for n in known.loc[known["fingerprint"] == fp, "name"]}
    same = (fp and fp in audited.post_fingerprints) or (audited.post_spec in names - {""})
    return int(run.get("n_pairs") or 0) if same else 0


def is_table_run(run: Mapping[str, Any]) -> bool:
    """Whether a stored run audited a score table (also when imported without its rows)."""
    return str(run.get("source") or "").startswith("table:") or str(
        run.get("pre_fingerprint") or ""
    ).startswith("table:")


def stored_rewordings(store: Store, run_id: str) -> pd.DataFrame:
    """Every rewording a run scored, one row a (question, text): columns pair_id, role
    (search or test), generator, text, p_pre, p_post. A table run's stored rows (all of the
    table, also rows the paper's procedure never reached), else its scored steps (stage 1 is
    search, stage 2 test)."""
    cols = ["pair_id", "role", "generator", "text", "p_pre", "p_post"]
    rows = store.table_rows(run_id)
    if not rows.empty:
        rows = rows[rows["role"].isin(REWORDING_ROLES)]
    else:
        steps = store.steps(run_id, with_prompts=False)
        if steps.empty:
            return pd.DataFrame(columns=cols)
        rows = steps.assign(role=steps["stage"].map({1: "search", 2: "test"}))
        rows = rows[rows["role"].notna() & rows["text"].notna()]
    out = rows[cols].assign(
        pair_id=rows["pair_id"].astype(str),
        generator=rows["generator"].fillna("").astype(str),
        text=rows["text"].astype(str),
        p_pre=rows["p_pre"].astype(float),
        p_post=rows["p_post"].astype(float),
    )
    return out.drop_duplicates(["pair_id", "text"]).reset_index(drop=True)


def _generator_sets(rows: pd.DataFrame) -> dict[str, list[str]]:
    return {
        role: sorted(set(rows.loc[rows["role"] == role, "generator"].fillna("").astype(str)))
        for role in REWORDING_ROLES
    }


def base_difference(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, Any] | None:
    """Two score tables' pre scores on the texts they share (matched by question and text):
    None when they agree within BASE_TOLERANCE, else how far apart and on how many texts."""
    key = ["pair_id", "text"]
    m = a[[*key, "p_pre"]].merge(b[[*key, "p_pre"]], on=key, suffixes=("_a", "_b"))
    if m.empty:
        return None
    gap = (m["p_pre_a"].astype(float) - m["p_pre_b"].astype(float)).abs()
    if float(gap.max()) <= BASE_TOLERANCE:
        return None
    return {
        "n_shared": int(len(m)),
        "n_differ": int((gap > BASE_TOLERANCE).sum()),
        "max_difference": float(gap.max()),
        "tolerance": BASE_TOLERANCE,
    }


def _paraphrase_difference(audit: pd.DataFrame, control: pd.DataFrame) -> dict[str, Any] | None:
    """On the questions both tables hold, the rewordings (role, generator, text) only one has."""
    cols = ["pair_id", "role", "generator", "text"]
    a = audit.loc[audit["role"].isin(REWORDING_ROLES), cols].astype(str)
    c = control.loc[control["role"].isin(REWORDING_ROLES), cols].astype(str)
    shared = set(a["pair_id"]) & set(c["pair_id"])
    a, c = a[a["pair_id"].isin(shared)], c[c["pair_id"].isin(shared)]
    m = a.merge(c, on=cols, how="outer", indicator=True)
    only_a = int((m["_merge"] == "left_only").sum())
    only_c = int((m["_merge"] == "right_only").sum())
    if not (only_a or only_c):
        return None
    return {"only_audit": only_a, "only_control": only_c, "n_shared_questions": len(shared)}


def null_mismatches(
    store: Store, control_run: str, audited: AuditedContent
) -> list[dict[str, Any]]:
    """Each way the control run does not stand on what the audit stands on: {"field",
    "audit", "control"} with field one of base, test_generators, search_generators,
    search_budget, test_budget, k, paraphrases. Empty when the control matches."""
    run = store.run(control_run)
    config = RunRecord.from_stored(run).config
    settings = dict(audited.settings)
    out: list[dict[str, Any]] = []
    if audited.table is not None:
        table = audited.table
        if not is_table_run(run):
            out.append({"field": "base", "audit": "a score table", "control": "a model run"})
            return out
        rows = store.table_rows(control_run)
        complete = not rows.empty  # an imported table run keeps only the steps it scored
        if not complete:
            rows = stored_rewordings(store, control_run)
        base = base_difference(table, rows)
        if base is not None:
            out.append({"field": "base", "audit": "pre scores of this table", "control": base})
        gens_a, gens_c = _generator_sets(table), _generator_sets(rows)
        if not complete:
            gens_c["test"] = sorted(config.test_generators or gens_c["test"])
            gens_c["search"] = gens_a["search"]  # unknown beyond what was scored
        for role in REWORDING_ROLES:
            if gens_a[role] != gens_c[role]:
                out.append(
                    {"field": f"{role}_generators", "audit": gens_a[role], "control": gens_c[role]}
                )
        paras = _paraphrase_difference(table, rows) if complete else None
        if paras is not None:
            out.append({"field": "paraphrases", "audit": paras, "control": None})
    else:
        fp = str(run.get("pre_fingerprint") or "")
        known = audited.pre_fingerprints
        differ = (
            (fp not in known) if known else (audited.pre_spec not in (None, run.get("pre_name")))
        )
        if differ:
            out.append(
                {
                    "field": "base",
                    "audit": f"{audited.pre_spec} {','.join(known)}".strip(),
                    "control": f"{run.get('pre_name')} {fp}".strip(),
                }
            )
        for role in REWORDING_ROLES:
            key = f"{role}_generators"
            a = sorted(settings.get(key) or [])
            c = sorted(getattr(config, key))
            if key in settings and a != c:
                out.append({"field": key, "audit": a, "control": c})
    for key in null_threshold_fields():
        value = getattr(config, key)
        if key in settings and value is not None and float(settings[key]) != float(value):
            out.append({"field": key, "audit": settings[key], "control": value})
    return out


def mismatch_sentence(control_run: str, mismatches: list[dict[str, Any]]) -> str:
    """'control run X does not match this audit: base (...); k 0.001 vs 0.01.'"""
    parts = []
    for d in mismatches:
        if d["field"] == "base":
            c = d["control"]
            detail = (
                f"pre scores of {c['n_differ']} of {c['n_shared']} shared texts differ by up to "
                f"{c['max_difference']:.3g} (tolerance {c['tolerance']:g})"
                if isinstance(c, dict)
                else f"audit {d['audit']} vs control {c}"
            )
            parts.append(f"base: {detail}")
        elif d["field"] == "paraphrases":
            a = d["audit"]
            parts.append(
                f"paraphrases: on {a['n_shared_questions']} shared questions {a['only_audit']} "
                f"rewordings only in the audit, {a['only_control']} only in the control"
            )
        else:
            parts.append(f"{d['field']}: audit {d['audit']} vs control {d['control']}")
    return (
        f"control run {control_run} does not stand on what this audit stands on ("
        + "; ".join(parts)
        + "): its null would not be this audit's"
    )
