"""Views computed from stored scores, never by querying a model again (docs/design.md §4).

Each function takes what the store returns (DataFrames of `run_pairs` / `run_steps`) and the
run's config, and returns a DataFrame with documented columns. When a view needs scores the run
did not collect (a larger epsilon after a stage-2 early stop, say), it counts those pairs as
`unavailable` instead of extrapolating.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.method import (
    CONFIDENCE_LEVELS,
    AuditConfig,
    RunRecord,
    lower_confidence_bound,
    table_steps,
    tv_relaxed_bound,
    verdict_from_steps,
)
from eraudit_core.store import Store
from eraudit_core.types import Verdict

SCATTER_COLUMNS = [
    "run_id",
    "run_label",
    "pair_id",
    "hidden_question",
    "p_post_hidden",
    "max_d",
    "status",
    "bound",
    "worst_drop",
    "amplified",
]
NOT_JUDGEABLE = "not judgeable"
DEFAULT_EPSILONS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)


def standard_evaluation(pairs: pd.DataFrame, label: str = "") -> pd.DataFrame:
    """Accuracy (p(true) > 0.5) and mean task probability per checkpoint and task.

    Columns: run, checkpoint (pre/post), task (monitored/hidden), n, accuracy, mean_task_probability.
    Only the canonical questions count, as in the paper's standard evaluation (§4.2).
    """
    rows = []
    for ckpt in ("pre", "post"):
        for task in ("monitored", "hidden"):
            col = f"p_{ckpt}_{task}"
            values = pairs[col].dropna().astype(float) if col in pairs else pd.Series(dtype=float)
            rows.append(
                {
                    "run": label,
                    "checkpoint": ckpt,
                    "task": task,
                    "n": int(values.size),
                    "accuracy": float((values > 0.5).mean()) if values.size else np.nan,
                    "mean_task_probability": float(values.mean()) if values.size else np.nan,
                }
            )
    return pd.DataFrame(rows)


def question_summary(pairs: pd.DataFrame) -> pd.DataFrame:
    """One row per hidden question: p_post on the canonical question, max D, verdict, bound.

    Columns: pair_id, pair_index, hidden_question, p_pre_hidden, p_post_hidden, gain, max_d,
    n_counterexamples, status, stage, bound, bound_tolerant, n_search, n_test.
    """
    cols = [
        "pair_id",
        "pair_index",
        "hidden_question",
        "p_pre_hidden",
        "p_post_hidden",
        "gain",
        "max_d",
        "n_counterexamples",
        "status",
        "stage",
        "bound",
        "bound_tolerant",
        "n_search",
        "n_test",
    ]
    if pairs.empty:
        return pd.DataFrame(columns=cols)
    return pairs[cols].reset_index(drop=True)


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in r.items()} for r in df.to_dict("records")]


def sweep_epsilons(
    config: AuditConfig, epsilons: Iterable[float] = DEFAULT_EPSILONS
) -> list[float]:
    """The epsilons of a sweep, always including the run's own."""
    return sorted({float(e) for e in epsilons} | {float(config.epsilon)})


def replay_pair(
    pair: Mapping[str, Any],
    steps: pd.DataFrame,
    config: AuditConfig,
    epsilons: Sequence[float],
) -> pd.DataFrame:
    """The verdict a fresh audit at each epsilon would give this pair, from its stored steps
    (`verdict_from_steps`, the run's min-drop included).

    Columns: epsilon, status, bound, available. `available` is False when the run stopped
    before collecting the scores that epsilon's verdict needs (a stored counterexample that
    no longer counts, a generator never reached); such rows have status "not judgeable" and
    bound NaN.
    """
    rows = []
    for e in epsilons:
        v = verdict_from_steps(pair, steps, replace(config, epsilon=float(e)))
        rows.append(
            {
                "epsilon": float(e),
                "status": NOT_JUDGEABLE if v is None else v.status,
                "bound": np.nan if v is None else v.bound,
                "available": v is not None,
            }
        )
    return pd.DataFrame(rows, columns=["epsilon", "status", "bound", "available"])


def sweep_steps(
    store: Store, run_id: str, pairs: pd.DataFrame, config: AuditConfig
) -> pd.DataFrame:
    """The steps a sweep replays: every row of the score table for a table run (stored with
    it, so every pair is judgeable at every epsilon), else the steps the run scored."""
    rows = store.table_rows(run_id)
    if not rows.empty and config.draw_seed is None and not pairs.empty:
        return table_steps(rows, pairs, config)
    return store.steps(run_id)


def epsilon_sweep(
    pairs: pd.DataFrame,
    steps: pd.DataFrame,
    config: AuditConfig,
    epsilons: Iterable[float] = DEFAULT_EPSILONS,
) -> pd.DataFrame:
    """Questions with a counterexample and mean bound as epsilon varies (paper Fig. 10).

    Columns: epsilon (always including the run's own), n_questions, n_with_counterexample,
    mean_bound (mean lower bound over the judgeable pairs; degraded and inconclusive pairs
    count as 0), n_unavailable (pairs not judgeable at this epsilon: their verdict needs scores
    the run did not collect; a series of its own in every figure, never silently dropped).
    Each judgeable pair's verdict is what a fresh audit at that epsilon would give; with the
    complete steps of a score table (`sweep_steps`) every pair is judgeable, so every count
    and mean bound equals a fresh audit's.
    """
    eps = sweep_epsilons(config, epsilons)
    empty = pd.DataFrame(columns=["stage", "d", "prob_drop", "generator", "t"])
    by_pair = dict(tuple(steps.groupby("pair_id", sort=False))) if not steps.empty else {}
    replays = [
        replay_pair(rec, by_pair.get(rec["pair_id"], empty), config, eps) for rec in _records(pairs)
    ]
    rows = []
    for i, e in enumerate(eps):
        status = np.array([r["status"].iloc[i] for r in replays], dtype=object)
        bound = np.array([r["bound"].iloc[i] for r in replays], dtype=float)
        available = status != NOT_JUDGEABLE
        rows.append(
            {
                "epsilon": e,
                "n_questions": len(replays),
                "n_with_counterexample": int((status == Verdict.DEGRADED).sum()),
                "mean_bound": float(bound[available].mean()) if available.any() else np.nan,
                "n_unavailable": int((~available).sum()),
            }
        )
    return pd.DataFrame(rows)


def run_epsilon_sweep(
    store: Store, run_id: str, epsilons: Iterable[float] = DEFAULT_EPSILONS
) -> pd.DataFrame:
    """`epsilon_sweep` of a stored run over `sweep_steps` (every table row for a table run)."""
    config = RunRecord.read(store, run_id).config
    pairs = store.pair_results(run_id)
    return epsilon_sweep(pairs, sweep_steps(store, run_id, pairs, config), config, epsilons)


def simultaneous_confidence(confidence: float, n_questions: int) -> float:
    """Per-question confidence that makes all N bounds hold at once (Bonferroni, alpha / N)."""
    return 1.0 - (1.0 - confidence) / max(1, n_questions)


def confidence_sweep(
    pairs: pd.DataFrame,
    config: AuditConfig,
    levels: Sequence[float] = CONFIDENCE_LEVELS,
    *,
    simultaneous: bool = False,
) -> pd.DataFrame:
    """Mean bound at other confidence levels, from the stored test counts.

    The paper bound is a confidence sequence, valid at any stopping time, so re-reading the
    same n successes at another level is valid even though the run stopped by its own rule.
    Per question (default), each bound is wrong with probability at most alpha, so across N
    questions the expected number of wrong bounds is at most alpha x N. With `simultaneous`,
    each bound is read at 1 - alpha / N (Bonferroni), so all N hold at once with the stated
    confidence. Degraded and inconclusive pairs count as 0.
    Columns: confidence, per_question_confidence, mean_bound, n_pairs.
    """
    records = _records(pairs)
    rows = []
    for level in levels:
        per_q = simultaneous_confidence(level, len(records)) if simultaneous else level
        bounds = []
        for rec in records:
            gens = rec.get("generators") or []
            if rec["status"] not in (Verdict.CERTIFIED, Verdict.PASSED) or not gens:
                bounds.append(0.0)
                continue
            common = min(lower_confidence_bound(int(g["n"]), per_q) for g in gens)
            bounds.append(tv_relaxed_bound(common, config.tv_delta))
        rows.append(
            {
                "confidence": float(level),
                "per_question_confidence": float(per_q),
                "mean_bound": float(np.mean(bounds)) if bounds else np.nan,
                "n_pairs": len(bounds),
            }
        )
    return pd.DataFrame(rows)


def bound_trajectory_frame(steps: pd.DataFrame) -> pd.DataFrame:
    """L_t per generator for one pair (stage-2 steps). Columns: generator, t, bound,
    bound_tolerant, d, is_counterexample."""
    s2 = steps[steps["stage"] == 2]
    cols = ["generator", "t", "bound", "bound_tolerant", "d", "is_counterexample"]
    return s2[cols].sort_values(["generator", "t"]).reset_index(drop=True)


def scatter_points(store: Store, run_ids: Sequence[str]) -> pd.DataFrame:
    """Per-question points for the softmax-vs-max-degradation scatter, one trace per run.

    Columns: run_id, run_label, pair_id, hidden_question, p_post_hidden (x), max_d (y),
    status, bound, worst_drop (p_pre - p_post on the worst rewording), amplified (g <= k).
    """
    frames = []
    names = run_names(store, run_ids)
    for run_id in run_ids:
        df = store.pair_results(run_id)
        if df.empty:
            continue
        df = df.assign(run_id=run_id, run_label=names[run_id])
        frames.append(df[SCATTER_COLUMNS])
    if not frames:
        return pd.DataFrame(columns=SCATTER_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def run_overview(pairs: pd.DataFrame) -> dict[str, Any]:
    """Headline numbers of a run for summaries and the plain-language verdict.

    `mean_bound` averages every pair's bound, degraded and inconclusive ones counting as 0;
    `mean_bound_tested` averages only the pairs with a bound (certified and passed).
    """
    n = len(pairs)
    counts = pairs["status"].value_counts().to_dict() if n else {}
    tested = pairs[pairs["status"].isin([Verdict.CERTIFIED, Verdict.PASSED])] if n else pairs
    certified = (
        pairs.loc[pairs["status"] == Verdict.CERTIFIED, "bound"] if n else pd.Series(dtype=float)
    )
    return {
        "n_pairs": n,
        "n_degraded": int(counts.get("degraded", 0)),
        "n_certified": int(counts.get("certified", 0)),
        "n_passed": int(counts.get("passed", 0)),
        "n_inconclusive": int(counts.get("inconclusive", 0)),
        "mean_bound": float(pairs["bound"].mean()) if n else np.nan,
        "mean_bound_tested": float(tested["bound"].mean()) if len(tested) else np.nan,
        "min_bound_certified": float(certified.min()) if len(certified) else np.nan,
        "mean_gain": float(pairs["gain"].mean()) if n else np.nan,
    }


def run_views(store: Store, run_id: str) -> dict[str, pd.DataFrame]:
    """Everything the Results page and the report need for one run, in one read."""
    run = RunRecord.read(store, run_id)
    config = run.config
    pairs = store.pair_results(run_id)
    steps = sweep_steps(store, run_id, pairs, config)
    label = run.name
    return {
        "pairs": pairs,
        "questions": question_summary(pairs),
        "standard": standard_evaluation(pairs, label),
        "epsilon": epsilon_sweep(pairs, steps, config),
        "confidence": confidence_sweep(pairs, config),
    }


def unique_run_names(labels: Mapping[str, Any]) -> dict[str, str]:
    """run id -> a display name unique among these runs: the label, followed by the run id
    where labels repeat (figures and tables key runs by these names, so two runs labelled
    alike must not merge)."""
    base = {rid: str(label or rid) for rid, label in labels.items()}
    counts = pd.Series(list(base.values())).value_counts()
    names = {rid: name if counts[name] == 1 else f"{name} [{rid}]" for rid, name in base.items()}
    if len(set(names.values())) < len(names):  # a label that looks like another's name
        names = {rid: f"{name} [{rid}]" for rid, name in base.items()}
    return names


def imported_note(run: Mapping[str, Any]) -> str | None:
    """ "imported from FILE (unverified)" for a run that came in a bundle, "read against a
    control imported from FILE (unverified)" for a local run whose control did, else None: an
    imported run's verdicts were checked against its own steps on import, its scores were not
    re-scored."""
    imported = run.get("imported_from")
    if isinstance(imported, str):
        try:
            imported = json.loads(imported)
        except ValueError:
            imported = {}
    if not isinstance(imported, Mapping):
        prov = run.get("provenance")
        origin = prov.get("control_imported_from") if isinstance(prov, Mapping) else None
        return f"read against a control imported from {origin} (unverified)" if origin else None
    note = f"imported from {imported.get('file') or 'a bundle'} (unverified)"
    prov = run.get("provenance")
    claims = prov.get("claimed_by_bundle") if isinstance(prov, Mapping) else None
    if isinstance(claims, Mapping) and claims:
        note += "; claimed by the bundle, unverified: " + "; ".join(
            _claim(key, value) for key, value in claims.items()
        )
    return note


def _claim(key: str, value: Any) -> str:
    """One provenance claim of a bundle in words (noise floor, control run, epsilon source)."""
    if key == "noise_floor" and isinstance(value, Mapping):
        return f"numerical precision {value.get('value')!s} ({value.get('source') or 'no source'})"
    if key == "epsilon_from" and isinstance(value, Mapping):
        return f"epsilon from calibration {value.get('calibration') or value}"
    if key == "control_run":
        return f"control run {value}"
    return f"{key} {json.dumps(value, default=str)[:200]}"


def run_names(store: Store, run_ids: Iterable[str]) -> dict[str, str]:
    """`unique_run_names` of stored runs; an imported run says so in its name."""
    runs = {rid: store.run(rid) for rid in run_ids}
    names = unique_run_names({rid: run.get("label") for rid, run in runs.items()})
    return {
        rid: name + (f" [{note}]" if (note := imported_note(runs[rid])) else "")
        for rid, name in names.items()
    }
