"""Each run's label mass per checkpoint, from the log-probs stored with its scores (§3).

The label mass of a scored prompt is exp(l_A) + exp(l_B), the full-vocabulary probability of
the two labels where they were read; the score cache keeps the four label log-probs of every
query, so a run's label mass needs no model. Shown per checkpoint (median, minimum, prompts) by
the CLI's JSON, the report and the Question explorer: a run whose labels got little of the
model's probability was read at the wrong slot, and its p_true are letter priors.
"""

from __future__ import annotations

from typing import Any

from eraudit_core.audit._bundle import run_prompt_hashes
from eraudit_core.store import Store
from eraudit_core.verifier import scores_label_mass


def run_label_mass(store: Store, run_id: str) -> dict[str, dict[str, Any]]:
    """{"pre": {"median", "min", "n"}, "post": {...}} over the run's scored prompts (n counts
    prompts, two a query; runs from score tables have no log-probs: n = 0)."""
    run = store.run(run_id)
    hashes = run_prompt_hashes(store, run_id)
    out: dict[str, dict[str, Any]] = {}
    for side in ("pre", "post"):
        fingerprint = run.get(f"{side}_fingerprint") or ""
        scores = store.cached_scores(fingerprint, hashes) if fingerprint else {}
        out[side] = {"name": run.get(f"{side}_name"), **scores_label_mass(scores.values())}
    return out
