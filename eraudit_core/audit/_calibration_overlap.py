"""The selection check: does a calibration's run hold the content an audit is about to judge?

Calibrating epsilon on the audited data itself is selection. It is judged by content, never by
pair ids: per question, a digest of a score table's texts and probabilities (the same scores
under renamed ids still match), or, for a model audit, the post-adaptation checkpoint's
fingerprint. Kept apart from the two calibration modes because it is asked when a calibration
is used (`epsilon_from` in `_calibration.py`), not when one is made.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from eraudit_core.store import Store


def _digest(obj: Any) -> str:
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def table_signatures(rows: pd.DataFrame) -> set[str]:
    """Per question, a digest of its rows' content (role, generator, text, both
    probabilities), without its pair id or idx: the same scores under renamed ids match."""
    out = set()
    for _, g in rows.groupby("pair_id", sort=False):
        content = sorted(
            zip(
                g["role"].astype(str),
                g["generator"].fillna("").astype(str),
                g["text"].fillna("").astype(str),
                g["p_pre"].astype(float).tolist(),
                g["p_post"].astype(float).tolist(),
                strict=True,
            )
        )
        out.add(_digest(content))
    return out


@dataclass(frozen=True)
class AuditedContent:
    """What an audit about to run judges, for the selection check: a score table's rows, or
    a model run's post-adaptation checkpoint (its spec and any fingerprint known for it)."""

    table: pd.DataFrame | None = None
    post_spec: str | None = None
    post_fingerprints: tuple[str, ...] = ()


def audited_model(store: Store, post_spec: str) -> AuditedContent:
    """A model audit's post checkpoint: the fingerprints this store registered under its
    spec (the same weights registered under another spec share the fingerprint)."""
    known = store.checkpoints()
    fps: tuple[str, ...] = ()
    if not known.empty:
        fps = tuple(str(f) for f in known.loc[known["name"] == post_spec, "fingerprint"])
    return AuditedContent(post_spec=post_spec, post_fingerprints=fps)


def selection_overlap(store: Store, cal_run: str, audited: AuditedContent) -> int:
    """How many audited questions carry the calibration run's own content: same texts and
    probabilities (score tables), or, for a model run, the number of its questions when the
    post-adaptation checkpoint is the same (by fingerprint)."""
    run = store.run(cal_run)
    if audited.table is not None:
        rows = store.table_rows(cal_run)
        if rows.empty:
            return 0
        return len(table_signatures(audited.table) & table_signatures(rows))
    fp = str(run.get("post_fingerprint") or "")
    names = {str(run.get("post_name") or "")}
    known = store.checkpoints()
    if fp and not known.empty:
        names |= {str(n) for n in known.loc[known["fingerprint"] == fp, "name"]}
    same = (fp and fp in audited.post_fingerprints) or (audited.post_spec in names - {""})
    return int(run.get("n_pairs") or 0) if same else 0
