"""Null mode (for honest arms and controls): epsilon from a control run's per-question maxima
of D.

Its own module because the threshold is a statistic over questions, not over rewordings: each
question's largest D among the paraphrases an audit at the control's budgets would score, then
the `level` quantile of those maxima (or, with `firm`, the split-conformal rank). It depends on
k and the budgets, which are stored with it so that `epsilon_from` can refuse an audit at other
settings (`_calibration.py`, docs/null-reading.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from eraudit_core.errors import InputError
from eraudit_core.method import RunRecord, table_steps
from eraudit_core.null._calibration_records import (
    DEFAULT_NULL_LEVEL,
    NULL_KEY,
    NullCalibration,
    _check_source,
    _check_unique,
    check_name,
    source_provenance,
)
from eraudit_core.store import Store


def question_maxima(store: Store, run_id: str) -> tuple[pd.Series, int, list[str]]:
    """Each question's largest D over the paraphrases an audit at the run's budgets would
    score, indexed by pair id; with how many of those paraphrases the run never scored and
    warnings naming them.

    A score-table run keeps every row of its table, so every search row (up to the search
    budget, in idx order) and the first `test_budget` rows of each test generator count. A
    model run counts what it scored in its seeded draw order: a generator stopped early (a
    counterexample, the target) leaves paraphrases unscored, and they are counted and named.
    """
    config = RunRecord.read(store, run_id).config
    pairs = store.pair_results(run_id)
    if pairs.empty:
        raise InputError(f"run {run_id}: no finished question to calibrate epsilon on")
    rows = store.table_rows(run_id)
    unscored = 0
    warnings: list[str] = []
    if not rows.empty and config.draw_seed is None:
        steps = table_steps(rows, pairs, config)
        gens = set(config.test_generators) if config.test_generators else None
        keep = (steps["stage"] == 1) | (
            (steps["stage"] == 2)
            & (steps["t"] <= config.test_budget)
            & (steps["generator"].isin(gens) if gens is not None else True)
        )
        steps = steps[keep]
    else:
        steps = store.steps(run_id, with_prompts=False)
        short: list[str] = []
        for rec in pairs.to_dict("records"):
            for g in rec.get("generators") or []:
                missing = max(0, min(int(g["available"]), config.test_budget) - int(g["n"]))
                if missing:
                    unscored += missing
                    short.append(f"{rec['pair_id']}/{g['generator']} ({missing})")
        if unscored:
            warnings.append(
                f"run {run_id}: {unscored} test paraphrases an audit at its budgets would draw "
                f"were never scored (the run stopped before them): {', '.join(short[:10])}"
                + (" ..." if len(short) > 10 else "")
                + "; the maxima cover what was scored (run the control with "
                "--continue-after-counterexample --no-stop-at-target to score them all)"
            )
    if steps.empty:
        raise InputError(f"run {run_id}: no scored rewording to calibrate epsilon on")
    maxima = steps.groupby("pair_id", sort=False)["d"].max().astype(float)
    no_rows = sorted(set(pairs["pair_id"]) - set(maxima.index))
    if no_rows:
        warnings.append(
            f"run {run_id}: {len(no_rows)} question(s) have no scored rewording and are left "
            f"out ({', '.join(map(str, no_rows[:10]))})"
        )
    return maxima, unscored, warnings


def null_threshold(maxima: Iterable[float], level: float, *, firm: bool = False) -> float:
    """The `level` quantile of the control maxima (numpy's linear interpolation), or with
    `firm` the ceil((n + 1) * level)-th smallest of the n maxima: then an exchangeable arm's
    question exceeds it with probability at most 1 - level (split-conformal rank rule)."""
    x = np.sort(np.asarray(list(maxima), dtype=float))
    if x.size == 0:
        raise InputError("no control question to take a null threshold from")
    if not firm:
        return float(np.quantile(x, level))
    rank = math.ceil((x.size + 1) * level)
    if rank > x.size:
        raise InputError(
            f"a firm threshold at level {level:g} needs at least "
            f"{math.ceil(level / (1 - level))} control questions, the run has {x.size}"
        )
    return float(x[rank - 1])


def calibrate_null(
    store: Store,
    run_id: str,
    level: float = DEFAULT_NULL_LEVEL,
    *,
    name: str | None = None,
    firm: bool = False,
    save: bool = True,
    force: bool = False,
    allow_unverified: bool = False,
) -> NullCalibration:
    """Null mode: epsilon = the `level` quantile of the control run's per-question maxima of
    D (`question_maxima`); refused when that quantile is <= 0 (an epsilon that would make
    every non-positive D a counterexample is not a threshold)."""
    if not (isinstance(level, int | float) and math.isfinite(level) and 0.0 < level < 1.0):
        raise InputError(f"--level must lie strictly between 0 and 1 (e.g. 0.95), got {level!r}")

    run = store.run(run_id)
    name = check_name(name or run_id)
    if save:
        _check_unique(store, name, force)
    source = source_provenance(store, run_id)
    warnings = _check_source(source, allow_unverified)
    config = RunRecord.from_stored(run).config
    maxima, unscored, more = question_maxima(store, run_id)
    warnings += more
    eps = null_threshold(maxima.to_numpy(), float(level), firm=firm)
    if not eps > 0:
        raise InputError(
            f"run {run_id}: the {level:g} quantile of its questions' largest D is {eps:.6g} "
            "<= 0, so it gives no usable epsilon (epsilon must be > 0 here: the control's "
            "paraphrases barely moved); state epsilon yourself"
        )
    cal = NullCalibration(
        name=name,
        run_id=run_id,
        level=float(level),
        epsilon=eps,
        n_questions=int(maxima.size),
        search_budget=config.search_budget,
        test_budget=config.test_budget,
        k=config.k,
        firm=firm,
        n_unscored=unscored,
        warnings=warnings,
        source=source,
    )
    if save:
        store.add_calibration(
            name,
            run_id,
            cal.n_questions,
            {NULL_KEY: eps},
            {
                "mode": "null",
                "level": cal.level,
                "firm": firm,
                "k": cal.k,
                "search_budget": cal.search_budget,
                "test_budget": cal.test_budget,
                "n_unscored": unscored,
                "source": "eraudit calibrate-epsilon --null",
                "source_run": source,
            },
        )
    return cal
