"""A pair's verdict re-derived from its stored steps and a config (pure, no model, no store).

One function decides what a fresh audit with `config` would conclude from scores already
collected: `verdict_from_steps`. The epsilon sweep calls it at every epsilon, a bundle import
can call it to recompute what a bundle claims, and the tests hold it equal to the engine. It
feeds the stored steps to the very `PairAudit` the engine drives, so the counterexample rule
(D > epsilon, and drop > min-drop when the auditor set one), the stopping rules and the bounds
cannot drift apart from the engine's.

A fresh audit at another epsilon draws the same sequences (the draws are fixed by the run's
seed, or by a score table's order) and stops by the same rules; its verdict is known from the
stored steps only when every stop it reaches lies inside what was stored. Otherwise the pair is
not judgeable at that config (None), which views must count, never drop. A counterexample
inside any stored prefix decides the pair (degraded) whatever else is missing: the fresh audit
reaches it or an earlier one.

`table_steps` turns the rows of a score table a run audited into the complete step sequence a
fresh audit would score, so a table run's sweeps are exact at every epsilon.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from eraudit_core.method._config import AuditConfig
from eraudit_core.method._pair_audit import GeneratorTest, PairAudit, PairVerdict

STEP_FIELDS = ("pair_id", "stage", "generator", "t", "d", "prob_drop")


def _drops(rows: pd.DataFrame) -> np.ndarray:
    if "prob_drop" in rows and not rows["prob_drop"].isna().any():
        return rows["prob_drop"].to_numpy(dtype=float)
    return (rows["p_pre"].astype(float) - rows["p_post"].astype(float)).to_numpy()


def verdict_from_steps(
    pair: Mapping[str, Any],
    steps: pd.DataFrame,
    config: AuditConfig,
    tests_out: list[GeneratorTest] | None = None,
) -> PairVerdict | None:
    """The verdict and bounds a fresh audit with `config` would give this pair, or None when
    that needs scores the stored steps do not hold.

    `pair` needs `generators` (the run's test generators in order, each with `generator` and
    `available`, the pool size) and `stage`; `steps` this pair's steps with stage, generator,
    t, d and prob_drop (or p_pre / p_post). The pair's denominator is already inside d, so a
    config with another k is not supported here (k changes every D). When `tests_out` is a
    list, the generators' tests are appended to it (how many draws each consumed, its stop).
    """
    generators = list(pair.get("generators") or [])
    audit = PairAudit(config, [(g["generator"], int(g["available"])) for g in generators])
    if tests_out is not None:
        tests_out.extend(audit.tests)
    s1 = steps[steps["stage"] == 1]
    for d, drop in zip(s1["d"].to_numpy(dtype=float), _drops(s1), strict=True):
        audit.search(d, drop)
    if not generators and int(pair.get("stage") or 0) == 1 and not audit.search_counterexamples:
        return None  # stored before the run's generators were recorded: they are unknown
    audit.end_search()
    s2 = steps[steps["stage"] == 2]
    draws: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    while (test := audit.current) is not None:
        if test.generator not in draws:
            rows = s2[s2["generator"] == test.generator].sort_values("t")
            draws[test.generator] = (rows["d"].to_numpy(dtype=float), _drops(rows))
        d, drop = draws[test.generator]
        if test.n >= d.size:
            audit.unscored_draw()  # the fresh audit needs a draw the run did not collect
        else:
            audit.test(d[test.n], drop[test.n])
    return audit.known_verdict()


def table_steps(rows: pd.DataFrame, pairs: pd.DataFrame, config: AuditConfig) -> pd.DataFrame:
    """Every step a fresh audit of a score table could score: each pair's search rows (in idx
    order, up to the search budget) and each generator's test rows in the table's order, with
    D from the pair's stored denominator. Columns: STEP_FIELDS plus p_pre, p_post, text."""
    den = dict(zip(pairs["pair_id"], pairs["denominator"].astype(float), strict=True))
    frames = []
    for pid, group in rows.groupby("pair_id", sort=False):
        if pid not in den:
            continue
        search = group[group["role"] == "search"].sort_values("idx", kind="stable")
        search = search.head(config.search_budget)
        parts = [search.assign(stage=1, t=range(1, len(search) + 1))]
        test = group[group["role"] == "test"]
        for _, g_rows in test.groupby("generator", sort=False):
            g_rows = g_rows.sort_values("idx", kind="stable")
            parts.append(g_rows.assign(stage=2, t=range(1, len(g_rows) + 1)))
        frame = pd.concat(parts, ignore_index=True)
        frame["prob_drop"] = frame["p_pre"].astype(float) - frame["p_post"].astype(float)
        frame["d"] = frame["prob_drop"] / den[pid]
        frames.append(frame)
    cols = [*STEP_FIELDS, "p_pre", "p_post", "text"]
    if not frames:
        return pd.DataFrame(columns=cols)
    return pd.concat(frames, ignore_index=True)[cols]
