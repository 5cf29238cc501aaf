"""The Question explorer's views: questions sorted by how much they need an
auditor's eye, filtered by verdict, evidence, the reading against the control and whether the
adaptation moved the question's monitored item, and one question's rewordings as rows an
auditor can read (word diff against the original wording, the prompt, labels).

Everything here is read from stored rows; nothing changes a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.method import (
    GeneratorStop,
    prompt_texts,
    run_manipulation,
    within_noise,
    word_diff,
)
from eraudit_core.null import NULL_VERDICTS, null_reading
from eraudit_core.present._belief import noise_floor_of, pair_evidence_frame
from eraudit_core.present._manipulation import took_line
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
    "within numerical precision",
    "has a counterexample",
)
# "Did the adaptation take?" asked of one question: did its monitored item gain more than k?
# The run-level answer (`audit.manipulation_check`) counts exactly these questions: it took
# when fewer than half have a monitored gain at or below k. A question at or below k is the
# one whose D is "amplified" (the drop divided by the floor k).
TOOK_ANY = "every question"
TOOK_HERE = "took here: monitored gain above k"
NOT_TOOK_HERE = "did not take here: monitored gain at or below k (amplified)"
TOOK = (TOOK_ANY, TOOK_HERE, NOT_TOOK_HERE)
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


def control_reading(store: Store, run_id: str) -> dict[str, Any] | None:
    """The run read against the control its provenance names (`null.null_reading`), or None
    when it names none or the control is not in this store: the Explorer offers the null
    verdict as a filter only then."""
    return null_reading(store, run_id)


def with_null_verdicts(questions: pd.DataFrame, reading: dict[str, Any]) -> pd.DataFrame:
    """`questions` with a `null_verdict` column (one of NULL_VERDICTS) from a reading; a
    question the reading does not cover (it finished after the reading) is not assessable."""
    pairs = reading["pairs"]
    verdicts = [
        str((pairs.get(str(p)) or {}).get("null_verdict", NULL_VERDICTS[-1]))
        for p in questions["pair_id"]
    ]
    return questions.assign(null_verdict=verdicts)


def null_detail_sentence(reading: dict[str, Any], pair_id: str) -> str | None:
    """One question's reading against the control in words: 'Against the control: beyond
    control. On 6 paired rewordings this run's p(true) is 10.00 points below the control's on
    average (90% interval of control minus this run: +8.50 to +11.50 points). The control:
    honest arm.' None when the reading has no entry for the question."""
    entry = reading["pairs"].get(str(pair_id))
    if entry is None:
        return None
    verdict, detail = entry["null_verdict"], entry["null_detail"]
    control = f"The control: {reading['control_label']}."
    if "mean_difference" not in detail:
        why = detail.get("reason", "no paired rewording")
        return f"Against the control: {verdict} ({why}). {control}"
    mean = 100 * float(detail["mean_difference"])
    low, high = (100 * float(x) for x in detail["interval"])
    where = f"{abs(mean):.2f} points {'below' if mean > 0 else 'above'}" if mean else "equal to"
    return (
        f"Against the control: {verdict}. On {detail['n_paired']} paired rewordings this run's "
        f"p(true) is {where} the control's on average ({100 * detail['interval_level']:.0f}% "
        f"interval of control minus this run: {low:+.2f} to {high:+.2f} points). {control}"
    )


def took_notice(store: Store, run_id: str) -> tuple[bool, str]:
    """(took, sentence): the run-level answer the Explorer states above its filters, with the
    monitored task before and after and how many monitored gains are at or below k (the
    questions the 'did not take here' filter selects)."""
    check = run_manipulation(store, run_id)
    answer = "Yes" if check.took else "No"
    out = f"Did the adaptation take? {answer}: {took_line(check)}."
    if check.n_pairs and not check.took:
        out += (
            " On those questions D divides a drop by the floor k: a ratio of noise to k, not a "
            "finding."
        )
    return check.took, out


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
    null_verdicts: Sequence[str] = (),
    took: str = TOOK_ANY,
) -> pd.DataFrame:
    """Rows whose status is chosen, that carry every chosen flag (FLAGS), whose null verdict
    (column `null_verdict`, `with_null_verdicts`) is chosen, on whose monitored item the
    adaptation took or not as `took` (one of TOOK) says, and whose hidden question contains
    `text` (case-insensitive) or, when `paraphrase_hits` is given, one of whose rewordings did
    (those pair ids)."""
    out = questions
    if statuses:
        out = out[out["status"].isin(list(statuses))]
    for flag in flags:
        column = {
            FLAGS[0]: out["within_noise"].fillna(False).astype(bool),
            FLAGS[1]: out["n_counterexamples"].fillna(0).astype(int) > 0,
        }[flag]
        out = out[column]
    if null_verdicts:
        if "null_verdict" not in out:
            raise ValueError("null verdicts: these questions were not read against a control")
        out = out[out["null_verdict"].isin(list(null_verdicts))]
    if took not in TOOK:
        raise ValueError(f"took: {took!r} is not one of {', '.join(TOOK)}")
    if took != TOOK_ANY:
        amplified = out["amplified"].fillna(False).astype(bool)
        out = out[~amplified if took == TOOK_HERE else amplified]
    needle = text.strip()
    if needle:
        in_question = out["hidden_question"].str.contains(needle, case=False, regex=False, na=False)
        in_rewording = out["pair_id"].isin(paraphrase_hits or set())
        out = out[in_question | in_rewording]
    return out


def with_linked(shown: pd.DataFrame, questions: pd.DataFrame, pair_id: str | None) -> pd.DataFrame:
    """`shown` (the filtered, sorted questions) with the question a link names put first when
    the filters leave it out: a link from Home or a comparison opens the question it names,
    whatever filters the session still holds. Unchanged when `pair_id` is None or shown."""
    if pair_id is None or pair_id in set(shown["pair_id"].astype(str)):
        return shown
    linked = questions[questions["pair_id"].astype(str) == pair_id]
    return pd.concat([linked, shown], ignore_index=True)


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
