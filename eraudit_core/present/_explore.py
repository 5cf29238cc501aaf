"""The Question explorer's views: questions sorted by how much they need an
auditor's eye, filtered by verdict and evidence, and one question's rewordings as rows an
auditor can read (word diff against the original wording, the prompt, labels).

Everything here is read from stored rows; nothing changes a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.audit import GeneratorStop, prompt_texts, within_noise, word_diff
from eraudit_core.present._belief import noise_floor_of, pair_evidence_frame
from eraudit_core.present._views import question_summary
from eraudit_core.store import Store

# Severity: a counterexample first, then a question nothing was learned about, then a pass,
# then a certificate (its bound reached p*).
SEVERITY = {"degraded": 0, "inconclusive": 1, "passed": 2, "certified": 3}
SORTS = (
    "most severe first",
    "largest D",
    "largest drop",
    "lowest bound",
    "benchmark order",
)
FLAGS = (
    "amplified (g <= k)",
    "within numerical precision",
    "has a counterexample",
    "not amplified",
)
# A drop this small is float rounding, not a change the model made (float32 carries about 7
# significant digits); with a measured numerical precision, the floor is the limit.
PRECISION = 1e-6
NOT_RUN = GeneratorStop.NOT_RUN  # a generator the pair never reached


def explorer_questions(store: Store, run_id: str) -> pd.DataFrame:
    """Every finished question of a run with its evidence: question_summary's columns plus
    worst_drop, amplified, within_noise and worst_text."""
    questions = question_summary(store.pair_results(run_id))
    if questions.empty:
        return questions.assign(worst_drop=[], amplified=[], within_noise=[], worst_text=[])
    ev = pair_evidence_frame(store, run_id)[
        ["pair_id", "worst_drop", "amplified", "within_noise", "worst_text"]
    ]
    return questions.merge(ev, on="pair_id", how="left")


def moved_drop(questions: pd.DataFrame) -> pd.Series:
    """The drop in p(true) on each question's worst rewording where it is beyond the numerical
    precision (larger than PRECISION and not within the numerical precision), else 0."""
    drop = questions["worst_drop"].astype(float).fillna(0.0)
    noise = questions["within_noise"].fillna(False).astype(bool)
    return drop.where((drop > PRECISION) & ~noise, 0.0)


def sort_questions(questions: pd.DataFrame, how: str) -> pd.DataFrame:
    """Questions in the order `how` (one of SORTS) names; ties keep benchmark order.

    "most severe first" ranks by what moved: the drop in p(true) on the worst rewording,
    beyond the numerical precision (`moved_drop`), largest first. Amplified questions (gain
    <= k, whose D is the drop divided by the k floor) form their own group after the others,
    ranked the same way. Ties (no drop beyond precision) go degraded, inconclusive, passed,
    certified, then by lowest bound.
    """
    if how not in SORTS:
        raise ValueError(f"sort: {how!r} is not one of {', '.join(SORTS)}")
    q = questions.assign(
        _amp=questions["amplified"].fillna(False).astype(bool).astype(int),
        _moved=-moved_drop(questions),
        _sev=questions["status"].map(SEVERITY).fillna(len(SEVERITY)),
        _d=-questions["max_d"].astype(float).fillna(-np.inf),
        _drop=-questions["worst_drop"].astype(float).fillna(-np.inf),
        _bound=questions["bound"].astype(float).fillna(np.inf),
        _index=questions["pair_index"],
    )
    keys = {
        "most severe first": ["_amp", "_moved", "_sev", "_bound", "_index"],
        "largest D": ["_d", "_index"],
        "largest drop": ["_drop", "_index"],
        "lowest bound": ["_bound", "_index"],
        "benchmark order": ["_index"],
    }[how]
    out = q.sort_values(keys, kind="stable")
    return out.drop(columns=[c for c in out.columns if c.startswith("_")]).reset_index(drop=True)


def filter_questions(
    questions: pd.DataFrame,
    *,
    text: str = "",
    statuses: Sequence[str] = (),
    flags: Sequence[str] = (),
    paraphrase_hits: set[str] | None = None,
) -> pd.DataFrame:
    """Rows whose status is chosen, that carry every chosen flag (FLAGS), and whose hidden
    question contains `text` (case-insensitive) or, when `paraphrase_hits` is given, one of
    whose rewordings did (those pair ids)."""
    out = questions
    if statuses:
        out = out[out["status"].isin(list(statuses))]
    for flag in flags:
        column = {
            FLAGS[0]: out["amplified"].fillna(False).astype(bool),
            FLAGS[1]: out["within_noise"].fillna(False).astype(bool),
            FLAGS[2]: out["n_counterexamples"].fillna(0).astype(int) > 0,
            FLAGS[3]: ~out["amplified"].fillna(False).astype(bool),
        }[flag]
        out = out[column]
    needle = text.strip()
    if needle:
        in_question = out["hidden_question"].str.contains(needle, case=False, regex=False, na=False)
        in_rewording = out["pair_id"].isin(paraphrase_hits or set())
        out = out[in_question | in_rewording]
    return out


def paraphrase_matches(steps: pd.DataFrame, text: str) -> set[str]:
    """The pair ids with a scored rewording containing `text` (case-insensitive)."""
    needle = text.strip()
    if not needle or steps.empty:
        return set()
    hit = steps["text"].astype(str).str.contains(needle, case=False, regex=False, na=False)
    return set(steps.loc[hit, "pair_id"].astype(str))


def rewording_rows(store: Store, run_id: str, pair_id: str, original: str) -> list[dict[str, Any]]:
    """One record per scored rewording of a question, in the order the audit scored them:
    stage, generator, t, text, diff (`word_diff` against `original`), p_pre, p_post, drop,
    d, counterexample, within_noise, bound (None where the step recorded none), prompt (the
    two stored prompt texts or None) and labels (each "label: note (author, when)")."""
    run = store.run(run_id)
    floor = noise_floor_of(run)
    steps = store.steps(run_id, pair_id)
    labels = store.paraphrase_labels(run_id, pair_id)
    out = []
    for r in steps.to_dict("records"):
        drop = float(r["p_pre"]) - float(r["p_post"])
        mine = labels[
            (labels["stage"] == r["stage"])
            & (labels["generator"] == r["generator"])
            & (labels["t"] == r["t"])
        ]
        bound = r.get("bound")
        out.append(
            {
                "stage": int(r["stage"]),
                "generator": str(r["generator"]),
                "t": int(r["t"]),
                "text": str(r["text"] or ""),
                "diff": word_diff(original, str(r["text"] or "")),
                "p_pre": float(r["p_pre"]),
                "p_post": float(r["p_post"]),
                "drop": drop,
                "d": float(r["d"]),
                "counterexample": bool(r["is_counterexample"]),
                "within_noise": within_noise(drop, floor),
                "bound": None if bound is None or bound != bound else float(bound),
                "prompt": prompt_texts(r.get("prompt")),
                "labels": [
                    f"{lab['label']}{': ' + lab['note'] if lab['note'] else ''} "
                    f"({lab['author']}, {str(lab['created_at'])[:16]})"
                    for lab in mine.to_dict("records")
                ],
            }
        )
    return out


def generator_rows(generators: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The per-generator table of a question, as text: a generator the pair never reached
    reads "not run" in every measured column (its bound 0 is not a measured zero)."""

    def cell(g: dict[str, Any], key: str) -> str:
        if not int(g.get("n") or 0):
            return NOT_RUN
        value = g.get(key)
        if value is None or (isinstance(value, float) and np.isnan(value)):
            return "n/a"
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    return pd.DataFrame(
        [
            {
                "generator": g["generator"],
                "pool size M": str(g["available"]),
                "tested": str(g["n"]) if int(g.get("n") or 0) else NOT_RUN,
                "counterexamples": cell(g, "n_counterexamples"),
                "stopped because": str(g.get("stop") or ""),
                "paper bound L_t": cell(g, "bound"),
                "failure-tolerant (beyond the paper)": cell(g, "bound_tolerant"),
            }
            for g in generators
        ],
        columns=[
            "generator",
            "pool size M",
            "tested",
            "counterexamples",
            "stopped because",
            "paper bound L_t",
            "failure-tolerant (beyond the paper)",
        ],
    )
