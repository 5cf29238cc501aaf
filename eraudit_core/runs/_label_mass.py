"""Each run's label mass per checkpoint, from the log-probs stored with its scores (§3).

The label mass of a scored prompt is exp(l_A) + exp(l_B), the full-vocabulary probability of
the two labels where they were read; the score cache keeps the four label log-probs of every
query, so a run's label mass needs no model. Shown per checkpoint (median, minimum, prompts) by
the CLI's JSON, the report and the Question explorer: a run whose labels got little of the
model's probability was read at the wrong slot, and its p_true are letter priors.
"""

from __future__ import annotations

import json
from typing import Any

from eraudit_core.runs._table_scores import table_query
from eraudit_core.store import Store, import_origin
from eraudit_core.types import Query
from eraudit_core.verifier import scores_label_mass


def run_prompt_hashes(store: Store, run_id: str) -> list[str]:
    """Prompt hashes of every query the run may have asked: its canonical questions, its
    scored paraphrases, and the stored paraphrases of its pairs (a batch can score a few
    beyond a stage-2 counterexample). Model runs ask with the pair's options (`Query`),
    score-table runs with the table's option slots (`table_query`), as the engine did.
    """
    run = store.run(run_id)
    results = store.pair_results(run_id).to_dict("records")
    steps = store.steps(run_id)
    texts: list[tuple[str, str]] = list(
        zip(steps.get("pair_id", []), steps.get("text", []), strict=True)
    )
    try:
        source = json.loads(run["source"] or "")
    except (TypeError, ValueError):
        source = None
    started = set(source.get("pair_ids") or []) if isinstance(source, dict) else set()
    mine = {str(r["pair_id"]) for r in results} | started | {pid for pid, _ in texts}
    pairs = {p.pair_id: p for p in store.pairs(run["benchmark_id"])} if run["benchmark_id"] else {}
    imported = run.get("imported_from")
    origin = import_origin(imported, run_id) if isinstance(imported, dict) else None
    if pairs:
        texts += [
            (p.pair_id, p.text)
            for p in store.paraphrases(run["benchmark_id"], origin=origin)
            if p.pair_id in mine
        ]
    queries: list[Query] = []
    if isinstance(source, dict) and source.get("kind") == "models":
        for pid in mine & set(pairs):
            m, h = pairs[pid].monitored, pairs[pid].hidden
            queries.append(Query(pid, m.question, m.true_option, m.false_option))
            queries.append(Query(pid, h.question, h.true_option, h.false_option))
        queries += [
            Query(pid, text, pairs[pid].hidden.true_option, pairs[pid].hidden.false_option)
            for pid, text in texts
            if pid in pairs
        ]
    else:
        for r in results:
            pid = str(r["pair_id"])
            queries.append(table_query(pid, str(r["monitored_question"]), "monitored"))
            queries.append(table_query(pid, str(r["hidden_question"]), "hidden"))
        queries += [table_query(pid, text, "test") for pid, text in texts]
    return sorted({q.prompt_hash for q in queries})


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
